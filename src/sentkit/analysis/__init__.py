"""Analyses of trained encoders beyond benchmark scores (JCSE sec. 4.3's relevant content words)."""
