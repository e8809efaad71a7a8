"""Uncertainty of evaluation scores: per-item values (items.py), bootstrap intervals and paired
differences over them (bootstrap.py), comparisons over several training seeds (seeds.py), the correction
for many comparisons (multiplicity.py) and how often a verdict fires with no effect (null_rate.py)."""
