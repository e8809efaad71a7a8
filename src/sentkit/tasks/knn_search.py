"""Exact cosine k-nearest-neighbour search with FAISS (IndexFlatIP over L2-normalised float32 rows)."""

from __future__ import annotations

import numpy as np


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as a C-contiguous float32 copy (zero rows stay zero)."""
    x = np.array(vectors, dtype=np.float32, order="C", copy=True)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-d array (n, dim), got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)  # (n, 1)
    x /= np.maximum(norms, 1e-12)
    return x


def cosine_knn(queries: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k keys most cosine-similar to each query: (sims (n, k), indices (n, k)), best first."""
    try:
        import faiss
    except ImportError as err:  # pragma: no cover - faiss-cpu is a core dependency
        raise ImportError("nearest-neighbour search needs faiss: pip install faiss-cpu") from err
    q, kv = l2_normalize(queries), l2_normalize(keys)
    if q.shape[1] != kv.shape[1]:
        raise ValueError(f"queries have dim {q.shape[1]}, keys have dim {kv.shape[1]}")
    k = min(k, kv.shape[0])
    index = faiss.IndexFlatIP(kv.shape[1])
    index.add(kv)
    sims, idx = index.search(q, k)  # (n, k) each
    return sims, idx
