"""Inverted-list layouts compared by what a query scans: list count, and a second list per key (spilling).

An IVF search costs about the number of codes it scans; it keeps a neighbour only if the neighbour's list is
among those probed (bench/research/mine_fastscan_grid.py: 4-bit codes and 64 x k re-scored candidates never lose a
planted partner whose list was probed). So two layouts can be compared without building their indexes:
train the coarse quantizer as `sentkit mine` does, assign every key to its list, and for sampled queries
count the codes in the lists probed, the share of exact top-k neighbours whose list was probed, and the same
share for planted partners.

Layouts:
- `--nlist`: list counts (the preset's is about 2 sqrt(n): 2048 at 1M); nprobe is scaled with the count, so
  each column probes the same share of the lists;
- `--spill`: for the first list count, each key also goes to a second list, chosen as SOAR does for inner
  products (Sun et al., 2023): the list c minimising ||y - c||^2 + lambda <r, y - c>^2 / ||r||^2, with
  r = y - c1 the residual to its own list. lambda 0 is the second-nearest list. The index then holds every
  key twice, so its lists are longer; compare rows by codes scanned.
- `--two-way`: one pass that serves both directions, from the other direction's probes (lists of a quantizer
  trained on this direction's query side): `reverse`, every row of the other side scans its own nprobe
  lists, and a query sees a key when the query's list is among the key's probed lists (so the one pass's
  products give both directions' neighbours); `group-union`, the other side's rows grouped by their nearest
  list, each group scanning the union of its members' lists. Their `codes_scanned_per_query` is what the
  one pass scans per row of the other side, for both directions together: compare it with the sum of the
  two directions' own scans.

    python -m bench.research.mine_lists --half A --n 1000000 --nlist 1024,2048,4096 --spill 0,1,2
    python -m bench.research.mine_lists --half A --n 1000000 --two-way
    python -m bench.research.mine_lists --small      # a tiny synthetic cache: the script runs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.common import provenance, write_result
from bench.mine_e2e import add_sample_args, sampled_directed
from sentkit.mining.approximate import train_size
from sentkit.mining.search import fastscan_nlist
from sentkit.provenance import cpu_flags

OUT = Path(__file__).resolve().parents[1] / "out" / "mine_lists.json"
SHARES = "8,16,24,32,48,64"  # lists probed per 2048 lists: the preset's tuning starts at 8 and reached 32


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sample_args(ap, half="A", queries=2000, direction="backward")
    ap.add_argument("--nlist", default="", help="list counts, e.g. 1024,2048,4096 (default: the preset's)")
    ap.add_argument("--spill", default="", help="spill lambdas for the first list count, e.g. 0,1,2")
    ap.add_argument("--two-way", action="store_true", help="also one pass for both directions (see above)")
    ap.add_argument("--shares", default=SHARES, help="lists probed per 2048 lists (scaled to each count)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    d = sampled_directed(args)
    y = np.ascontiguousarray(d["y"], dtype=np.float32)
    q, nn, pq, p_key, in_exact = (d[k] for k in ("q", "exact_rows", "pq", "p_key", "in_exact"))
    counts = [int(v) for v in args.nlist.split(",") if v.strip()] or [fastscan_nlist(len(y))]
    spills = [float(v) for v in args.spill.split(",") if v.strip()]
    layouts, cells = [], []
    for i, nlist in enumerate(counts):
        centroids, own, quantizer, layout = trained_lists(y, nlist, args.seed)
        layouts.append(layout)
        print(layout, flush=True)
        probes = probes_of(nlist, args.shares)
        # the lists each query and each planted query visits, (nq, nprobe), whatever the keys' layout
        visited = {p: (quantizer.search(q, p)[1], quantizer.search(pq, p)[1]) for p in probes}
        for lam in [None] + (spills if i == 0 else []):
            second = None if lam is None else spilled(y, centroids, own, lam)
            for probe in probes:
                cell = {"nlist": nlist, "spill_lambda": lam, "nprobe": probe}
                cell |= scanned(nlist, own, second, *visited[probe], nn, p_key, in_exact)
                cells.append(cell)
                print(cell, flush=True)
    if args.two_way:
        for cell in two_way(d, counts[0], probes_of(counts[0], args.shares), args.seed):
            cells.append(cell)
            print(cell, flush=True)
    result = {
        "what": "IVF layouts by codes scanned per query against the share of exact neighbours and of planted "
        "partners whose inverted list is probed (quantizer only, no codes)",
        "partner_in_exact_topk": round(float(in_exact.mean()), 4),
        "partner_queries": int(in_exact.sum()),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "set": d["info"],
        "build_set_s": round(d["built_s"], 1),
        "layouts": layouts,
        "cells": cells,
        "cpu_flags": cpu_flags(),
        **provenance(),
    }
    return write_result(args.out, result)


def probes_of(nlist: int, shares: str) -> list[int]:
    """nprobe values probing the same share of `nlist` lists as `shares` do of 2048."""
    return sorted({min(nlist, max(1, int(share) * nlist // 2048)) for share in shares.split(",")})


def two_way(d: dict, nlist: int, probes: list[int], seed: int) -> list[dict]:
    """The `--two-way` cells: lists trained on the query side, probed by every row of the key side."""
    x, y = (np.ascontiguousarray(d[k], dtype=np.float32) for k in ("x", "y"))
    _, own_x, quantizer, _ = trained_lists(x, nlist, seed)
    sizes = np.bincount(own_x, minlength=nlist)
    top = quantizer.search(y, max(probes))[1]  # (ny, max nprobe): each key-side row's lists, nearest first
    group = top[:, 0]  # a key-side row's nearest list of the query side
    q_list = quantizer.search(d["q"], 1)[1][:, 0]  # (nq,)
    p_list = quantizer.search(d["pq"], 1)[1][:, 0]
    nn, p_key, in_exact = d["exact_rows"], d["p_key"], d["in_exact"]
    cells = []
    for probe in probes:
        lists = top[:, :probe]
        partner_seen = (lists[p_key] == p_list[:, None]).any(axis=1)  # (npq,)
        reverse = {
            "codes_scanned_per_query": round(float(sizes[lists].sum(axis=1).mean())),
            "neighbour_list_probed": round(float((lists[nn] == q_list[:, None, None]).any(axis=2).mean()), 4),
            "partner_list_probed": round(float(partner_seen[in_exact].mean()), 4),
        }
        # (group, list): some member of the group probes the list
        union = np.zeros((nlist, nlist), dtype=bool)
        union[np.repeat(group, probe), lists.ravel()] = True
        scanned = union.astype(np.int64) @ sizes  # (nlist,) codes a member of each group scans
        grouped = {
            "codes_scanned_per_query": round(float(scanned[group].mean())),
            "lists_per_group": round(float(union[np.unique(group)].sum(axis=1).mean()), 1),
            "neighbour_list_probed": round(float(union[group[nn], q_list[:, None]].mean()), 4),
            "partner_list_probed": round(float(union[group[p_key], p_list][in_exact].mean()), 4),
        }
        for layout, found in (("reverse", reverse), ("group-union", grouped)):
            cells.append({"nlist": nlist, "two_way": layout, "nprobe": probe} | found)
    return cells


def trained_lists(y: np.ndarray, nlist: int, seed: int) -> tuple:
    """(centroids (nlist, d), each key's list (n,), quantizer, record): the coarse quantizer of `IVF<nlist>`
    trained on the sample `sentkit mine` draws (inner product, FAISS's k-means), as an exact inner-product
    index over the centroids, and every key assigned to it."""
    import faiss

    factory = f"IVF{nlist},Flat"  # the same first level as the preset's IVF<nlist>,PQ<m>x4fs
    index = faiss.index_factory(y.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    rows = train_size(len(y), factory)
    sample = np.sort(np.random.default_rng(seed).choice(len(y), size=rows, replace=False))
    start = time.perf_counter()
    index.train(y[sample])
    train_s = time.perf_counter() - start
    centroids = faiss.extract_index_ivf(index).quantizer.reconstruct_n(0, nlist)
    quantizer = faiss.IndexFlatIP(y.shape[1])  # outlives `index`
    quantizer.add(centroids)
    own = quantizer.search(y, 1)[1][:, 0]
    sizes = np.bincount(own, minlength=nlist)
    # what a query drawn like the keys scans per list probed, over the mean list: sum n_i^2 * nlist / n^2
    imbalance = float((sizes.astype(np.float64) ** 2).sum() * nlist / len(y) ** 2)
    record = {
        "nlist": nlist,
        "train_rows": rows,
        "train_s": round(train_s, 1),
        "imbalance": round(imbalance, 2),
    }
    return centroids, own, quantizer, record


def spilled(y: np.ndarray, centroids: np.ndarray, own: np.ndarray, lam: float, block: int = 50_000):
    """Each key's second list: argmin over c != c1 of ||y - c||^2 + lam <r, y - c>^2 / ||r||^2, r = y - c1."""
    norms = (centroids * centroids).sum(axis=1)  # (nlist,)
    out = np.empty(len(y), dtype=np.int64)
    for start in range(0, len(y), block):
        rows = y[start : start + block]
        mine = own[start : start + block]
        r = rows - centroids[mine]  # (b, d)
        r2 = (r * r).sum(axis=1, keepdims=True) + 1e-12
        ip = rows @ centroids.T  # (b, nlist)
        dist2 = (rows * rows).sum(axis=1, keepdims=True) - 2 * ip + norms
        along = (r * rows).sum(axis=1, keepdims=True) - r @ centroids.T  # <r, y - c>
        cost = dist2 + lam * along * along / r2
        cost[np.arange(len(rows)), mine] = np.inf
        out[start : start + block] = cost.argmin(axis=1)
    return out


def scanned(nlist, own, second, probed, p_probed, nn, p_key, in_exact) -> dict:
    """Codes scanned per query and the shares of neighbours / partners whose list (either list) is probed;
    `probed` / `p_probed` (nq, nprobe) are the lists the queries / planted queries visit."""
    sizes = np.bincount(own, minlength=nlist)
    if second is not None:
        sizes = sizes + np.bincount(second, minlength=nlist)

    def hit(keys: np.ndarray, lists: np.ndarray) -> np.ndarray:  # keys (nq, m) -> (nq, m) list probed
        found = (lists[:, :, None] == own[keys][:, None, :]).any(axis=1)
        if second is not None:
            found |= (lists[:, :, None] == second[keys][:, None, :]).any(axis=1)
        return found

    partner_hit = hit(p_key[:, None], p_probed)[:, 0]
    return {
        "codes_scanned_per_query": round(float(sizes[probed].sum(axis=1).mean())),
        "neighbour_list_probed": round(float(hit(nn, probed).mean()), 4),
        "partner_list_probed": round(float(partner_hit[in_exact].mean()), 4) if in_exact.any() else None,
    }


if __name__ == "__main__":
    main()
