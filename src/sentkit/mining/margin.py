"""Candidate scores from k-NN lists: cosine, or the ratio margin of Artetxe & Schwenk (2019).

The margin divides a pair's cosine by the mean cosine of each side's k nearest neighbours, which are
computed once over the whole other side (never per shard of it: a shard's neighbours are fewer and
farther, its means lower and its margins inflated, so more pairs pass a threshold).
"""

from __future__ import annotations

import numpy as np

DEFAULT_K = 4  # neighbourhood size of Artetxe & Schwenk (2019)
SCORINGS = ("margin", "cosine")

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
