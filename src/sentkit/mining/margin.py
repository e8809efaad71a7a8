"""Candidate scores from k-NN lists: cosine, or the ratio margin of Artetxe & Schwenk (2019).

The margin divides a pair's cosine by the mean cosine of each side's k nearest neighbours, which are
computed once over the whole other side (never per shard of it: a shard's neighbours are fewer and
farther, its means lower and its margins inflated, so more pairs pass a threshold).
"""

from __future__ import annotations

import numpy as np

DEFAULT_K = 4  # neighbourhood size of Artetxe & Schwenk (2019)
SCORINGS = ("margin", "cosine")
SCORE_ROWS = 1 << 20  # list rows scored at a time: the lists may be memory maps of a work folder

# (x_sims (nx, k), x_nn (nx, k), y_sims (ny, k), y_nn (ny, k)): the k nearest y of each x and x of each y
Neighbours = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def ratio_margin(cos: np.ndarray, x_knn_mean: np.ndarray, y_knn_mean: np.ndarray) -> np.ndarray:
    """Artetxe & Schwenk (2019) ratio margin: cos(x,y) / (sum_k cos(x,nn)/2k + sum_k cos(y,nn)/2k).

    Each sum over the k neighbours divided by 2k is half the mean neighbour similarity, so the
    denominator is the average of x's and y's mean k-NN cosine (their neighbourhood density). Where it is 0
    (zero vectors, whose cosines are all 0) the score is 0, not 0/0.
    """
    cos, denominator = np.broadcast_arrays(np.asarray(cos), np.asarray((x_knn_mean + y_knn_mean) / 2))
    out = np.zeros(cos.shape, dtype=np.result_type(cos, denominator))
    return np.divide(cos, denominator, out=out, where=denominator != 0)


def candidate_scores(neighbours: Neighbours, scoring: str = "margin") -> tuple[np.ndarray, np.ndarray]:
    """(x_scores (nx, k), y_scores (ny, k)): the score of each x with each of its k neighbours, and of each
    y with each of its neighbours, by `scoring` ("margin" or "cosine")."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be 'cosine' or 'margin', got {scoring!r}")
    x_sims, x_nn, y_sims, y_nn = neighbours
    if scoring == "cosine":
        return x_sims, y_sims
    x_mean, y_mean = x_sims.mean(axis=1), y_sims.mean(axis=1)  # (nx,), (ny,)
    x_scores = ratio_margin(x_sims, x_mean[:, None], y_mean[x_nn])  # (nx, k)
    y_scores = ratio_margin(y_sims, y_mean[:, None], x_mean[y_nn])  # (ny, k)
    return x_scores, y_scores


def knn_means(sims: np.ndarray) -> np.ndarray:
    """(n,) each row's mean similarity over its k neighbours, SCORE_ROWS rows at a time (a row's mean does not
    depend on the others, so the result equals `sims.mean(axis=1)`)."""
    out = np.empty(len(sims), dtype=np.result_type(sims.dtype, np.float32))
    for start in range(0, len(sims), SCORE_ROWS):
        out[start : start + SCORE_ROWS] = np.asarray(sims[start : start + SCORE_ROWS]).mean(axis=1)
    return out


def best_proposals(neighbours: Neighbours, scoring: str = "margin") -> tuple[np.ndarray, ...]:
    """(fwd_trg (nx,), fwd_score (nx,), bwd_src (ny,), bwd_score (ny,)): the neighbour each row proposes (its
    best-scoring one, the first on ties) and its score, as `candidate_scores` then an argmax per row would give,
    computed SCORE_ROWS rows at a time: only (n,) arrays are held, the (n, k) lists may stay on disk."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be 'cosine' or 'margin', got {scoring!r}")
    x_sims, x_nn, y_sims, y_nn = neighbours
    means = (knn_means(x_sims), knn_means(y_sims)) if scoring == "margin" else None
    out = []
    for sims, nn, own, other in ((x_sims, x_nn, 0, 1), (y_sims, y_nn, 1, 0)):
        target = np.empty(len(nn), dtype=np.int64)
        score = np.empty(len(nn), dtype=np.result_type(sims.dtype, np.float32))
        for start in range(0, len(nn), SCORE_ROWS):
            rows = slice(start, start + SCORE_ROWS)
            s, n = np.asarray(sims[rows]), np.asarray(nn[rows])
            if means is not None:
                s = ratio_margin(s, means[own][rows, None], means[other][n])
            best = s.argmax(axis=1)
            at = np.arange(len(s))
            target[rows], score[rows] = n[at, best], s[at, best]
        out += [target, score]
    return tuple(out)
