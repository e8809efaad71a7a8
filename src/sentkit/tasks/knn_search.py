"""Exact cosine k-nearest-neighbour search with FAISS (IndexFlatIP over L2-normalised float32 rows)."""

from __future__ import annotations

import numpy as np

from sentkit.tasks.vectors import l2_normalize


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
