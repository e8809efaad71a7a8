"""One k-NN direction of a mining run, block by block: plan, train once, search each query block on an
engine (in process, or Ray workers each holding a key part), keep each finished block in the work folder.

The driver decides the search (search.resolve_kind: exact or an approximate index and its knobs), trains an
approximate index once on a sample of the searched side (kept in the work folder, so a resumed run
quantizes with the same codebook), chooses nprobe for the recall target when it is not given (on sampled
queries, their exact neighbours found by the engine), and searches the exact neighbours of the recall sample.
Then the query side is read BLOCK_ROWS rows at a time and each block searched: its lists land in the work
folder and the block is listed as finished, so a killed run redoes only the blocks in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from sentkit.mining.approximate import DEFAULT_NPROBE, trained_index
from sentkit.mining.exact import resolve_device
from sentkit.mining.index_spec import ivf_lists
from sentkit.mining.key_part import SearchPlan
from sentkit.mining.native_stderr import captured_stderr, pass_through, too_few_training_points
from sentkit.mining.nprobe_tuning import tune_nprobe
from sentkit.mining.recall import sampled_queries
from sentkit.mining.search import IndexConfig, approximate_knobs, resolve_kind

BLOCK_ROWS = 65_536  # queries per block: the unit of progress, of resumption and of work handed to workers


def plan_direction(config: IndexConfig, k: int, nq: int, nk: int, dim: int) -> tuple[SearchPlan, str, dict]:
    """(plan, why this search, knobs) for nq queries over nk keys: knobs holds an approximate index's nprobe,
    refine and training rows (search.approximate_knobs)."""
    kind, reason = resolve_kind(config, nq, nk, dim)
    device = resolve_device(config.exact_device)
    plan = SearchPlan(kind, min(k, nk), config.exact_dtype, device, query_block=config.query_block)
    if not plan.approximate:
        return plan, reason, {}
    knobs = approximate_knobs(config, kind, nk)
    plan = SearchPlan(
        kind, plan.k, config.exact_dtype, device, knobs["refine"], config.ef_search, config.query_block
    )
    return plan, reason, knobs


def blocks_of(n: int) -> int:
    """Query blocks of n rows (BLOCK_ROWS each, the last one shorter)."""
    return (n + BLOCK_ROWS - 1) // BLOCK_ROWS


def knn_direction(
    direction: str,
    queries,
    keys,
    k: int,
    config: IndexConfig,
    engine,
    work,
    log: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict, dict | None]:
    """(sims (nq, k'), rows (nq, k'), the direction's index record, the recall sample's exact neighbours or
    None) of `queries` among `keys` (vector sets); see the module docstring."""
    plan, reason, knobs = plan_direction(config, k, queries.n, keys.n, keys.dim)
    info: dict = {"asked": config.kind, "chosen_because": reason}
    timings: dict[str, float] = {}
    trained = None
    if plan.approximate:
        trained = work.array(direction, "trained_index")
        training = work.get(direction, "training")
        if trained is None or training is None:
            trained, training = _train(keys, plan.kind, knobs["train_rows"], config.seed)
            work.put_array(direction, "trained_index", trained)
            work.put(direction, "training", training)
        info |= training
    timings["open_s"] = 0.0
    opened = False

    def ready() -> None:
        """The engine holds this direction's keys (opened at the first search: a direction a stopped run
        finished is not opened again)."""
        nonlocal opened
        if not opened:
            start = time.perf_counter()
            engine.open(keys, plan, trained)
            opened = True
            timings["open_s"] = round(time.perf_counter() - start, 2)

    exact_sample = None
    parts: list[dict] = []
    try:
        nprobe = knobs.get("nprobe")
        lists = ivf_lists(plan.kind) if plan.approximate else None
        if lists and config.recall_target and not config.nprobe:
            tuning = work.get(direction, "nprobe_tuning")
            if tuning is None:
                ready()
                start_probe = min(nprobe or DEFAULT_NPROBE, lists)
                _, tuning = tune_nprobe(
                    start_probe,
                    lists,
                    config.recall_target,
                    queries,
                    keys,
                    plan.k,
                    engine.tuning_search,
                    seed=config.seed,
                    exact=engine.exact,
                )
                work.put(direction, "nprobe_tuning", tuning)
            nprobe = tuning["chosen"]
            info["nprobe_tuning"] = tuning
        if plan.approximate:
            exact_sample = _recall_sample(direction, queries, engine, work, config, ready)
        sims, rows = work.neighbour_lists(direction, queries.n, plan.k)
        blocks = blocks_of(queries.n)
        todo = [b for b in range(blocks) if b not in work.done(direction)]
        if todo:
            ready()
        start = time.perf_counter()
        finished = blocks - len(todo)

        read_s = 0.0

        def query_blocks():
            nonlocal read_s
            for block in todo:
                first = block * BLOCK_ROWS
                began = time.perf_counter()
                rows = queries.take(np.arange(first, min(first + BLOCK_ROWS, queries.n)))
                read_s += time.perf_counter() - began
                yield block, rows

        for block, block_sims, block_rows in engine.search_blocks(query_blocks(), nprobe):
            first = block * BLOCK_ROWS
            sims[first : first + len(block_sims)] = block_sims
            rows[first : first + len(block_rows)] = block_rows
            work.mark_done(direction, block)
            finished += 1
            if log and blocks > 1:
                log(
                    f"{direction}: {finished} of {blocks} query blocks "
                    f"({min(finished * BLOCK_ROWS, queries.n):,} of {queries.n:,} queries), "
                    f"{time.perf_counter() - start:.0f} s"
                )
        timings["blocks_s"] = round(time.perf_counter() - start, 2)
        timings["read_s"] = round(read_s, 2)
    finally:
        if opened:
            parts = engine.close()
    info |= _record(plan, knobs, parts, keys.n, queries.n, timings, nprobe if plan.approximate else None)
    info["blocks"] = {
        "rows": BLOCK_ROWS,
        "total": blocks_of(queries.n),
        "resumed": work.resumed.get(direction, 0),
    }
    return np.asarray(sims), np.asarray(rows), info, exact_sample


def _train(keys, factory: str, train_rows: int | None, seed: int) -> tuple[np.ndarray, dict]:
    """(the trained empty index serialized, its record) with FAISS's k-means warnings captured (recorded as
    training_warnings; any other native output passes through)."""
    import faiss

    chatter = None
    try:
        with captured_stderr() as chatter:
            index, sample, seconds = trained_index(keys, factory, train_rows, seed)
    finally:
        found, other = too_few_training_points(chatter.lines if chatter else [])
        pass_through(other)
    record = {"train_size": sample, "train_s": seconds, "seed": seed}
    if found:
        record["training_warnings"] = found
    return faiss.serialize_index(index), record


def _recall_sample(direction: str, queries, engine, work, config: IndexConfig, ready) -> dict:
    """The exact neighbours of the recall check's sampled queries (recall.sampled_queries with the seed),
    found by the engine over every key part; kept in the work folder."""
    picked = work.array(direction, "recall_picked")
    if picked is not None:
        record = work.get(direction, "recall_exact")
        sims, rows = work.array(direction, "recall_sims"), work.array(direction, "recall_rows")
        if record is not None and sims is not None and rows is not None:
            return {"picked": picked, "sims": sims, "rows": rows, **record}
    picked = sampled_queries(queries.n, config.recall_queries, config.seed)
    ready()
    start = time.perf_counter()
    sims, rows = engine.exact(queries.take(picked))
    record = {"seconds": time.perf_counter() - start, "dtype": config.exact_dtype, "device": "workers"}
    if engine.kind == "local":
        record["device"] = resolve_device(config.exact_device)
    for name, value in (("recall_picked", picked), ("recall_sims", sims), ("recall_rows", rows)):
        work.put_array(direction, name, value)
    work.put(direction, "recall_exact", record)
    return {"picked": picked, "sims": sims, "rows": rows, **record}


def _record(
    plan: SearchPlan, knobs: dict, parts: list[dict], nk: int, nq: int, timings: dict, nprobe
) -> dict:
    """The direction's index record: what every search path records, summed over the key parts."""

    def total(key: str) -> float:
        return sum(part.get(key, 0) for part in parts)

    worker_s = round(max((p.get("search_s", 0) for p in parts), default=0), 2)
    # key_parts None: the direction was finished by a stopped run and not searched again
    common = {"keys": nk, "key_parts": len(parts) or None, "search_s": timings.get("blocks_s", 0.0)}
    common |= {
        "worker_search_s": worker_s,
        "open_s": timings["open_s"],
        "read_queries_s": timings.get("read_s", 0.0),
    }
    if plan.kind == "faiss-flat":
        return {"index": "faiss-flat", "factory": "Flat", "metric": "inner product", **common}
    if not plan.approximate:
        first = parts[0] if parts else {}
        gflop = 2 * nq * nk * (first.get("dim") or 0) / 1e9
        record = {"index": "flat", "factory": "Flat"}
        for key in ("path", "device", "dtype", "dtype_reason", "torch_threads", "candidates_per_query"):
            if key in first:
                record[key] = first[key]
        record |= {
            "key_passes": int(total("key_passes")),
            "float32_rechecked_queries": int(total("float32_rechecked_queries")),
            "unverified_queries": int(total("unverified_queries")),
            **common,
        }
        if gflop:
            record["gflop"] = round(gflop, 3)
        return record
    lists = ivf_lists(plan.kind)
    params = dict(parts[0].get("params", {})) if parts else {}
    if lists and nprobe:
        params["nprobe"] = min(nprobe, lists)
    record = {"index": "approximate", "factory": plan.kind, "metric": "inner product", **common}
    record |= {
        "nlist": lists,
        **params,
        "fetched_per_query": parts[0].get("fetched_per_query") if parts else None,
    }
    record |= {
        "refine": plan.refine,
        "exact_fallback_queries": int(total("exact_fallback_queries")),
        "add_s": round(max((p.get("add_s", 0) for p in parts), default=0), 2),
        "refine_s": round(total("refine_s"), 2),
    }
    return record
