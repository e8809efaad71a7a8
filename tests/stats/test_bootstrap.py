"""Bootstrap intervals and paired differences against hand-checked answers and direct loops."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentkit.stats.bootstrap import (
    CHUNK,
    confidence_intervals,
    paired_difference,
    point_scores,
    pooled_difference,
    replicate_scores,
    resample_indices,
)
from sentkit.stats.items import TaskItems


def _items(statistic: str, stratum: str = "s", key: str = "x", **arrays) -> TaskItems:
    items = TaskItems(unit="item")
    items.add(key, statistic, "ids", stratum, **arrays)
    items.aggregate("main_score", [key])
    return items


def _draws(n: int, resamples: int, seed: int = 0, stratum: str = "s") -> np.ndarray:
    return np.concatenate(list(resample_indices(n, resamples, seed, stratum)))  # (resamples, n)


def test_two_items_give_the_whole_range():
    """One hit in two items: a replicate scores 0, 50 or 100 percent with odds 1/4, 1/2, 1/4, so the
    2.5th and 97.5th percentiles of 1000 replicates are exactly 0 and 100."""
    reps = replicate_scores([_items("percent", hit=np.array([True, False]))], 1000)[0]["main_score"]
    assert set(np.unique(reps)) == {0.0, 50.0, 100.0}
    assert np.mean(reps == 50.0) == pytest.approx(0.5, abs=0.05)
    assert confidence_intervals(_items("percent", hit=np.array([True, False])))["main_score"] == [0.0, 100.0]


def test_constant_values_have_a_zero_width_interval():
    ci = confidence_intervals(_items("mean", value=np.full(50, 7.25)))
    assert ci == {"x": [7.25, 7.25], "main_score": [7.25, 7.25]}


def test_mean_interval_matches_normal_theory():
    """200 hits in 400 items: the percentile interval is close to 50 +- 1.96 * 100 * sqrt(0.25 / 400)."""
    hits = np.arange(400) % 2 == 0
    low, high = confidence_intervals(_items("percent", hit=hits), resamples=2000)["main_score"]
    half = 1.96 * 100 * np.sqrt(0.25 / 400)  # 4.9 points
    assert low == pytest.approx(50 - half, abs=0.8) and high == pytest.approx(50 + half, abs=0.8)


def test_mean_interval_equals_a_direct_loop():
    x = np.array([3.0, -1.0, 4.0, 1.5, 9.0, 2.0, 6.0])
    draws = _draws(len(x), 300)
    direct = np.percentile([np.mean(x[row]) for row in draws], [2.5, 97.5])
    got = confidence_intervals(_items("mean", value=x), resamples=300)["main_score"]
    np.testing.assert_allclose(got, direct, rtol=1e-12)


def test_spearman_replicates_equal_scipy_on_each_resample():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 6, 40).astype(float)  # many ties, as STS gold scores have
    pred = gold + rng.normal(size=40)
    pred[:5] = pred[5]  # ties on the model side too
    reps = replicate_scores([_items("spearman", pred=pred, gold=gold)], 250)[0]["x"]
    direct = [100 * spearmanr(pred[row], gold[row]).statistic for row in _draws(40, 250)]
    np.testing.assert_allclose(reps, direct, rtol=1e-9)
    assert point_scores(_items("spearman", pred=pred, gold=gold))["x"] == pytest.approx(
        100 * spearmanr(pred, gold).statistic
    )


def test_two_fold_f1_replicates_equal_direct_sums():
    rng = np.random.default_rng(2)
    n = 30
    arrays = {
        "fold": (np.arange(n) % 2).astype(np.int8),
        "kept": rng.integers(0, 3, n),
        "gold": rng.integers(0, 2, n),
    }
    arrays["tp"] = np.minimum(arrays["kept"], arrays["gold"])
    reps = replicate_scores([_items("two_fold_f1", **arrays)], 200)[0]["x"]
    direct = []
    for row in _draws(n, 200):
        f1 = []
        for fold in (0, 1):
            drawn = row[arrays["fold"][row] == fold]
            tp, kept, gold = (arrays[k][drawn].sum() for k in ("tp", "kept", "gold"))
            f1.append(2 * tp / (kept + gold) if tp else 0.0)
        direct.append(100 * np.mean(f1))
    np.testing.assert_allclose(reps, direct, rtol=1e-12)


def test_per_seed_hits_count_each_item_by_its_share():
    hits = np.array([[1, 1, 1], [0, 0, 1], [0, 0, 0], [1, 0, 1]], dtype=bool)  # 4 texts x 3 k-means seeds
    assert point_scores(_items("percent", hit=hits))["x"] == pytest.approx(100 * 6 / 12)
    reps = replicate_scores([_items("percent", hit=hits)], 100)[0]["x"]
    direct = [100 * hits[row].mean() for row in _draws(4, 100)]
    np.testing.assert_allclose(reps, direct, rtol=1e-12)


def test_log_mean_is_the_log_of_the_drawn_mean():
    v = np.array([0.2, 0.5, 0.1, 0.4])
    reps = replicate_scores([_items("log_mean", value=v)], 100)[0]["x"]
    np.testing.assert_allclose(reps, [np.log(v[row].mean()) for row in _draws(4, 100)], rtol=1e-12)


def test_groups_of_a_stratum_share_draws_and_aggregates_combine_them():
    items = TaskItems(unit="pair")
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 0.0, 5.0, 1.0])
    items.add("a", "mean", "ids", "pairs", value=a)
    items.add("b", "mean", "ids", "pairs", value=b)
    items.add("c", "mean", "other", "alone", value=np.array([1.0, 5.0]))
    items.aggregate("main_score", ["a", "b", "c"])
    items.aggregate("loss", ["a", "b"], combine="negative_sum")
    reps = replicate_scores([items], 100)[0]
    pairs, alone = _draws(4, 100, stratum="pairs"), _draws(2, 100, stratum="alone")
    np.testing.assert_allclose(reps["a"], [a[r].mean() for r in pairs])
    np.testing.assert_allclose(reps["b"], [b[r].mean() for r in pairs])  # the same rows as group a
    np.testing.assert_allclose(reps["loss"], -(reps["a"] + reps["b"]))
    np.testing.assert_allclose(reps["main_score"], (reps["a"] + reps["b"] + reps["c"]) / 3)
    np.testing.assert_allclose(reps["c"], [np.array([1.0, 5.0])[r].mean() for r in alone])


def test_draws_depend_only_on_seed_stratum_and_size():
    first = next(resample_indices(50, 1000, 0, "en"))
    assert first.shape == (CHUNK, 50)
    np.testing.assert_array_equal(first, next(resample_indices(50, CHUNK, 0, "en")))
    assert not np.array_equal(first, next(resample_indices(50, 1000, 0, "de")))
    assert not np.array_equal(first, next(resample_indices(50, 1000, 1, "en")))
    assert _draws(50, 250).shape == (250, 50)


@pytest.mark.parametrize(
    "statistic, arrays",
    [
        ("spearman", {"pred": np.linspace(0, 1, 30) ** 2, "gold": np.arange(30) % 7}),
        ("percent", {"hit": np.arange(30) % 3 == 0}),
        ("mean", {"value": np.sin(np.arange(30))}),
        ("log_mean", {"value": 1.0 + np.cos(np.arange(30)) / 2}),
        (
            "two_fold_f1",
            {"fold": np.arange(30) % 2, "tp": np.arange(30) % 2, "kept": np.ones(30), "gold": np.ones(30)},
        ),
    ],
)
def test_identical_runs_differ_by_exactly_zero_with_p_one(statistic, arrays):
    a = _items(statistic, **arrays)
    result = paired_difference(a, copy.deepcopy(a))
    for key in ("x", "main_score"):
        assert result[key]["delta"] == 0.0
        assert result[key]["ci"] == [0.0, 0.0]
        assert result[key]["p_value"] == 1.0


def test_a_planted_spearman_difference_is_detected():
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 300)
    noisy = _items("spearman", pred=gold + rng.normal(scale=2.0, size=300), gold=gold)
    better = _items("spearman", pred=gold + rng.normal(scale=0.5, size=300), gold=gold)
    result = paired_difference(noisy, better)["main_score"]
    assert result["delta"] > 10 and result["ci"][0] > 0 and result["p_value"] < 0.05


def test_a_tiny_spearman_difference_is_not():
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 300)
    pred = gold + rng.normal(scale=2.0, size=300)
    nudged = pred.copy()
    nudged[:3] += 0.3  # three of 300 pairs move a little
    result = paired_difference(
        _items("spearman", pred=pred, gold=gold), _items("spearman", pred=nudged, gold=gold)
    )
    main = result["main_score"]
    assert abs(main["delta"]) < 0.5 and main["ci"][0] < 0 < main["ci"][1] and main["p_value"] > 0.2


def test_one_flipped_item_has_the_p_value_of_its_draw_count():
    """B = A with one miss turned into a hit: a replicate difference is 100 * k / n for k draws of that item,
    at least |delta| = 100 / n away from delta unless k == 1, so p ~ P(k != 1) = 1 - (1 - 1/n)^(n-1)."""
    n = 400
    hits = np.arange(n) % 10 < 7
    flipped = hits.copy()
    flipped[np.flatnonzero(~hits)[0]] = True
    main = paired_difference(_items("percent", hit=hits), _items("percent", hit=flipped), resamples=4000)[
        "main_score"
    ]
    assert main["delta"] == pytest.approx(100 / n)
    assert main["p_value"] == pytest.approx(1 - (1 - 1 / n) ** (n - 1), abs=0.03)


def test_forty_more_hits_of_four_hundred_are_detected():
    hits = np.arange(400) % 10 < 7
    more = hits.copy()
    more[np.flatnonzero(~hits)[:40]] = True
    main = paired_difference(_items("percent", hit=hits), _items("percent", hit=more))["main_score"]
    assert main["delta"] == pytest.approx(10.0)
    assert main["p_value"] == pytest.approx(1 / 1001) and main["ci"][0] > 5


def test_runs_on_different_layouts_are_refused():
    a = _items("percent", hit=np.ones(10, dtype=bool))
    b = _items("percent", hit=np.ones(11, dtype=bool))
    with pytest.raises(ValueError, match="differ"):
        paired_difference(a, b)


def test_pooled_difference_of_one_pair_is_the_paired_difference():
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, 80)
    a = _items("spearman", pred=gold + rng.normal(scale=2.0, size=80), gold=gold)
    b = _items("spearman", pred=gold + rng.normal(scale=1.0, size=80), gold=gold)
    pooled, paired = pooled_difference([(a, b)], resamples=300), paired_difference(a, b, resamples=300)
    for key in ("x", "main_score"):
        assert pooled[key].pop("deltas") == [paired[key]["delta"]]
        assert pooled[key] == paired[key]


def test_pooled_difference_is_the_mean_of_the_pairs_on_shared_draws():
    """Seeds whose differences are +10 and 0 points on 400 items (40 and 0 misses turned into hits): the
    pooled difference is +5, and each replicate is the mean of the two pairs' replicate differences."""
    hits = np.arange(400) % 10 < 7
    more = hits.copy()
    more[np.flatnonzero(~hits)[:40]] = True
    a, b = _items("percent", hit=hits), _items("percent", hit=more)
    pooled = pooled_difference([(a, b), (a, copy.deepcopy(a))], resamples=500)["main_score"]
    assert pooled["deltas"] == pytest.approx([10.0, 0.0]) and pooled["delta"] == pytest.approx(5.0)
    assert pooled["a"] == pytest.approx(70.0) and pooled["b"] == pytest.approx(75.0)
    reps_a, reps_b = replicate_scores([a, b], 500)
    half = (reps_b["main_score"] - reps_a["main_score"]) / 2  # the second pair adds 0 to every replicate
    np.testing.assert_allclose(pooled["ci"], np.percentile(half, [2.5, 97.5]), rtol=1e-12)
    assert pooled["p_value"] == pytest.approx(1 / 501)
    with pytest.raises(ValueError, match="at least one"):
        pooled_difference([])
