"""Where the ivf-fastscan preset's recall stops: nprobe x refine on one realistic set, one index built once.

`sentkit mine`'s nprobe tuning doubles the probes until the recall target or a plateau. When the plateau
comes first, the 4-bit codes and the number of candidates re-scored exactly (refine x k) limit the recall,
not the lists. This script builds the preset's index once over the target side of a realistic set
(bench/mine_real_sets.py, the same half, seed and construction as bench/research/mine_real.py and mine_e2e.py), and
on sampled source queries whose exact top k is known it measures recall@k and the search seconds at every
(nprobe, refine) pair; the seconds per query times the row count estimate one direction's full search.
Choose on half A; report on half B with bench/mine_e2e.py.

`--direction backward` searches target queries over the source side instead. Either way, a second sample of
queries with a planted translation follows where the index loses that partner: among the queries whose
exact top k holds it, the share whose partner's inverted list is among the nprobe probed, the share that has
it among the refine x k candidates fetched, and the share that keeps it in the top k after re-scoring.

    python -m bench.research.mine_fastscan_grid --half A --n 1000000 --nprobe 16,32,64,128 --refine 16,32,64
    python -m bench.research.mine_fastscan_grid --half A --n 1000000 --direction backward
    python -m bench.research.mine_fastscan_grid --small      # a tiny synthetic cache: the script runs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.common import provenance, write_result
from bench.mine_e2e import add_sample_args, sampled_directed
from sentkit.mining.approximate import (
    built_index,
    candidate_products,
    rescored_topk,
    search_params,
)
from sentkit.mining.exact import UnitRows
from sentkit.mining.recall import found_share
from sentkit.mining.search import IndexConfig, fastscan_factory
from sentkit.provenance import cpu_flags

OUT = Path(__file__).resolve().parents[1] / "out" / "mine_fastscan_grid.json"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sample_args(ap, half="A", queries=1000, direction="forward")
    ap.add_argument("--nprobe", default="16,32,64,128")
    ap.add_argument("--refine", default="16,32,64")
    ap.add_argument(
        "--pq-m", default="", help="sub-quantizers to compare, e.g. 192,96 (default: the preset's)"
    )
    ap.add_argument(
        "--nlist", default="", help="inverted lists to compare, e.g. 2048,4096 (default: the preset's)"
    )
    ap.add_argument(
        "--factory", default="", help="FAISS factory strings separated by ';' (instead of --pq-m / --nlist)"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    d = sampled_directed(args)
    x, y, q, exact_s, pq, p_key, in_exact = (
        d[k] for k in ("x", "y", "q", "exact_sims", "pq", "p_key", "in_exact")
    )
    grid, indexes = [], []
    factories = [f.strip() for f in args.factory.split(";") if f.strip()] or [
        fastscan_factory(len(y), y.shape[1], IndexConfig(nlist=nlist, pq_m=pq_m))
        for nlist in _ints(args.nlist) or [None]
        for pq_m in _ints(args.pq_m) or [None]
    ]
    for factory in factories:
        index, _, sample, build_s = built_index(
            UnitRows(y), factory, seed=args.seed
        )  # as `sentkit mine` does
        indexes.append({"factory": factory, "train_rows": sample, **build_s})
        print(indexes[-1], flush=True)
        grid += _cells(args, factory, index, q, y, exact_s, pq, p_key, in_exact, len(x))
        del index
    result = {
        "what": "ivf-fastscan recall@k, search time and where planted partners are lost, at each (nprobe, "
        "refine), one index, sampled queries",
        "partner_in_exact_topk": round(float(in_exact.mean()), 4),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "set": d["info"],
        "indexes": indexes,
        "build_set_s": round(d["built_s"], 1),
        "grid": grid,
        "cpu_flags": cpu_flags(),
        **provenance(),
    }
    return write_result(args.out, result)


def _transformed(index, rows: np.ndarray) -> np.ndarray:
    """`rows` as the index's coarse quantizer sees them: through its pre-transforms (OPQ, PCA, ...), if any."""
    import faiss

    rows = np.ascontiguousarray(rows, dtype=np.float32)
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexPreTransform):
        for i in range(index.chain.size()):
            rows = faiss.downcast_VectorTransform(index.chain.at(i)).apply_py(rows)
    return rows


def _cells(args, factory, index, q, y, exact_s, pq, p_key, in_exact, n_queries: int) -> list[dict]:
    """Every (nprobe, refine) cell of one built index: recall@k, seconds and where planted partners go."""
    import faiss

    ivf = faiss.extract_index_ivf(index)  # its coarse quantizer assigns rows to inverted lists
    p_list = ivf.quantizer.search(_transformed(index, y[p_key]), 1)[1][:, 0]  # the partner's inverted list
    grid = []
    for probe in _ints(args.nprobe):
        search_params(index, factory, probe, None, args.k)  # an HNSW quantizer's width, as searched below
        probed = ivf.quantizer.search(_transformed(index, pq), probe)[1]
        in_probed = (probed == p_list[:, None]).any(axis=1)
        for refine in _ints(args.refine):
            fetch = refine * args.k
            search_params(index, factory, probe, None, fetch)
            start = time.perf_counter()
            cand = index.search(q, fetch)[1]
            scan_s = time.perf_counter() - start
            approx = candidate_products(q, y, cand)
            sims, found = rescored_topk(q, cand, args.k, lambda c: y[np.maximum(c, 0)], approx)
            total_s = time.perf_counter() - start
            p_cand = index.search(pq, fetch)[1]
            _, p_found = rescored_topk(pq, p_cand, args.k, lambda c: y[np.maximum(c, 0)])
            cell = {
                "factory": factory,
                "nprobe": probe,
                "refine": refine,
                "recall_at_k": round(found_share(sims, found, exact_s[:, -1]), 4),
                "scan_s_per_1k_queries": round(scan_s / len(q) * 1000, 3),
                "search_s_per_1k_queries": round(total_s / len(q) * 1000, 3),
                "one_direction_s_estimate": round(total_s / len(q) * n_queries, 1),
                # of the planted queries whose exact top k holds the partner: where the index keeps it
                "partner_queries": int(in_exact.sum()),
                "partner_list_probed": _share(in_probed, in_exact),
                "partner_fetched": _share((p_cand == p_key[:, None]).any(axis=1), in_exact),
                "partner_in_topk": _share((p_found == p_key[:, None]).any(axis=1), in_exact),
            }
            grid.append(cell)
            print(cell, flush=True)
    return grid


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def _share(hit: np.ndarray, among: np.ndarray) -> float | None:
    """The share of `hit` among the rows where `among` holds (None where none does)."""
    return round(float(hit[among].mean()), 4) if among.any() else None


if __name__ == "__main__":
    main()
