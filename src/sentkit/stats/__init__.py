"""Uncertainty of evaluation scores: per-item values (items.py), bootstrap intervals and paired
differences over them (bootstrap.py), and comparisons over several training seeds (seeds.py)."""
