"""Recall of an approximate index against exact search, on a seeded sample of its queries.

Every approximate search is checked: about 1,000 sampled queries are searched exactly against all keys
(a blocked matrix product: seconds) and recall@k is the share of their exact top k the index returned. A
returned neighbour whose exact similarity ties the k-th exact one counts as found (a duplicate sentence
is as good as its twin). Below RECALL_WARN, a one-line warning says which parameter to raise.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np

from sentkit.errors import DataWarning
from sentkit.mining.exact import UnitRows, exact_search
from sentkit.mining.index_spec import ivf_lists, uses_codes, uses_hnsw

RECALL_QUERIES = 1000
RECALL_WARN = 0.9


def sampled_queries(n: int, sample: int, seed) -> np.ndarray:
    """Sorted row numbers of min(sample, n) of n queries, drawn without replacement with `seed`."""
    return np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))


def found_share(sims: np.ndarray, rows: np.ndarray, exact_kth: np.ndarray) -> float:
    """recall@k: the share of the (m, k) results at least as similar as each query's exact k-th neighbour
    (`exact_kth`, (m,)); a tie with it counts as found, a missing result (row -1) does not."""
    return float(((rows >= 0) & (sims >= exact_kth[:, None])).mean())


def sampled_recall(
    queries,
    keys,
    sims: np.ndarray,
    rows: np.ndarray,
    sample: int = RECALL_QUERIES,
    seed: int = 0,
    dtype: str = "auto",
    device: str = "cpu",
    index_lists: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    """recall@k of the approximate results (`sims`, `rows`: (nq, k), exact similarities) on `sample`
    queries drawn with `seed`, against an exact search of those queries over all keys; with `index_lists`
    (the index's own (sims, rows) where `sims`, `rows` were completed afterwards) theirs too, as
    `index_recall_at_k`."""
    k = rows.shape[1]
    picked = sampled_queries(queries.n, sample, seed)
    start = time.perf_counter()
    exact_s, exact_i, info = exact_search(UnitRows(queries.take(picked)), keys, k, dtype, device)
    exact = {"picked": picked, "sims": exact_s, "rows": exact_i, "seconds": time.perf_counter() - start}
    exact |= {"dtype": info["dtype"], "device": info["device"]}
    return recall_against(exact, sims, rows, seed, index_lists)


def recall_against(
    exact: dict, sims: np.ndarray, rows: np.ndarray, seed: int, index_lists: tuple | None = None
) -> dict:
    """The recall record of the lists `sims`, `rows` against the exact neighbours of the sampled queries in
    `exact` ({"picked", "sims", "rows", "seconds", "dtype", "device"}; sampled_recall, or a search spread over
    key parts: knn_run.py)."""
    picked, exact_s, exact_i = exact["picked"], exact["sims"], exact["rows"]
    record = {
        "k": rows.shape[1],
        "recall_at_k": round(found_share(sims[picked], rows[picked], exact_s[:, -1]), 4),
        "recall_at_1": round(float(np.mean(rows[picked, 0] == exact_i[:, 0])), 4),
    }
    if index_lists is not None:
        own_s, own_i = index_lists
        record["index_recall_at_k"] = round(found_share(own_s[picked], own_i[picked], exact_s[:, -1]), 4)
    return record | {
        "queries": len(picked),
        "seed": seed,
        "exact_dtype": exact["dtype"],
        "exact_device": exact["device"],
        "exact_s": round(exact["seconds"], 2),
    }


def raise_hint(info: dict) -> str:
    """What to raise for more recall from the index `info` describes."""
    factory, knobs = info["factory"], []
    if ivf_lists(factory) and info.get("nprobe", 0) < ivf_lists(factory):
        knobs.append(f"--nprobe (now {info['nprobe']})")
    if uses_hnsw(factory):
        knobs.append(f"--ef-search (now {info['ef_search']})")
    if uses_codes(factory):
        knobs.append(f"--refine (now {info['refine']})")
    return f"raise {' or '.join(knobs)}, or use --index flat" if knobs else "use --index flat"


def report_recall(info: dict, direction: str, log: Callable[[str], None] | None = None) -> None:
    """Print an approximate search's measured recall (via `log`) and warn in one line when it is low."""
    recall = info.get("recall")
    if recall is None:
        return
    line = (
        f"recall@{recall['k']} of {info['factory']} ({direction}) against exact search: "
        f"{recall['recall_at_k']:.3f} on {recall['queries']} sampled queries"
    )
    notes = []
    if "index_recall_at_k" in recall:
        notes.append(f"the index alone: {recall['index_recall_at_k']:.3f}")
    tuning = info.get("nprobe_tuning")
    if tuning:
        tried = ", ".join(f"{step['nprobe']}: {step['recall_at_k']:.3f}" for step in tuning["ladder"])
        notes.append(
            f"nprobe {tuning['chosen']}, chosen for recall {tuning['target']:g} on other queries: {tried}"
        )
    if notes:
        line += f" ({'; '.join(notes)})"
    if log is not None:
        log(line)
    if recall["recall_at_k"] < RECALL_WARN:
        warnings.warn(f"{line}, below {RECALL_WARN}: {raise_hint(info)}", DataWarning, stacklevel=2)
