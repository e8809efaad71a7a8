"""Cosine k-NN over vectors too large for one array: which search runs, and the record of what it did.

`--index` names a preset or a FAISS factory string (index_spec.py):

- `flat`: exact, blocked matrix products at the machine's speed (exact.py; bfloat16 candidates verified
  and re-scored in float32 where the CPU multiplies bfloat16 natively and faster);
- `faiss-flat`: exact, one FAISS inner-product index per block of keys, each query's top k from every
  block merged (the k best over all blocks are among the union of each block's k best);
- `ivfpq`: stopes' (NLLB's) setting, `OPQ64,IVF<about 16 sqrt(n)>,PQ64` with nprobe 128;
- `ivf-fastscan`: `IVF<about 2 sqrt(n)>,PQ<dim/2>x4fs`, nprobe from 3/64 of the lists, 64 x k candidates
  re-scored: sized for a few CPU cores (the coarse stages are kept small, 4-bit codes scan fast, exact
  re-scoring fixes the order);
- a factory string (`IVF4096,Flat`, `HNSW32`, ...): that index (approximate.py);
- `auto`: `flat` while src rows x tgt rows <= flat_max^2 (FLAT_MAX, or GPU_FLAT_MAX when exact search runs on
  a GPU), `ivf-fastscan` above.

Every result is scored by the same exact similarity (exact.exact_scores), whichever search found it, and
every approximate search has its recall@k against exact search measured on sampled queries (recall.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sentkit.errors import InvalidArgument
from sentkit.mining.approximate import DEFAULT_REFINE, TRAIN_MIN, approximate_search
from sentkit.mining.exact import DTYPES, exact_scores, exact_search, merge_topk, resolve_device
from sentkit.mining.index_spec import (
    FASTSCAN_REFINE,
    PRESETS,
    check_factory_dim,
    fastscan_nlist,
    fastscan_nprobe,
    fastscan_pq_m,
    ivf_lists,
    parse_index,
    preset_nlist,
    preset_pq_m,
)
from sentkit.mining.nprobe_tuning import RECALL_TARGET
from sentkit.mining.recall import RECALL_QUERIES, sampled_recall

# auto searches exactly up to FLAT_MAX x FLAT_MAX rows: both directions of 250k x 250k at 384 dims are
# 2 x 2 x 250k^2 x 384 = 9.6e13 FLOP, about 10 minutes at the 160 GFLOP/s of float32 products measured on
# 2 AVX-512 cores (5 with their 315 in bfloat16); 1M x 1M would be 16 x that, hours.
FLAT_MAX = 250_000
# on a GPU: both directions of 2M x 2M are 6.1e15 FLOP, under a minute at the few hundred bfloat16 TFLOP/s of a
# data-centre GPU (an estimate from the product's FLOPs, not a measurement)
GPU_FLAT_MAX = 2_000_000
IVF_MIN_KEYS = 1000  # fewer keys cannot train 256 8-bit PQ centroids per sub-quantizer meaningfully


@dataclass(frozen=True)
class IndexConfig:
    """How one side's keys are searched; `None` fields are derived from the key count and dim."""

    kind: str = "auto"  # a preset (index_spec.PRESETS) or a FAISS factory string
    flat_max: int | None = None  # auto: exact while queries x keys <= flat_max^2 (None: flat_limit's)
    nlist: int | None = None  # presets' inverted lists (ivfpq: about 16 sqrt(n); ivf-fastscan: 2 sqrt(n))
    pq_m: int | None = None  # presets' sub-quantizers (ivfpq: 64 of 8 bits; ivf-fastscan: dim/2 of 4 bits)
    nprobe: int | None = None  # IVF lists visited per query (ivf-fastscan: from 3/64 of the lists; else 128)
    ef_search: int | None = None  # HNSW candidate list per query (128)
    refine: int | None = None  # candidates per wanted neighbour, re-scored exactly (ivf-fastscan 64, else 4)
    train_size: int | None = None  # rows sampled for training (ivf-fastscan: 39 per list; else 50 per list)
    seed: int = 0  # training sample, k-means, recall sample
    exact_dtype: str = "auto"  # product dtype of exact search: auto, float32, bfloat16
    exact_device: str = "auto"  # where exact search multiplies: auto (a GPU if torch sees one), cpu, cuda
    recall_queries: int = RECALL_QUERIES  # queries sampled to measure an approximate index's recall
    # IVF without nprobe: nprobe chosen on sampled queries to reach this recall@k (None or 0: not tuned)
    recall_target: float | None = RECALL_TARGET
    query_block: int = 4096  # queries per approximate search call (bounds the re-scoring gather)


def search(
    queries, keys, k: int, config: IndexConfig = IndexConfig(), recall: bool = True
) -> tuple[np.ndarray, np.ndarray, dict]:
    """(sims (nq, k'), indices (nq, k'), info) with k' = min(k, keys.n), best first; `queries` and `keys`
    are vector sets (sentkit.mining.vectors). `info` records the index used, its timings and, for an
    approximate index, its measured recall (`recall=False`: the caller measures it, see measure_recall)."""
    if queries.dim != keys.dim:
        raise ValueError(f"queries have dim {queries.dim}, keys have dim {keys.dim}")
    check_index(config, keys.dim)
    kind, reason = resolve_kind(config, queries.n, keys.n, keys.dim)
    if kind == "flat":
        sims, idx, info = exact_search(queries, keys, k, config.exact_dtype, config.exact_device)
    elif kind == "faiss-flat":
        start = time.perf_counter()
        sims, idx = faiss_flat_search(queries, keys, k)
        info = {"index": "faiss-flat", "factory": "Flat", "metric": "inner product", "gpus": _gpus()}
        info |= {"keys": keys.n, "search_s": round(time.perf_counter() - start, 2)}
    else:
        knobs = approximate_knobs(config, kind, keys.n)
        sims, idx, info = approximate_search(
            queries,
            keys,
            k,
            kind,
            nprobe=knobs["nprobe"],
            ef_search=config.ef_search,
            refine=knobs["refine"],
            train_rows=knobs["train_rows"],
            seed=config.seed,
            query_block=config.query_block,
            recall_target=None if config.nprobe else config.recall_target,
        )
        if recall:
            info["recall"] = measure_recall(queries, keys, sims, idx, config)
    return sims, idx, {"asked": config.kind, "chosen_because": reason, **info}


def measure_recall(queries, keys, sims, idx, config: IndexConfig, index_lists=None) -> dict:
    """recall.sampled_recall of the lists `sims`, `idx` with the config's sample, seed and exact search
    (and of the index's own lists `index_lists`, where the lists were completed after the search)."""
    return sampled_recall(
        queries,
        keys,
        sims,
        idx,
        config.recall_queries,
        config.seed,
        config.exact_dtype,
        config.exact_device,
        index_lists=index_lists,
    )


def is_approximate_record(info: dict) -> bool:
    """Whether a search's record describes an approximate index (its lists may miss neighbours)."""
    return info.get("index") == "approximate"


def check_index(config: IndexConfig, dim: int) -> None:
    """Refuse (one line) an index kind or exact dtype that cannot work, before any search runs."""
    parse_index(config.kind)
    if config.exact_dtype not in DTYPES:
        raise InvalidArgument(f"--exact-dtype must be one of {', '.join(DTYPES)}, got {config.exact_dtype!r}")
    resolve_device(config.exact_device)  # refuses cuda without a GPU before any search
    if config.kind not in PRESETS:
        check_factory_dim(config.kind, dim)
    if config.kind in ("ivfpq", "ivf-fastscan", "auto") and config.pq_m and dim % config.pq_m:
        raise InvalidArgument(f"--pq-m {config.pq_m} must divide the vector dim {dim}")


def resolve_kind(config: IndexConfig, nq: int, nk: int, dim: int) -> tuple[str, str]:
    """(what runs: "flat", "faiss-flat" or a factory string, why) for nq queries over nk keys."""
    kind = config.kind
    if kind == "auto":
        limit = flat_limit(config)
        if nq * nk <= limit**2 or nk < IVF_MIN_KEYS:
            return "flat", f"auto: {nq} x {nk} rows is within --flat-max {limit} squared"
        kind = "ivf-fastscan"
        reason = f"auto: {nq} x {nk} rows exceeds --flat-max {limit} squared"
    else:
        reason = "asked for"
    if kind == "Flat":
        return "faiss-flat", reason
    if kind in ("flat", "faiss-flat"):
        return kind, reason
    if kind == "ivfpq":
        return ivfpq_factory(nk, dim, config), reason
    if kind == "ivf-fastscan":
        return fastscan_factory(nk, dim, config), reason
    return kind, reason


def flat_limit(config: IndexConfig) -> int:
    """auto's exact-search limit: --flat-max where given, else GPU_FLAT_MAX when exact search runs on a GPU,
    FLAT_MAX on a CPU."""
    if config.flat_max:
        return config.flat_max
    return GPU_FLAT_MAX if resolve_device(config.exact_device) == "cuda" else FLAT_MAX


def preset_of(config: IndexConfig) -> str | None:
    """The approximate preset whose derived settings apply ("ivfpq", "ivf-fastscan"; auto's is
    ivf-fastscan), None for a factory string."""
    if config.kind == "auto":
        return "ivf-fastscan"
    return config.kind if config.kind in ("ivfpq", "ivf-fastscan") else None


def approximate_knobs(config: IndexConfig, factory: str, nk: int) -> dict:
    """nprobe, refine and training rows of an approximate search over nk keys: the flags where given, else
    the preset's derivation (ivf-fastscan: 3/64 of the lists probed, refine 64, 39 training rows per list, at least
    65,536), else FAISS-string defaults (nprobe 128, refine 4, 50 training rows per list)."""
    lists = ivf_lists(factory)
    if preset_of(config) == "ivf-fastscan" and lists:
        return {
            "nprobe": config.nprobe or fastscan_nprobe(lists),
            "refine": config.refine or FASTSCAN_REFINE,
            "train_rows": config.train_size or min(nk, max(TRAIN_MIN, 39 * lists)),
        }
    return {
        "nprobe": config.nprobe,
        "refine": config.refine or DEFAULT_REFINE,
        "train_rows": config.train_size,
    }


def ivfpq_factory(n: int, dim: int, config: IndexConfig) -> str:
    """The ivfpq preset's factory string for n keys: `OPQ<m>,IVF<nlist>,PQ<m>`."""
    if n < IVF_MIN_KEYS:
        raise InvalidArgument(
            f"an IVF-PQ index needs at least {IVF_MIN_KEYS} keys, this side has {n}; use --index flat"
        )
    m = config.pq_m or preset_pq_m(dim)
    return f"OPQ{m},IVF{config.nlist or preset_nlist(n)},PQ{m}"


def fastscan_factory(n: int, dim: int, config: IndexConfig) -> str:
    """The ivf-fastscan preset's factory string for n keys: `IVF<nlist>,PQ<m>x4fs`."""
    if n < IVF_MIN_KEYS:
        raise InvalidArgument(
            f"an IVF fast-scan index needs at least {IVF_MIN_KEYS} keys, this side has {n}; use --index flat"
        )
    return f"IVF{config.nlist or fastscan_nlist(n)},PQ{config.pq_m or fastscan_pq_m(dim)}x4fs"


def faiss_flat_search(queries, keys, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top k with FAISS: one flat inner-product index per key block, each block's top k re-scored
    with exact_scores (the similarity every search path reports) and merged."""
    import faiss

    k = min(k, keys.n)
    best_s = np.full((queries.n, k), -np.inf, dtype=np.float32)  # (nq, k)
    best_i = np.full((queries.n, k), -1, dtype=np.int64)
    for key_start, key_block in keys.blocks():
        index = _maybe_gpu(faiss.IndexFlatIP(keys.dim))
        index.add(key_block)
        kb = min(k, len(key_block))
        for q_start, q_block in queries.blocks():
            _, idx = index.search(q_block, kb)  # (b, kb)
            sims = exact_scores(q_block, key_block[idx])  # (b, kb)
            order = np.lexsort((idx, -sims), axis=1)
            rows = slice(q_start, q_start + len(q_block))
            merge_topk(
                best_s[rows],
                best_i[rows],
                np.take_along_axis(sims, order, axis=1),
                np.take_along_axis(idx, order, axis=1) + key_start,
            )
    return best_s, best_i


def _gpus() -> int:
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def _maybe_gpu(index):
    """The index on every GPU FAISS sees (faiss-gpu builds), else unchanged."""
    import faiss

    return faiss.index_cpu_to_all_gpus(index) if _gpus() > 0 else index
