"""Where the ivf-fastscan preset's recall stops: nprobe x refine on one realistic set, one index built once.

`sentkit mine`'s nprobe tuning doubles the probes until the recall target or a plateau. When the plateau
comes first, the 4-bit codes and the number of candidates re-scored exactly (refine x k) limit the recall,
not the lists. This script builds the preset's index once over the target side of a realistic set
(bench/mine_real_sets.py, the same half, seed and construction as bench/mine_real.py and mine_e2e.py), and
on sampled source queries whose exact top k is known it measures recall@k and the search seconds at every
(nprobe, refine) pair; the seconds per query times the row count estimate one direction's full search.
Choose on half A; report on half B with bench/mine_e2e.py.

    python bench/mine_fastscan_grid.py --half A --n 1000000 --nprobe 16,32,64,128 --refine 16,32,64
    python bench/mine_fastscan_grid.py --small      # a tiny synthetic cache: the script runs
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import provenance, write_result  # noqa: E402
from mine_e2e import add_set_args, build  # noqa: E402

from sentkit.mining.approximate import (  # noqa: E402
    built_index,
    candidate_products,
    rescored_topk,
    search_params,
)
from sentkit.mining.exact import UnitRows, exact_search  # noqa: E402
from sentkit.mining.gemm import cpu_flags  # noqa: E402
from sentkit.mining.recall import found_share  # noqa: E402
from sentkit.mining.search import IndexConfig, fastscan_factory  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "mine_fastscan_grid.json"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_set_args(ap, half="A")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--nprobe", default="16,32,64,128")
    ap.add_argument("--refine", default="16,32,64")
    ap.add_argument("--small", action="store_true", help="a tiny synthetic cache, 3,000 rows a side")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.small:
        args.n = 3000
    began = time.perf_counter()
    x, y, _, info = build(args)
    built_s = time.perf_counter() - began
    factory = fastscan_factory(len(y), y.shape[1], IndexConfig())
    index, _, sample, build_s = built_index(
        UnitRows(y), factory, seed=args.seed
    )  # as `sentkit mine` builds it
    rows = np.sort(np.random.default_rng([args.seed, 7]).choice(len(x), size=args.queries, replace=False))
    q = x[rows]
    exact_s, _, _ = exact_search(UnitRows(q), UnitRows(y), args.k, "float32")
    grid = []
    for probe in (int(p) for p in args.nprobe.split(",")):
        for refine in (int(r) for r in args.refine.split(",")):
            fetch = refine * args.k
            search_params(index, factory, probe, None, fetch)
            start = time.perf_counter()
            cand = index.search(q, fetch)[1]
            scan_s = time.perf_counter() - start
            approx = candidate_products(q, y, cand)
            sims, found = rescored_topk(q, cand, args.k, lambda c: y[np.maximum(c, 0)], approx)
            total_s = time.perf_counter() - start
            cell = {
                "nprobe": probe,
                "refine": refine,
                "recall_at_k": round(found_share(sims, found, exact_s[:, -1]), 4),
                "scan_s_per_1k_queries": round(scan_s / len(q) * 1000, 3),
                "search_s_per_1k_queries": round(total_s / len(q) * 1000, 3),
                "one_direction_s_estimate": round(total_s / len(q) * len(x), 1),
            }
            grid.append(cell)
            print(cell, flush=True)
    result = {
        "what": "ivf-fastscan recall@k and search time at each (nprobe, refine), one index, sampled queries",
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "set": info,
        "factory": factory,
        "train_rows": sample,
        "build_set_s": round(built_s, 1),
        **build_s,
        "grid": grid,
        "cpu_flags": cpu_flags(),
        **provenance(),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
