"""Choose an IVF index's nprobe for a recall target, on a sample of the queries, before the search runs.

How many inverted lists a query must visit depends on the vectors, not only on their count: on real
sentence vectors (a narrow cone where every cosine is high) the neighbours of a query spread over many
lists, and a fixed nprobe that suits random or well-clustered vectors can keep a small share of them. So
when `--nprobe` is not given, the built index is tried on a seeded sample of queries whose exact top k is
known: nprobe starts at the preset's value and doubles until the sample's recall@k reaches the target, the
lists run out, or a doubling gains less than PLATEAU (then the codes or the candidates re-scored limit the
recall, not the lists, and more probes would only cost time: the step before is kept). The recall that
`sentkit mine` reports is measured afterwards on a different sample, so the choice is not graded on the
queries it was made on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

RECALL_TARGET = 0.95
TUNE_QUERIES = 500
PLATEAU = 0.005


def choose_nprobe(
    start: int, lists: int, target: float, recall_at: Callable[[int], float]
) -> tuple[int, list]:
    """(nprobe, ladder): the first nprobe of start, 2 start, 4 start, ... (at most `lists`) whose
    `recall_at(nprobe)` reaches `target`; at a plateau the step before it; `ladder` lists every step tried."""
    ladder: list[dict] = []
    probe = max(1, min(start, lists))
    while True:
        recall = float(recall_at(probe))
        ladder.append({"nprobe": probe, "recall_at_k": round(recall, 4)})
        if recall >= target or probe >= lists:
            return probe, ladder
        if len(ladder) > 1 and recall - ladder[-2]["recall_at_k"] < PLATEAU:
            return ladder[-2]["nprobe"], ladder
        probe = min(lists, 2 * probe)


def tune_nprobe(
    start: int,
    lists: int,
    target: float,
    queries,
    keys,
    k: int,
    search_with: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    sample: int = TUNE_QUERIES,
    seed: int = 0,
    exact: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[int, dict]:
    """(nprobe, record): choose_nprobe on `sample` queries drawn with a stream of `seed` other than the
    recall check's; `search_with(query_rows, nprobe)` runs the index (re-scored) on those rows, `exact(query
    rows)` gives their exact (sims, rows) (default: a float32 exact search over `keys` here)."""
    from sentkit.mining.exact import UnitRows, exact_search
    from sentkit.mining.recall import found_share, sampled_queries

    began = time.perf_counter()
    rows = sampled_queries(queries.n, sample, [seed, 1])
    block = queries.take(rows)
    if exact is None:
        exact_s, _, _ = exact_search(UnitRows(block), keys, k, "float32")
    else:
        exact_s, _ = exact(block)
    kth = exact_s[:, -1]

    def recall_at(probe: int) -> float:
        return found_share(*search_with(block, probe), kth)

    probe, ladder = choose_nprobe(start, lists, target, recall_at)
    record = {"target": target, "queries": len(rows), "ladder": ladder, "chosen": probe}
    record["seconds"] = round(time.perf_counter() - began, 2)
    return probe, record
