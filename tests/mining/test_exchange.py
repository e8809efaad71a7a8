"""Each direction's neighbour lists completed by the pairs the other direction found (exchange.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.mining.exact import exact_scores, exact_search
from sentkit.mining.exchange import both_exchanged, exchanged
from sentkit.mining.vectors import ArrayVectors


def _vectors(array):
    return ArrayVectors(array, [f"r{i}" for i in range(len(array))], [""] * len(array))


def test_a_hand_checked_exchange():
    # similarities of 3 x rows with 4 y rows:   y0   y1    y2   y3
    #                                       x0  .9   .5    .3   .0
    #                                       x1  .1   .05   .8   .75
    #                                       x2  .6   .7    .2   .4
    # the forward lists (k = 2) of an index that missed x1's y3 and x2's y0; the backward lists exact
    sims = np.array([[0.9, 0.5], [0.8, 0.1], [0.7, 0.4]], dtype=np.float32)
    nn = np.array([[0, 1], [2, 0], [1, 3]])
    other_sims = np.array([[0.9, 0.6], [0.7, 0.5], [0.8, 0.3], [0.75, 0.4]], dtype=np.float32)
    other_nn = np.array([[0, 2], [2, 0], [1, 0], [1, 2]])
    out_s, out_i, gained = exchanged(sims, nn, other_sims, other_nn)
    # x0 is named by y0, y1 (its own pairs) and y2 (.3, below its k-th); x1 by y2 and y3 (.75 > .1);
    # x2 by y0 (.6 > .4), y1 and y3: the forward lists become the exact ones
    np.testing.assert_array_equal(out_i, [[0, 1], [2, 3], [1, 0]])
    np.testing.assert_allclose(out_s, [[0.9, 0.5], [0.8, 0.75], [0.7, 0.6]])
    assert gained == 2


def test_exact_lists_are_unchanged_and_thinned_lists_regain_their_neighbours():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 16)).astype(np.float32)
    y = rng.normal(size=(250, 16)).astype(np.float32)
    xs, xn, _ = exact_search(_vectors(x), _vectors(y), 5, "float32")
    ys, yn, _ = exact_search(_vectors(y), _vectors(x), 5, "float32")
    same_s, same_i, gained = exchanged(xs, xn, ys, yn)
    assert gained == 0
    np.testing.assert_array_equal(same_i, xn)
    np.testing.assert_array_equal(same_s, xs)
    _, (back_s, back_i), both = both_exchanged(xs, xn, ys, yn)  # both directions at once, backward too
    assert both == (0, 0)
    np.testing.assert_array_equal(back_i, yn)
    np.testing.assert_array_equal(back_s, ys)

    # an approximate search's lists: each entry lost with probability 0.4, the gaps filled by worse rows
    lost = rng.random(xn.shape) < 0.4
    worse = np.argsort(-(x @ y.T / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1))), axis=1)
    thin_i = np.where(lost, worse[:, 20:25], xn)
    xu = x / np.linalg.norm(x, axis=1, keepdims=True)
    yu = y / np.linalg.norm(y, axis=1, keepdims=True)
    thin_s = exact_scores(xu, yu[thin_i])
    order = np.lexsort((thin_i, -thin_s), axis=1)
    thin_s, thin_i = np.take_along_axis(thin_s, order, axis=1), np.take_along_axis(thin_i, order, axis=1)
    out_s, out_i, gained = exchanged(thin_s, thin_i, ys, yn)
    # a pair on y's exact list is among x's exact top 5 only where it is, so every regained entry is exact
    found = lambda s, i: np.mean([len(set(a) & set(b)) / 5 for a, b in zip(i, xn)])  # noqa: E731
    assert found(out_s, out_i) > found(thin_s, thin_i) + 0.2
    assert gained > 0.2 * lost.sum()
    # every list stays sorted, without repeats, and every value is the pair's exact similarity
    assert (np.diff(out_s, axis=1) <= 0).all()
    assert all(len(set(row)) == 5 for row in out_i)
    np.testing.assert_allclose(out_s, exact_scores(xu, yu[out_i]), rtol=0, atol=1e-6)
    # never worse than the own list: each position at least as similar
    assert (out_s >= thin_s - 1e-7).all()


def test_missing_entries_stay_missing_unless_the_other_direction_fills_them():
    sims = np.array([[0.5, -np.inf], [0.4, -np.inf]], dtype=np.float32)
    nn = np.array([[0, -1], [1, -1]])
    other_sims = np.array([[0.5, 0.3], [0.4, -np.inf]], dtype=np.float32)
    other_nn = np.array([[0, 1], [1, -1]])
    out_s, out_i, gained = exchanged(sims, nn, other_sims, other_nn)
    np.testing.assert_array_equal(out_i, [[0, -1], [1, 0]])
    assert out_s[1, 1] == pytest.approx(0.3) and out_s[0, 1] == -np.inf and gained == 1


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_merged_chunk_by_chunk_the_lists_are_the_one_pass_lists(chunk, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 8)).astype(np.float32)
    y = rng.normal(size=(180, 8)).astype(np.float32)
    xs, xn, _ = exact_search(_vectors(x), _vectors(y), 4, "float32")
    ys, yn, _ = exact_search(_vectors(y), _vectors(x), 4, "float32")
    lost = rng.random(xn.shape) < 0.5  # thinned forward lists: the backward pairs have much to give
    xs, xn = np.where(lost, -np.inf, xs).astype(np.float32), np.where(lost, -1, xn)
    order = np.argsort(-xs, axis=1, kind="stable")
    xs, xn = np.take_along_axis(xs, order, axis=1), np.take_along_axis(xn, order, axis=1)
    expected_s, expected_i, expected_gained = exchanged(xs, xn, ys, yn)
    assert expected_gained > 50
    # written into memory maps, as a mining run's work folder holds them
    out_s = np.lib.format.open_memmap(tmp_path / "s.npy", mode="w+", dtype=xs.dtype, shape=xs.shape)
    out_i = np.lib.format.open_memmap(tmp_path / "i.npy", mode="w+", dtype=xn.dtype, shape=xn.shape)
    from sentkit.mining.exchange import exchanged_into

    assert exchanged_into(xs, xn, ys, yn, out_s, out_i, chunk=chunk) == expected_gained
    np.testing.assert_array_equal(out_i, expected_i)
    np.testing.assert_array_equal(out_s, expected_s)
