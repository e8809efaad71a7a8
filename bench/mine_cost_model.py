"""A cost model of `sentkit mine`, fitted on bench/mine_distributed.py's runs, projected to 100M and 1B rows a side.

**Stages and their units** (per run, both directions summed; `bench/mine_distributed.json` holds the seconds):

| stage | seconds (sidecar timings) | unit | runs on |
|---|---|---|---|
| build | index_build_*_s, else the index record's train_s + add_s | a key, or a training row x 10 k-means iterations, against one list centroid, per dim | training: the driver's node's cores; adding: all workers' cores |
| search | knn_*_s less build, merge and transfer | a byte of 4-bit codes scanned (a query's probe of one list, weighted by the list's codes) | all workers' cores |
| search_flat | the same, for exact search | a query x key x dim product | all workers' cores |
| merge | merge_s | a query x key part (partial top-k lists merged) | the driver, one core |
| margin_retrieval | exchange_s + score_s + select_s + write_s | a row (both sides) | the driver, one core |
| io | skip_scan_src_s + skip_scan_tgt_s | a byte of vectors read (both sides) | the driver, one core |
| transfer | transfer_s | a byte of query blocks read and put for the workers | the driver, one core |
| recall | recall_s | a sampled query x key x dim product (1,000 queries) | all workers' cores (every part searches them) |
| coarse, refine | not timed: priced at search_flat's cost, else recall's | a query x key x dim product | all workers' cores |

**Fit.** Least squares through the origin, one cost per stage: a run contributes (seconds, units / cores) and
the cost is sum(u t) / sum(u^2), in core-seconds per unit; cores are the host's (in process), or the workers'
CPUs capped at the host's cores (Ray: a simulated cluster of more one-CPU nodes than cores gets the cores).
A stage no run timed has no cost and is left out of the projection (said in the output).

**Projection** (per side n, dim d, nodes of `--node-cores` cores and `--node-gib` GiB), the layout of `sentkit
mine --workers/--address` (mining/knn_run.py, key_part.py, engine_ray.py): each direction's searched side is
split into one part of consecutive rows per node. The driver trains ONE IVF fast-scan index for the whole side
as the `ivf-fastscan` preset builds it (lists the power of two nearest 2 sqrt(n), 4-bit codes of d/4 bytes,
trained on max(65,536, 39 per list) rows, at most n) on its own node's cores, and every node adds its part's
keys to a copy: the parts share the lists, each holding about 1/nodes of every list's codes. Every query block
goes to every part in two rounds: the workers rank its queries against all the lists' centroids, 1/nodes of
them each (the parts share the quantizer, so a query is ranked once); then each part scans its share of the
nprobe probed lists and re-scores its own 64 x k candidates exactly, and the driver merges the partial top-k
lists. So the codes scanned per query, summed over the parts, are one index's (nprobe x n / lists) and the
coarse ranking is n x lists x d products a direction, both whatever the node count, spread over every node's
cores; what grows with the nodes is the re-scoring (n x nodes x 64k x d: each part re-scores its own
candidates, a floor per node that more nodes do not lower) and the merge (n x nodes, on the driver). Recall@4
>= 0.95 is assumed to hold when the shared index probes `fraction`: the same share of its lists as the fitted
runs' index did (conservative: the codes scanned per query grow with n; the measured recall is printed), or
`sqrt`: nprobe growing with the square root of the lists (optimistic: codes per query grow with sqrt(n);
recall at that scale is not measured); both are projected. Each part re-scores 64 x k candidates of its own,
more than one index over the whole side fetches, so recall is at least that index's at the same nprobe
(key_part.py).

The coarse ranking and the re-scoring are not timed apart in a run: they are priced per query x key x dim
product at exact search's fitted cost, else the recall check's. They are also inside the anchor's fitted
per-byte search cost, so they are counted twice there (an overstatement of the search by their share at the
anchor); and the re-scoring gathers candidate rows, far slower per product than a matrix product (an
understatement of the refine stage). docs/lab/mining-distributed.md gives both shares as measured.

Each worker keeps its part's float32 rows in memory for re-scoring, its codes and ids, and one copy of the
shared coarse quantizer (lists x d float32). A worker holds its rows only up to half of what its node has
available (key_part.half_available_memory) and reads candidates back from the shards above that, which this
model does not cover, so the memory's node count keeps the rows within half of `usable`. The driver keeps both
directions' (n, k) lists on disk (memory maps in the work folder, read in chunks) and holds what grows with the
rows after the searches: the proposals and the retrieval's arrays (driver_bytes_per_row, measured). Query blocks reach every node over a
network of `--network-gbit` (not fitted: an assumption). Both directions run one after the other. Memory per
node and the node count follow from the part sizes; a second node count meets `--target-hours`.

    python -m bench.mine_cost_model [--from bench/out/mine_distributed.json] [--out bench/out/mine_cost_model.json]
    python -m bench.mine_cost_model --from docs/results/mine_e2e_B_1m_probe.json --dim 384   # one e2e run

Published mining setups (WikiMatrix, CCMatrix) are listed beside the projection with what their sources say.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from bench.common import provenance, write_result
from sentkit.mining.index_spec import FASTSCAN_REFINE, fastscan_nlist, fastscan_pq_m
from sentkit.mining.recall import RECALL_QUERIES
from sentkit.mining.search import IndexConfig, approximate_knobs

OUT = Path(__file__).resolve().parent / "out" / "mine_cost_model.json"
FROM = Path(__file__).resolve().parent / "out" / "mine_distributed.json"
KMEANS_ITERATIONS = 10  # FAISS trains an IVF's coarse quantizer with 10 k-means iterations (its cp.niter)
ID_BYTES = 8  # FAISS stores an int64 id beside each code
# the coarse ranking and the re-scoring are query x key x dim products: priced at exact search's fitted cost,
# else at the recall check's (an exact search of sampled queries, the same products)
PRODUCT_COST_FROM = ("search_flat", "recall")
# the driver's memory per row after the searches, measured by bench/mine_driver_memory.py
DRIVER_MEMORY = Path(__file__).resolve().parents[1] / "docs" / "results" / "mine_driver_memory.json"
HOLD_SHARE = 0.5  # a worker holds its part's float32 rows up to half its node's available memory (key_part)
RECALL_TARGET = 0.95
SIZES = (100_000_000, 1_000_000_000)
DIMS = (384, 1024)


@dataclass(frozen=True)
class Stage:
    what: str
    unit: str
    where: str  # "workers": every worker core; "driver": one core


STAGES = {
    "build": Stage("index build: train on a sample + add", "key-or-training-row x centroid x dim", "workers"),
    "search": Stage("approximate search", "byte of codes scanned", "workers"),
    "search_flat": Stage("exact search", "query x key x dim", "workers"),
    "merge": Stage("merge of partial top-k", "query x key part", "driver"),
    "margin_retrieval": Stage("exchange, margins, retrieval, TSV", "row", "driver"),
    "io": Stage("reading both sides", "byte", "driver"),
    "transfer": Stage("query blocks to workers", "byte", "driver"),
    "recall": Stage("recall check (exact, sampled queries)", "query x key x dim", "workers"),
}

PUBLISHED = [
    {
        "name": "WikiMatrix (Schwenk, Chaudhary, Sun, Gong, Guzman 2019)",
        "sources": [
            "https://arxiv.org/abs/1907.05791 (abstract)",
            "https://github.com/facebookresearch/LASER/blob/main/tasks/WikiMatrix/README.md ('Approach')",
            "https://research.facebook.com/downloads/wikimatrix/",
        ],
        "found": {
            "sentences_searched": "almost 600 million Wikipedia sentences, 85 languages (README, 'Approach')",
            "mined": "135M parallel sentences in 1,620 language pairs, 34M of them with English (abstract)",
            "method": "LASER's encoder and margin-based mining, k-NN search with FAISS (README)",
        },
        "not_found": "the hardware (GPU or CPU count) and the mining time: not in the abstract, README or project "
        "page; the paper's body was not reachable with the search tools used",
    },
    {
        "name": "CCMatrix (Schwenk, Wenzek, Edunov, Grave, Joulin, Fan 2021)",
        "sources": [
            "https://aclanthology.org/2021.acl-long.507 (ACL 2021 abstract)",
            "https://arxiv.org/abs/1911.04944 (v2 abstract)",
            "https://ai.meta.com/blog/ccmatrix-a-billion-scale-bitext-data-set-for-training-translation-models",
        ],
        "found": {
            "sentences_searched": "71 billion unique sentences from 32 CommonCrawl snapshots, 90 languages (ACL "
            "2021 abstract); 32.7 billion from 10 snapshots, 38 languages in the arXiv v2 abstract",
            "mined": "10.8 billion parallel sentences, 2.9 billion with English (ACL 2021); 4.5 billion, 661 "
            "million with English (arXiv v2)",
            "method": "margin-based mining in LASER's space; 'massively parallel processing' and FAISS (Meta AI "
            "blog, February 2020)",
        },
        "not_found": "the hardware, index type and wall time of the mining: not in the abstracts or the blog "
        "post; the paper's body was not reachable with the search tools used",
    },
]


# ---- what a measured run says ---------------------------------------------------------------------------
def code_bytes(factory: str | None, dim: int) -> float:
    """Bytes of one key's code: PQ<m>x4fs (fast scan) m/2, PQ<m> m, anything else the preset's d/4."""
    match = re.search(r"PQ(\d+)(x(\d+))?", factory or "")
    if not match:
        return dim / 4
    bits = int(match.group(3) or 8)
    return int(match.group(1)) * bits / 8


def run_cores(run: dict, host_cores: int) -> int:
    """Cores the search stages of a run had: the host's in process, else workers x CPUs per worker capped at
    the host's (one-CPU nodes simulated on fewer cores share them)."""
    engine = run.get("engine") or {}
    if engine.get("kind", "local") == "local":
        return host_cores
    workers = engine.get("workers") or 1
    return max(1, min(host_cores, workers * (engine.get("cpus_per_worker") or 1)))


def observations(run: dict, rows: int, dim: int, host_cores: int) -> dict[str, dict]:
    """{stage: {"seconds", "units", "cores"}} of one mine_distributed run (both directions summed); `rows` a
    side. Every field is read with .get: a sidecar without the distributed fields still gives the rest."""
    t = run.get("timings") or {}
    engine = run.get("engine") or {}
    parts = engine.get("key_parts") or (engine.get("workers") if engine.get("kind") == "ray" else 1) or 1
    cores = run_cores(run, host_cores)
    # only a distributed run merges partial lists and puts query blocks (an in-process 0.0 is no measurement)
    distributed = engine.get("kind", "local") != "local"
    merge, transfer = (t.get("merge_s"), t.get("transfer_s")) if distributed else (None, None)
    out: dict[str, dict] = {}

    def add(stage: str, seconds: float | None, units: float, stage_cores: int) -> None:
        if seconds is None or units <= 0:
            return
        entry = out.setdefault(stage, {"seconds": 0.0, "units": 0.0, "cores": stage_cores})
        entry["seconds"] += max(0.0, seconds)
        entry["units"] += units

    for direction in ("forward", "backward"):
        info = (run.get("index") or {}).get(direction) or {}
        keys = info.get("keys") or rows
        knn = t.get(f"knn_{direction}_s")
        build = t.get(f"index_build_{direction}_s")
        if build is None and info.get("index") == "approximate":
            build = (info.get("train_s") or 0.0) + (info.get("add_s") or 0.0)
        if info.get("index") == "approximate" and info.get("nlist"):
            lists, train = info["nlist"], info.get("train_size") or 0
            add("build", build, dim * lists * (KMEANS_ITERATIONS * train + keys), cores)
            scanned = (
                rows * (info.get("nprobe") or lists) * keys / lists * code_bytes(info.get("factory"), dim)
            )
            stage = "search"
        else:
            scanned, stage = rows * keys * dim, "search_flat"
        if knn is not None:  # the driver's merge and transfer sit inside the k-NN time: half each direction
            rest = (build or 0.0) + ((merge or 0.0) + (transfer or 0.0)) / 2
            # so do the nprobe tuning and the recall sample's exact search (knn_run.py searches them first)
            rest += ((info.get("nprobe_tuning") or {}).get("seconds") or 0.0) + _exact_s(info)
            add(stage, knn - rest, scanned, cores)
    exact = sum(_exact_s((run.get("index") or {}).get(d) or {}) for d in ("forward", "backward"))
    if (
        exact and t.get("recall_s") is not None
    ):  # timed inside the k-NN stages (recall_s: the comparison only)
        t = {**t, "recall_s": exact}
    if t.get("recall_s") is not None:
        sampled = sum(
            min(RECALL_QUERIES, rows) * ((run.get("index") or {}).get(d, {}).get("keys") or rows) * dim
            for d in ("forward", "backward")
            if "recall" in ((run.get("index") or {}).get(d) or {})
        )
        add("recall", t["recall_s"], sampled, host_cores)
    add("merge", merge, 2 * rows * parts, 1)
    add(
        "margin_retrieval",
        sum(t.get(key) or 0.0 for key in ("exchange_s", "score_s", "select_s", "write_s")),
        2 * rows,
        1,
    )
    scans = [t.get("skip_scan_src_s"), t.get("skip_scan_tgt_s")]
    if any(s is not None for s in scans):
        add("io", sum(s or 0.0 for s in scans), 2 * rows * dim * 4, 1)
    add("transfer", transfer, 2 * rows * dim * 4, 1)
    return out


def _exact_s(info: dict) -> float:
    """Seconds of a direction's exact search of the recall sample (0 where not recorded)."""
    return (info.get("recall") or {}).get("exact_s") or 0.0


def fit(observed: list[dict[str, dict]]) -> dict[str, dict]:
    """Per stage, the core-seconds per unit c minimising sum (t - c u / cores)^2 over the runs that timed it
    (least squares through the origin), with how many runs it rests on and the largest relative residual."""
    costs = {}
    for stage in STAGES:
        points = [
            (o[stage]["units"] / o[stage]["cores"], o[stage]["seconds"]) for o in observed if stage in o
        ]
        points = [(u, t) for u, t in points if u > 0]
        if not points:
            continue
        cost = sum(u * t for u, t in points) / sum(u * u for u, _ in points)
        residual = max((abs(t - cost * u) / t if t else 0.0) for u, t in points)
        costs[stage] = {
            "core_s_per_unit": cost,
            "runs": len(points),
            "max_relative_residual": round(residual, 3),
        }
    return costs


def nprobe_anchor(runs: list[dict]) -> dict:
    """The measured approximate index the projection scales from: its lists, nprobe and recall@k (the run
    with the highest recall among those that measured one)."""
    best = None
    for run in runs:
        for direction in ("forward", "backward"):
            info = (run.get("index") or {}).get(direction) or {}
            recall = (info.get("recall") or {}).get("recall_at_k")
            if info.get("index") == "approximate" and info.get("nlist") and recall is not None:
                if best is None or recall > best["recall_at_k"]:
                    best = {
                        "config": run.get("config"),
                        "direction": direction,
                        "nlist": info["nlist"],
                        "nprobe": info.get("nprobe") or info["nlist"],
                        "recall_at_k": recall,
                        "factory": info.get("factory"),
                    }
    return best


# ---- the projection --------------------------------------------------------------------------------------
def side_index(n: int, dim: int, anchor: dict, scaling: str) -> dict:
    """The IVF fast-scan index of one direction's searched side of n rows, as sentkit's `ivf-fastscan` preset
    builds it: lists of the whole side (trained once by the driver and shared by every key part), lists
    probed (`scaling` from the anchor), training rows (search.approximate_knobs' rule for the preset)."""
    lists = fastscan_nlist(n)
    if scaling == "fraction":
        probes = anchor["nprobe"] / anchor["nlist"] * lists
    elif scaling == "sqrt":
        probes = anchor["nprobe"] * math.sqrt(lists / anchor["nlist"])
    else:
        raise ValueError(f"nprobe scaling must be fraction or sqrt, got {scaling!r}")
    probes = min(lists, max(1, math.ceil(probes)))
    factory = f"IVF{lists},PQ{fastscan_pq_m(dim)}x4fs"
    train = approximate_knobs(IndexConfig(kind="ivf-fastscan"), factory, n)["train_rows"]
    return {"rows": n, "nlist": lists, "nprobe": probes, "train_rows": train, "factory": factory}


def product_cost(costs: dict) -> tuple[str | None, float | None]:
    """(stage, core-seconds) of one query x key x dim product, which prices the coarse ranking and the
    re-scoring: exact search's fitted cost, else the recall check's (the same exact products, on sampled
    queries), else (None, None)."""
    for stage in PRODUCT_COST_FROM:
        if stage in costs:
            return stage, costs[stage]["core_s_per_unit"]
    return None, None


def driver_bytes_per_row(measured: Path = DRIVER_MEMORY) -> float:
    """The driver's bytes per row of one side after the searches: bench/mine_driver_memory.py's measured growth
    per row (its results file). The lists stay on disk in the work folder and are read in chunks; what grows
    with the rows is the (n,) proposals both ways and the retrieval's 2n concatenated proposals, scores and
    sort order."""
    return float(json.loads(measured.read_text(encoding="utf-8"))["driver_bytes_per_row"])


def project(
    n: int,
    dim: int,
    nodes: int,
    costs: dict,
    anchor: dict,
    scaling: str,
    node_cores: int,
    network_gbit: float,
    k: int = 4,
    worker_base_gib: float = 1.0,
) -> dict:
    """Units and seconds per stage, wall seconds and memory of mining n x n rows at `dim` on `nodes` nodes (one
    key part each, sharing one index per direction); stages without a cost are listed under `not_fitted`."""
    index = side_index(n, dim, anchor, scaling)
    lists, part_rows = index["nlist"], math.ceil(n / nodes)
    cb = code_bytes(index["factory"], dim)
    fetch = FASTSCAN_REFINE * k  # candidates each part re-scores per query
    units = {  # both directions
        "train": 2 * KMEANS_ITERATIONS * index["train_rows"] * lists * dim,  # on the driver
        "add": 2 * n * lists * dim,  # every key to its list, spread over the workers
        "coarse": 2
        * n
        * lists
        * dim,  # each query ranked once against every centroid, spread over the workers
        "search": 2 * n * index["nprobe"] * n / lists * cb,  # the parts' shares of the probed lists
        "refine": 2 * n * nodes * fetch * dim,  # every part re-scores its own candidates
        "merge": 2 * n * nodes,
        "margin_retrieval": 2 * n,
        "io": 2 * n * dim * 4,
        "transfer": 2 * n * dim * 4,
        "recall": 2 * RECALL_QUERIES * n * dim,
    }
    product_stage, product = product_cost(costs)
    per_unit = {stage: cost["core_s_per_unit"] for stage, cost in costs.items()}
    per_unit |= {"coarse": product, "refine": product}
    cores = {"workers": nodes * node_cores, "driver": 1, "driver_cores": node_cores}
    seconds, missing = {}, []
    if "build" in per_unit:  # training on the driver's cores, then adding spread over the workers'
        train = units["train"] / cores["driver_cores"]
        seconds["build"] = per_unit["build"] * (train + units["add"] / cores["workers"])
    else:
        missing.append("build")
    for stage, unit in units.items():
        if stage in ("train", "add"):
            continue
        if per_unit.get(stage) is None:
            missing.append(stage)
            continue
        where = "workers" if stage in ("coarse", "refine") else STAGES[stage].where
        seconds[stage] = per_unit[stage] * unit / cores[where]
    # every node receives every query block once (not fitted: the assumed network)
    seconds["network"] = 2 * n * dim * 4 / (network_gbit * 1e9 / 8)
    wall = sum(seconds.values())
    worker_bytes = part_rows * (4 * dim + cb + ID_BYTES) + lists * dim * 4
    dominant = max(seconds, key=seconds.get)
    return {
        "rows_a_side": n,
        "dim": dim,
        "nodes": nodes,
        "index": {**index, "part_rows": part_rows, "refine": FASTSCAN_REFINE, "fetched_per_part": fetch},
        "units": units,
        "products_priced_by": product_stage,
        "seconds": {stage: round(s, 1) for stage, s in seconds.items()},
        "wall_s": round(wall, 1),
        "wall_h": round(wall / 3600, 2),
        "dominant_stage": dominant,
        "dominant_share": round(seconds[dominant] / wall, 3) if wall else None,
        "worker_memory_gib": round(worker_bytes / 2**30 + worker_base_gib, 1),
        "driver_memory_gib": round(n * driver_bytes_per_row() / 2**30 + worker_base_gib, 1),
        "not_fitted": missing,
    }


def nodes_for_memory(n: int, dim: int, node_gib: float, usable: float = 0.85, base_gib: float = 1.0) -> int:
    """Fewest nodes whose parts (float32 rows for re-scoring, codes, ids) and copy of the shared coarse
    quantizer fit `usable` of a node's memory, with the rows within HOLD_SHARE of it (what a worker holds)."""
    per_row = 4 * dim + fastscan_pq_m(dim) / 2 + ID_BYTES
    room = node_gib * usable - base_gib - fastscan_nlist(n) * dim * 4 / 2**30
    fits = math.ceil(n * per_row / 2**30 / room)
    held = math.ceil(n * 4 * dim / 2**30 / (node_gib * usable * HOLD_SHARE))
    return max(1, fits, held)


def nodes_for_time(n: int, dim: int, target_s: float, fixed: dict, max_nodes: int = 1 << 20) -> int | None:
    """Fewest nodes (at least the memory's) that finish within target_s, None where no count does. Wall time
    is a/nodes + b + c nodes (b: the driver's stages and the re-scoring each part repeats; c: the
    driver merges one partial list per node), so it falls to a minimum and rises again: nodes double until the
    target is met (then bisect) or the time rises (then no count meets it). `fixed` holds project()'s other
    arguments and node_gib."""
    args = {key: value for key, value in fixed.items() if key != "node_gib"}

    def wall(nodes: int) -> float:
        return project(n, dim, nodes, **args)["wall_s"]

    low = nodes_for_memory(n, dim, fixed["node_gib"])
    if wall(low) <= target_s:
        return low
    high = low
    while True:
        if high * 2 > max_nodes or wall(high * 2) >= wall(high):
            return None  # past the minimum (or the cap) without meeting the target
        high *= 2
        if wall(high) <= target_s:
            break
    low = high // 2  # wall(low) > target_s >= wall(high), on the falling side
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if wall(mid) <= target_s else (mid, high)
    return high


# ---- the command -----------------------------------------------------------------------------------------
def measured_runs(measured: dict, source: Path, dim: int | None) -> tuple[list[dict], int, int, int]:
    """(runs, rows a side, dim, host cores) of bench.mine_distributed's JSON, or of bench.mine_e2e's (one
    in-process run; its file records no dim: `dim` gives it)."""
    host_cores = (measured.get("machine") or {}).get("cpus") or 1
    if "mine" in measured:  # bench.mine_e2e: the sidecar's index and timings of one in-process run
        if not dim:
            raise SystemExit(f"{source}: a bench.mine_e2e result records no vector dim; give --dim")
        sidecar = measured["mine"].get("sidecar") or {}
        run = {"config": "local", "engine": {"kind": "local"}, "timings": sidecar.get("timings") or {}}
        run |= {"index": sidecar.get("index") or {}, "wall_s": measured["mine"].get("wall_s")}
        return [run], measured["settings"]["n"], dim, host_cores
    return (
        measured.get("runs") or [],
        measured["set"]["rows_a_side"],
        dim or measured["set"]["dim"],
        host_cores,
    )


def table(costs: dict, projections: list[dict]) -> str:
    lines = [f"{'stage':<17} {'core-s per unit':>16} {'unit':<38} {'runs':>4} {'max resid':>9}"]
    for stage, cost in costs.items():
        lines.append(
            f"{stage:<17} {cost['core_s_per_unit']:>16.3e} {STAGES[stage].unit:<38} {cost['runs']:>4} "
            f"{cost['max_relative_residual']:>9.3f}"
        )
    lines.append("")
    head = (
        f"{'rows a side':>13} {'dim':>5} {'nprobe':>8} {'probed':>12} {'nodes by':<8} {'nodes':>6} {'wall h':>9} "
        f"{'coarse h':>8} {'node GiB':>9} {'driver GiB':>10} {'dominant (share)':<24}"
    )
    lines += [head, "-" * len(head)]
    for p in projections:
        probed = f"{p['index']['nprobe']:,}/{p['index']['nlist']:,}"
        coarse = f"{p['seconds']['coarse'] / 3600:,.1f}" if "coarse" in p["seconds"] else "-"
        lines.append(
            f"{p['rows_a_side']:>13,} {p['dim']:>5} {p['scaling']:>8} {probed:>12} {p['why']:<8} {p['nodes']:>6,} "
            f"{p['wall_h']:>9,.1f} {coarse:>8} {p['worker_memory_gib']:>9,.1f} {p['driver_memory_gib']:>10,.1f} "
            f"{p['dominant_stage']} ({p['dominant_share']:.0%})"
            + ("" if p.get("driver_fits_node", True) else "  driver exceeds a node's memory")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", type=Path, default=FROM, help="bench.mine_distributed's JSON")
    ap.add_argument("--dim", type=int, default=None, help="the vectors' dim, for a bench.mine_e2e file")
    ap.add_argument("--runs", default=None, help="configurations to fit on (default: every run in the file)")
    ap.add_argument("--node-cores", type=int, default=64)
    ap.add_argument("--node-gib", type=float, default=256.0)
    ap.add_argument("--network-gbit", type=float, default=10.0, help="each node's network (assumed)")
    ap.add_argument(
        "--target-hours", type=float, default=24.0, help="also size the cluster to finish in this"
    )
    ap.add_argument(
        "--overheads",
        type=Path,
        default=None,
        help="a bench.mine_distributed JSON whose Ray runs fit the driver's merge and transfer costs (the other "
        "stages come from --from: e.g. a realistic set whose index meets the recall target)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    measured = json.loads(args.source.read_text(encoding="utf-8"))
    runs, rows, dim, host_cores = measured_runs(measured, args.source, args.dim)
    if args.runs:
        wanted = set(args.runs.split(","))
        runs = [run for run in runs if run.get("config") in wanted]
    if not runs:
        raise SystemExit(f"{args.source}: no runs to fit (bench.mine_distributed writes them)")
    costs = fit([observations(run, rows, dim, host_cores) for run in runs])
    overheads = None
    if args.overheads is not None:
        other = json.loads(args.overheads.read_text(encoding="utf-8"))
        o_runs, o_rows, o_dim, o_cores = measured_runs(other, args.overheads, None)
        o_costs = fit([observations(run, o_rows, o_dim, o_cores) for run in o_runs])
        overheads = {stage: o_costs[stage] for stage in ("merge", "transfer") if stage in o_costs}
        costs |= overheads
    anchor = nprobe_anchor(runs)
    if anchor is None or "search" not in costs:
        raise SystemExit(
            f"{args.source}: no approximate-index run with a measured recall to scale the search from; run "
            "bench.mine_distributed with an IVF index (its default at 1M rows, or --index ivf-fastscan)"
        )
    projections, unmet = [], []  # unmet: no node count finishes within --target-hours
    for n in SIZES:
        for d in DIMS:
            for scaling in ("fraction", "sqrt"):
                fixed = {"costs": costs, "anchor": anchor, "scaling": scaling, "node_cores": args.node_cores}
                fixed["network_gbit"] = args.network_gbit
                by_memory = nodes_for_memory(n, d, args.node_gib)
                projections.append({**project(n, d, by_memory, **fixed), "scaling": scaling, "why": "memory"})
                timed = nodes_for_time(n, d, args.target_hours * 3600, {**fixed, "node_gib": args.node_gib})
                if timed is None:
                    unmet.append({"rows_a_side": n, "dim": d, "scaling": scaling})
                elif timed != by_memory:
                    projections.append({**project(n, d, timed, **fixed), "scaling": scaling, "why": "time"})
    for p in projections:
        p["driver_fits_node"] = p["driver_memory_gib"] <= args.node_gib * 0.85
    result = {
        "what": "sentkit mine cost model: per-unit costs fitted on measured runs, projected to 100M and 1B rows",
        "fitted_on": {
            "file": str(args.source),
            "runs": [run.get("config") for run in runs],
            "rows": rows,
            "dim": dim,
            "host_cores": host_cores,
            "host": measured.get("machine"),
            "overheads_from": str(args.overheads) if overheads else None,
        },
        "fit_method": "least squares through the origin per stage: cost = sum(u t) / sum(u^2), u = units/cores",
        "stages": {name: vars(stage) for name, stage in STAGES.items()},
        "costs": costs,
        "not_fitted": [stage for stage in STAGES if stage not in costs],
        "anchor_index": anchor,
        "assumptions": {
            "index": "one IVF fast-scan index per direction, trained once on the driver (lists the power of two "
            "nearest 2 sqrt(n) of the whole side, 4-bit codes of d/4 bytes); every node adds its part's keys to "
            "a copy and re-scores 64 x k candidates of its own from float32 rows held in memory",
            "nprobe_scaling": {
                "fraction": "the anchor's share of the lists is probed (codes scanned per query grow with n; "
                "the recall the anchor measured is assumed to hold)",
                "sqrt": "nprobe grows with sqrt(lists) from the anchor's (codes per query grow with sqrt(n); "
                "optimistic, recall not measured at this scale)",
            },
            "recall_target": RECALL_TARGET,
            "anchor_recall_meets_target": anchor["recall_at_k"] >= RECALL_TARGET,
            "node": {
                "cores": args.node_cores,
                "memory_gib": args.node_gib,
                "network_gbit": args.network_gbit,
            },
            "per_core_speed": "the fitted host's, per core, on every node",
            "worker_rows": f"held in memory: the node count keeps them within {HOLD_SHARE} of usable memory",
            "driver": "one process reads the query blocks, merges the parts' lists and, after the searches, "
            "completes, scores and retrieves from the lists on disk, read in chunks",
            "layout": "keys split by rows, one part per node, all parts sharing the lists: the codes scanned per "
            "query and the coarse ranking (each query ranked once, spread over the workers) do not grow with "
            "the nodes; every part re-scores its own candidates and the driver merges one partial list per "
            "part, so those grow with the nodes",
            "products": "coarse and refine are priced at the first of "
            f"{', '.join(PRODUCT_COST_FROM)} fitted (per query x key x dim product)",
        },
        "target_hours": args.target_hours,
        "projections": projections,
        "target_not_met": unmet,
        "published": PUBLISHED,
        **provenance(),
    }
    print(table(costs, projections), flush=True)
    for miss in unmet:
        print(
            f"{miss['rows_a_side']:,} x {miss['dim']} ({miss['scaling']}): no node count finishes in "
            f"{args.target_hours} h (the stages more nodes do not shorten, the re-scoring each part repeats and "
            "the driver's, alone take longer)",
            flush=True,
        )
    print(f"anchor index: {anchor}; not fitted: {result['not_fitted'] or 'none'}", flush=True)
    priced = product_cost(costs)[0]
    print(f"coarse and refine priced per product by: {priced or 'nothing fitted (left out)'}", flush=True)
    for entry in PUBLISHED:
        print(f"{entry['name']}: {entry['found']['sentences_searched']}; {entry['not_found']}", flush=True)
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
