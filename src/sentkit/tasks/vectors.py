"""The two vector operations tasks share: L2 normalisation and row-wise cosine."""

from __future__ import annotations

import numpy as np

EPS = 1e-12  # a zero vector stays zero instead of dividing by 0


def l2_normalize(vectors: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Rows scaled to unit length as a C-contiguous copy of `dtype` (zero rows stay zero): (n, d) -> (n, d)."""
    x = np.array(vectors, dtype=dtype, order="C", copy=True)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array (n, dim), got shape {x.shape}")
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), EPS)  # (n, d) / (n, 1)
    return x


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of (n, d) arrays in float64; a zero vector scores 0, as SentEval's nan_to_num does."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)  # (n,)
    dots = np.einsum("nd,nd->n", a, b)  # (n,)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
