"""Margin scores and retrieval on a hand-computed case; margins use k-NN means over the whole other side."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.mining.exact import cosine_knn
from sentkit.mining.margin import candidate_scores, ratio_margin
from sentkit.mining.mine import MineConfig, mine
from sentkit.mining.retrieval import select_pairs
from sentkit.mining.vectors import ArrayVectors

# unit vectors: cos(x0, y) = (1, .6, 0), cos(x1, y) = (0, .8, 1)
X = np.array([[1, 0], [0, 1]], dtype=np.float32)
Y = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)


def _neighbours(k=2):
    x_sims, x_nn = cosine_knn(X, Y, k)
    y_sims, y_nn = cosine_knn(Y, X, k)
    return x_sims, x_nn, y_sims, y_nn


def test_ratio_margin_by_hand():
    # k = 2 means: x0 (1 + .6)/2 = .8, x1 (1 + .8)/2 = .9; y0 (1 + 0)/2 = .5, y1 (.8 + .6)/2 = .7, y2 .5
    x_scores, y_scores = candidate_scores(_neighbours(), "margin")
    # x0's neighbours y0, y1: 1 / ((.8 + .5)/2) = 1/.65, .6 / ((.8 + .7)/2) = .8
    np.testing.assert_allclose(x_scores[0], [1 / 0.65, 0.8], rtol=1e-6)
    # x1's neighbours y2, y1: 1 / ((.9 + .5)/2) = 1/.7, .8 / ((.9 + .7)/2) = 1.0
    np.testing.assert_allclose(x_scores[1], [1 / 0.7, 1.0], rtol=1e-6)
    np.testing.assert_allclose(y_scores[1], [1.0, 0.8], rtol=1e-6)  # y1's neighbours x1, x0
    cos_x, _ = candidate_scores(_neighbours(), "cosine")
    np.testing.assert_allclose(cos_x, [[1, 0.6], [1, 0.8]], rtol=1e-6)


@pytest.mark.parametrize(
    "retrieval, expected",
    [
        # proposals: x0->y0 (1.538), x1->y2 (1.429), y0->x0, y1->x1 (1.0), y2->x1; max is one-to-one best first
        ("max", [(0, 0, 1 / 0.65), (1, 2, 1 / 0.7)]),
        ("intersect", [(0, 0, 1 / 0.65), (1, 2, 1 / 0.7)]),
        ("union", [(0, 0, 1 / 0.65), (1, 2, 1 / 0.7), (1, 1, 1.0)]),
        ("forward", [(0, 0, 1 / 0.65), (1, 2, 1 / 0.7)]),
        ("backward", [(0, 0, 1 / 0.65), (1, 2, 1 / 0.7), (1, 1, 1.0)]),
    ],
)
def test_retrieval_modes_by_hand(retrieval, expected):
    neighbours = _neighbours()
    src, tgt, score = select_pairs(neighbours, *candidate_scores(neighbours, "margin"), retrieval)
    assert list(zip(src.tolist(), tgt.tolist())) == [(s, t) for s, t, _ in expected]
    np.testing.assert_allclose(score, [s for _, _, s in expected], rtol=1e-6)


def test_threshold_keeps_pairs_at_or_above_it():
    x, y = ArrayVectors(X, ["x0", "x1"], ["a", "b"]), ArrayVectors(Y, ["y0", "y1", "y2"], ["c", "d", "e"])
    mined = mine(x, y, MineConfig(k=2, threshold=1.45))
    assert mined.src.tolist() == [0] and mined.tgt.tolist() == [0] and mined.candidates == 2


def test_margins_take_knn_means_over_the_whole_other_side(monkeypatch):
    """Sharded keys give the global neighbours, so the same margins; margins from one key shard alone
    would be larger (its neighbours are fewer and farther), letting more pairs pass a threshold."""
    import sentkit.mining.vectors as vectors_module

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(60, 8)).astype(np.float32), rng.normal(size=(90, 8)).astype(np.float32)
    whole = mine(ArrayVectors(x, [""] * 60, [""] * 60), ArrayVectors(y, [""] * 90, [""] * 90), MineConfig())
    monkeypatch.setattr(vectors_module, "ARRAY_BLOCK_ROWS", 20)  # 3 query blocks, 5 key shards
    sharded = mine(ArrayVectors(x, [""] * 60, [""] * 60), ArrayVectors(y, [""] * 90, [""] * 90), MineConfig())
    np.testing.assert_array_equal(sharded.src, whole.src)
    np.testing.assert_array_equal(sharded.tgt, whole.tgt)
    np.testing.assert_allclose(sharded.score, whole.score, rtol=1e-6)
    # the pairs whose y lies in the first key shard, scored with x's k-NN means over that shard alone
    in_shard = whole.tgt < 20
    i, j = whole.src[in_shard], whole.tgt[in_shard]
    cos = np.sum(_unit(x[i]) * _unit(y[j]), axis=1)
    y_mean = cosine_knn(y, x, 4)[0].mean(axis=1)
    global_margin = ratio_margin(cos, cosine_knn(x, y, 4)[0].mean(axis=1)[i], y_mean[j])
    shard_margin = ratio_margin(cos, cosine_knn(x, y[:20], 4)[0].mean(axis=1)[i], y_mean[j])
    np.testing.assert_allclose(global_margin, whole.score[in_shard], rtol=1e-5)
    assert (shard_margin >= global_margin - 1e-6).all() and (shard_margin > global_margin + 0.01).any()
    threshold = float(np.median(global_margin))
    assert (shard_margin >= threshold).sum() > (global_margin >= threshold).sum()


def _unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_zero_vectors_score_zero_not_nan():
    # a zero row's cosines are all 0, so its and its zero neighbour's k-NN means are 0: 0/0 without the guard
    x = np.array([[0, 0], [1, 0]], dtype=np.float32)
    y = np.array([[0, 0], [0, 0], [0.6, 0.8]], dtype=np.float32)
    mined = mine(
        ArrayVectors(x, ["a", "b"], ["", "B"]),
        ArrayVectors(y, ["c", "d", "e"], ["", "", "E"]),
        MineConfig(k=2),
    )
    assert np.isfinite(mined.score).all()
    x_scores, _ = candidate_scores(_neighbours(), "margin")  # unchanged where the denominator is not 0
    np.testing.assert_allclose(x_scores[0], [1 / 0.65, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(
        ratio_margin(np.zeros((1, 2)), np.zeros((1, 1)), np.zeros((1, 2))), [[0, 0]]
    )
