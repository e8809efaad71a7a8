"""Pairs from scored candidates: each x proposes its best-scoring neighbour y, each y its best x.

"max" (Artetxe & Schwenk 2019, LASER's default for mining) takes all proposals best first and keeps one
only when neither side is paired yet (one-to-one); "intersect" keeps the pairs both sides propose;
"union" keeps every distinct proposal (a sentence may then appear in several pairs); "forward" and
"backward" keep one direction's proposals.
"""

from __future__ import annotations

import numpy as np

from sentkit.mining.margin import Neighbours

RETRIEVALS = ("max", "intersect", "union", "forward", "backward")
CHUNK = 1 << 20  # proposals matched at a time by the one-to-one loop


def select_pairs(
    neighbours: Neighbours, x_scores: np.ndarray, y_scores: np.ndarray, retrieval: str = "max"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x rows, y rows, scores) of the retrieved pairs, best score first (ties keep proposal order)."""
    _, x_nn, _, y_nn = neighbours
    nx, ny = len(x_scores), len(y_scores)
    x_best = x_scores.argmax(axis=1)  # (nx,) column of each x's best neighbour
    y_best = y_scores.argmax(axis=1)  # (ny,)
    proposals = (
        x_nn[np.arange(nx), x_best],  # (nx,) the y each x proposes
        x_scores[np.arange(nx), x_best],
        y_nn[np.arange(ny), y_best],  # (ny,) the x each y proposes
        y_scores[np.arange(ny), y_best],
    )
    return select_proposals(proposals, retrieval)


def select_proposals(proposals: tuple[np.ndarray, ...], retrieval: str = "max") -> tuple[np.ndarray, ...]:
    """(x rows, y rows, scores) retrieved from each row's proposal (margin.best_proposals: fwd_trg, fwd_score,
    bwd_src, bwd_score), best score first (ties keep proposal order)."""
    if retrieval not in RETRIEVALS:
        raise ValueError(f"retrieval must be one of {', '.join(RETRIEVALS)}, got {retrieval!r}")
    fwd_trg, fwd_score, bwd_src, bwd_score = proposals
    nx, ny = len(fwd_trg), len(bwd_src)
    if retrieval == "forward":
        return _sorted(np.arange(nx), fwd_trg, fwd_score)
    if retrieval == "backward":
        return _sorted(bwd_src, np.arange(ny), bwd_score)
    if retrieval == "intersect":
        mutual = bwd_src[fwd_trg] == np.arange(nx)  # (nx,) y's proposal is this x again
        return _sorted(np.flatnonzero(mutual), fwd_trg[mutual], fwd_score[mutual])
    src = np.concatenate([np.arange(nx), bwd_src])
    trg = np.concatenate([fwd_trg, np.arange(ny)])
    score = np.concatenate([fwd_score, bwd_score])
    order = np.argsort(-score, kind="stable")
    if retrieval == "union":
        # a pair proposed both ways scores the same both ways; keep its first proposal
        _, first = np.unique(np.stack([src[order], trg[order]], axis=1), axis=0, return_index=True)
        keep = order[np.sort(first)]
        return src[keep].astype(np.int64), trg[keep].astype(np.int64), score[keep]
    return _one_to_one(src, trg, score, order)


def _one_to_one(src, trg, score, order) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy best-first matching: a proposal is kept when neither its x nor its y is paired yet."""
    seen_src = np.zeros(int(src.max(initial=-1)) + 1, dtype=bool)
    seen_trg = np.zeros(int(trg.max(initial=-1)) + 1, dtype=bool)
    kept = np.zeros(len(order), dtype=bool)  # by position in `order`: one byte a proposal
    for start in range(0, len(order), CHUNK):  # Python ints for a chunk at a time, not for every proposal
        chunk = order[start : start + CHUNK]
        for at, (s, t) in enumerate(zip(src[chunk].tolist(), trg[chunk].tolist()), start):
            if seen_src[s] or seen_trg[t]:
                continue
            seen_src[s] = seen_trg[t] = True
            kept[at] = True
    keep = order[kept]
    return src[keep].astype(np.int64), trg[keep].astype(np.int64), score[keep]


def _sorted(src, trg, score) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(-score, kind="stable")
    return src[order].astype(np.int64), trg[order].astype(np.int64), score[order]
