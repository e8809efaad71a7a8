"""Cosine k-NN over vectors too large for one array: exact per-block search merged, or one IVF-PQ index.

Exact ("flat"): each block of keys (a shard) gets its own inner-product index; every query's top k from
each block are merged into its running top k. The k best over all blocks are among the union of each
block's k best, so the merge returns exactly the global top k (test: equal to one global search).

Approximate ("ivfpq", above `flat_max` keys): one IVF-PQ index (inverted lists over a k-means coarse
quantizer, product-quantized residuals) trained on a sample of the keys, holding every key; it returns
`refine` x k candidates per query, which are re-scored with the exact cosine and cut to the best k, so
margins are computed from exact similarities. Queries left with fewer than k candidates (too few keys in
the probed lists) are searched exactly.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from sentkit.errors import InvalidArgument

FLAT_MAX = 250_000  # keys searched exactly up to this many (a 2-core CPU does 250k x 250k x 384 in minutes)
IVF_MIN_KEYS = 1000  # fewer keys cannot train 256 8-bit PQ centroids per sub-quantizer meaningfully
INDEX_KINDS = ("auto", "flat", "ivfpq")


@dataclass(frozen=True)
class IndexConfig:
    """How one side's keys are indexed; `None` fields are derived from the key count and dim."""

    kind: str = "auto"
    flat_max: int = FLAT_MAX
    nlist: int | None = None  # inverted lists: about 4 sqrt(n), a power of two
    pq_m: int | None = None  # PQ sub-quantizers of 8 bits: dim/8, 8 dims each (must divide dim)
    nprobe: int = 32
    train_size: int | None = None  # keys sampled for training: 50 per list, at least 20k
    refine: int = 4  # candidates fetched per wanted neighbour, re-scored exactly
    seed: int = 0
    query_block: int = (
        4096  # queries per IVF search: the exact re-scoring gathers query_block x refine x k rows
    )


def search(queries, keys, k: int, config: IndexConfig = IndexConfig()) -> tuple[np.ndarray, np.ndarray, dict]:
    """(sims (nq, k'), indices (nq, k'), info) with k' = min(k, keys.n), best first; `queries` and `keys`
    are vector sets (sentkit.mining.vectors). `info` records the index used and its timings."""
    if config.kind not in INDEX_KINDS:
        raise ValueError(f"index must be one of {', '.join(INDEX_KINDS)}, got {config.kind!r}")
    if queries.dim != keys.dim:
        raise ValueError(f"queries have dim {queries.dim}, keys have dim {keys.dim}")
    kind = config.kind
    if kind == "auto":
        kind = "flat" if keys.n <= max(config.flat_max, IVF_MIN_KEYS - 1) else "ivfpq"
    if kind == "flat":
        start = time.perf_counter()
        sims, idx = flat_search(queries, keys, k)
        info = {"index": "flat", "factory": "Flat", "metric": "inner product", "gpus": _gpus()}
        return sims, idx, info | {"keys": keys.n, "search_s": round(time.perf_counter() - start, 2)}
    return ivfpq_search(queries, keys, k, config)


def merge_topk(best_s: np.ndarray, best_i: np.ndarray, new_s: np.ndarray, new_i: np.ndarray) -> None:
    """Merge a block's (n, kb) results into the running (n, k) top k, in place; ties keep the earlier block."""
    s = np.concatenate([best_s, new_s], axis=1)  # (n, k + kb)
    i = np.concatenate([best_i, new_i], axis=1)
    order = np.argsort(-s, axis=1, kind="stable")[:, : best_s.shape[1]]  # (n, k)
    best_s[:] = np.take_along_axis(s, order, axis=1)
    best_i[:] = np.take_along_axis(i, order, axis=1)


def flat_search(queries, keys, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top k by inner product of normalised rows: one flat index per key block, results merged."""
    import faiss

    k = min(k, keys.n)
    best_s = np.full((queries.n, k), -np.inf, dtype=np.float32)  # (nq, k)
    best_i = np.full((queries.n, k), -1, dtype=np.int64)
    for key_start, key_block in keys.blocks():
        index = _maybe_gpu(faiss.IndexFlatIP(keys.dim))
        index.add(key_block)
        kb = min(k, len(key_block))
        for q_start, q_block in queries.blocks():
            sims, idx = index.search(q_block, kb)  # (b, kb) each
            rows = slice(q_start, q_start + len(q_block))
            merge_topk(best_s[rows], best_i[rows], sims, idx + key_start)
    return best_s, best_i


def ivfpq_params(n: int, dim: int, config: IndexConfig) -> dict:
    """nlist, pq_m, nprobe and the training sample size for `n` keys of `dim` dimensions."""
    if n < IVF_MIN_KEYS:
        raise InvalidArgument(
            f"an IVF-PQ index needs at least {IVF_MIN_KEYS} keys, this side has {n}; use flat"
        )
    nlist = config.nlist or 2 ** round(math.log2(max(4 * math.sqrt(n), 16)))
    nlist = max(1, min(nlist, n // 39))  # FAISS's k-means wants at least 39 training points per list
    pq_m = config.pq_m or max(d for d in range(1, max(1, dim // 8) + 1) if dim % d == 0)
    if dim % pq_m:
        raise ValueError(f"pq_m {pq_m} must divide the vector dim {dim}")
    train = min(n, config.train_size or max(50 * nlist, 20_000))
    return {
        "nlist": nlist,
        "pq_m": pq_m,
        "nbits": 8,
        "nprobe": min(config.nprobe, nlist),
        "train_size": train,
    }


def ivfpq_search(queries, keys, k: int, config: IndexConfig) -> tuple[np.ndarray, np.ndarray, dict]:
    """Approximate top k from an IVF-PQ index over all keys, candidates re-scored exactly (module docstring)."""
    import faiss

    k = min(k, keys.n)
    params = ivfpq_params(keys.n, keys.dim, config)
    factory = f"IVF{params['nlist']},PQ{params['pq_m']}"
    timings = {}
    start = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    sample = np.sort(rng.choice(keys.n, size=params["train_size"], replace=False))
    index = faiss.index_factory(keys.dim, factory, faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    ivf.cp.seed = ivf.pq.cp.seed = config.seed  # k-means seeding: the same keys give the same index
    # polysemous codes (Hamming pre-filtering) are not searched here; their training dominated build time
    ivf.do_polysemous_training = False
    index.train(keys.take(sample))
    timings["train_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    for _, block in keys.blocks():
        index.add(block)
    timings["add_s"] = round(time.perf_counter() - start, 2)
    ivf.nprobe = params["nprobe"]
    start = time.perf_counter()
    fetch = min(keys.n, max(k, config.refine * k))
    best_s = np.empty((queries.n, k), dtype=np.float32)
    best_i = np.empty((queries.n, k), dtype=np.int64)
    short = []
    for q_start, q_block in _query_blocks(queries, config.query_block):
        _, cand = index.search(q_block, fetch)  # (b, fetch) candidate key rows, -1 where lists ran out
        exact = np.einsum(
            "bd,bcd->bc", q_block, keys.take(np.maximum(cand, 0).ravel()).reshape(*cand.shape, -1)
        )
        exact[cand < 0] = -np.inf
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]  # (b, k)
        rows = slice(q_start, q_start + len(q_block))
        best_s[rows] = np.take_along_axis(exact, order, axis=1)
        best_i[rows] = np.take_along_axis(cand, order, axis=1)
        short.extend(q_start + np.flatnonzero((best_i[rows] < 0).any(axis=1)))
    timings["search_s"] = round(time.perf_counter() - start, 2)
    if short:  # rare: an exact search for the queries whose probed lists held fewer than k keys
        from sentkit.mining.vectors import ArrayVectors

        rows = np.array(short)
        few = ArrayVectors(queries.take(rows), [""] * len(rows), [""] * len(rows))
        best_s[rows], best_i[rows] = flat_search(few, keys, k)
    info = {"index": "ivfpq", "factory": factory, "metric": "inner product", "keys": keys.n, **params}
    info |= {"refine": config.refine, "exact_fallback_queries": len(short), "seed": config.seed, **timings}
    return best_s, best_i, info


def _query_blocks(queries, rows: int):
    """The query set in blocks of at most `rows` (bounds the re-scoring gather: rows x fetch x dim floats)."""
    for start, block in queries.blocks():
        for sub in range(0, len(block), rows):
            yield start + sub, block[sub : sub + rows]


def _gpus() -> int:
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def _maybe_gpu(index):
    """The index on every GPU FAISS sees (faiss-gpu builds), else unchanged."""
    import faiss

    return faiss.index_cpu_to_all_gpus(index) if _gpus() > 0 else index


def config_dict(config: IndexConfig) -> dict:
    return asdict(config)
