"""Seed-aware comparisons: known answers (a t-test when the items add no noise, [0, 0] for identical runs),
the interval and p-value agreeing, and a simulation of training seeds with and without a true effect."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sentkit.stats import bootstrap
from sentkit.stats.items import TaskItems
from sentkit.stats.seeds import (
    INCONCLUSIVE,
    OPPOSITE,
    REPRODUCED,
    SUGGESTIVE,
    UNDERPOWERED,
    seed_aware_difference,
    seed_record,
    seed_t_interval,
    two_level_bootstrap,
    verdict,
    without_seed_noise,
)

N_ITEMS = 300


def _sts(pred: np.ndarray, gold: np.ndarray) -> TaskItems:
    items = TaskItems(unit="sentence pair")
    items.add("x", "spearman", "ids", "s", pred=pred, gold=gold)
    items.aggregate("main_score", ["x"])
    return items


def _counts(n: int, resamples: int = bootstrap.RESAMPLES) -> np.ndarray:
    """(R, n): how often each item is drawn in each of the bootstrap's own draws."""
    draws = np.concatenate(list(bootstrap.resample_indices(n, resamples, bootstrap.SEED, "s")))
    return np.stack([np.bincount(row, minlength=n) for row in draws]).astype(np.float64)


def test_without_item_noise_it_is_the_one_sample_t_test():
    deltas = np.array([2.79, 0.31, 1.95])  # JCSE's three seeds on JACSTS
    flat = np.repeat(deltas[:, None], 50, axis=1)  # (k, R): every item draw gives each seed's own value
    t = seed_t_interval(deltas, flat)
    test = stats.ttest_1samp(deltas, 0.0)
    assert float(t["df"]) == pytest.approx(2.0)
    assert float(t["p_value"]) == pytest.approx(test.pvalue) and 0.14 < test.pvalue < 0.16
    ci = test.confidence_interval(0.95)
    assert [float(t["low"]), float(t["high"])] == pytest.approx([ci.low, ci.high])


def test_item_noise_widens_it_with_welch_satterthwaite_degrees_of_freedom():
    deltas = np.array([1.0, 1.5, 2.0])
    rng = np.random.default_rng(0)
    reps = deltas[:, None] + rng.normal(0, 0.5, size=(1, 4000))  # the same item noise for every seed
    t = seed_t_interval(deltas, reps)
    v_seed, v_item = np.var(deltas, ddof=1) / 3, np.var(reps.mean(axis=0), ddof=1)
    assert float(t["se"]) ** 2 == pytest.approx(v_seed + v_item)
    assert float(t["df"]) == pytest.approx((v_seed + v_item) ** 2 / (v_seed**2 / 2))
    assert float(t["df"]) > 2  # more than the seeds' own degrees of freedom
    half = float(t["high"]) - 1.5
    q = stats.t.ppf(0.975, float(t["df"]))
    assert float(t["detectable"]) == pytest.approx(half * (q + stats.t.ppf(0.8, float(t["df"]))) / q)


def test_two_seeds_use_one_degree_of_freedom():
    deltas = np.array([1.0, 2.0])
    reps = deltas[:, None] + np.random.default_rng(0).normal(0, 0.3, size=(1, 500))
    t = seed_t_interval(deltas, reps)
    assert float(t["df"]) == 1.0
    assert float(t["high"]) - 1.5 == pytest.approx(stats.t.ppf(0.975, 1) * float(t["se"]))


def test_identical_runs_give_zero_and_p_one():
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, N_ITEMS)
    runs = [_sts(gold + rng.normal(0, s, N_ITEMS), gold) for s in (1.0, 1.5, 2.0)]
    record = seed_aware_difference([(run, run) for run in runs], resamples=200)["main_score"]
    assert record["deltas"] == [0.0, 0.0, 0.0] and record["seed_sd"] == 0.0
    assert record["ci"] == [0.0, 0.0] and record["p_value"] == 1.0 and record["item"]["ci"] == [0.0, 0.0]
    assert record["two_level_bootstrap"] == {"ci": [0.0, 0.0], "p_value": 1.0}
    assert verdict(record, 1, effect=2.0)["verdict"] == INCONCLUSIVE  # detects any difference above 0


def test_spearman_runs_through_the_shared_item_draws():
    """Three seeds of A and B on the same STS pairs: the record is the t interval of the per-seed Spearman
    differences with the item variance of their mean over the bootstrap's draws."""
    rng = np.random.default_rng(2)
    gold = rng.uniform(0, 5, N_ITEMS)
    pairs = [
        (_sts(gold + rng.normal(0, 2.0, N_ITEMS), gold), _sts(gold + rng.normal(0, 1.6, N_ITEMS), gold))
        for _ in range(3)
    ]
    record = seed_aware_difference(pairs, resamples=300)["main_score"]
    points = [(bootstrap.point_scores(a)["x"], bootstrap.point_scores(b)["x"]) for a, b in pairs]
    deltas = np.array([b - a for a, b in points])
    assert record["deltas"] == pytest.approx(deltas) and record["delta"] == pytest.approx(deltas.mean())
    reps = bootstrap.replicate_scores([run for pair in pairs for run in pair], 300)
    diffs = np.stack([reps[2 * i + 1]["x"] - reps[2 * i]["x"] for i in range(3)])
    t = seed_t_interval(deltas, diffs)
    assert record["ci"] == pytest.approx([float(t["low"]), float(t["high"])])
    pooled = bootstrap.pooled_difference(pairs, resamples=300)["main_score"]
    assert record["item"]["ci"] == pooled["ci"] and record["item"]["p_value"] == pooled["p_value"]
    assert record["ci"][0] < record["item"]["ci"][0]  # the seeds widen the items' interval


def test_interval_and_p_value_agree():
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = int(rng.integers(2, 8))
        deltas = rng.normal(rng.normal(0, 2), rng.uniform(0.01, 3), size=k)
        reps = deltas[:, None] + rng.normal(0, rng.uniform(0, 2), size=(1, 200))
        t = seed_t_interval(deltas, reps)
        assert (t["low"] > 0 or t["high"] < 0) == (t["p_value"] < 0.05)
        two = two_level_bootstrap(reps[:, : int(rng.integers(20, 200))])  # tail counts on either side of 5%
        assert (two["ci"][0] > 0 or two["ci"][1] < 0) == (two["p_value"] < 0.05)


def _record(**changes) -> dict:
    base = {
        "seeds": 3,
        "ci": [0.5, 2.0],
        "p_value": 0.01,
        "item": {"ci": [0.8, 1.6], "p_value": 0.001},
        "detectable": 1.5,
        "level": 0.95,
    }
    return {**base, **changes}


def test_verdicts():
    assert verdict(_record(), 1)["verdict"] == REPRODUCED
    assert verdict(_record(ci=[-2.0, -0.5], item={"ci": [-1.6, -0.8]}), -1)["verdict"] == REPRODUCED
    assert verdict(_record(ci=[-2.0, -0.5], item={"ci": [-1.6, -0.8]}), 1)["verdict"] == OPPOSITE
    wide = _record(ci=[-0.5, 3.0], p_value=0.2)
    assert verdict(wide, 1) == {
        "verdict": SUGGESTIVE,
        "why": "only the item-level CI excludes 0; seed-aware p 0.200",
    }
    unsure = _record(ci=[-0.5, 3.0], p_value=0.2, item={"ci": [-0.1, 2.0]}, detectable=3.2)
    assert verdict(unsure, 1, effect=2.35)["verdict"] == UNDERPOWERED
    assert verdict(unsure, 1, effect=-3.5)["verdict"] == INCONCLUSIVE  # could have found the paper's 3.5
    assert verdict(unsure, 1)["verdict"] == INCONCLUSIVE  # the paper's effect is not known
    # one seed: never reproduced, however far the items' interval is from 0
    one = _record(seeds=1, ci=None, p_value=None, item={"ci": [5.0, 9.0]}, detectable=1.0)
    assert verdict(one, 1)["verdict"] == SUGGESTIVE
    assert verdict(one, -1, effect=0.5)["verdict"] == UNDERPOWERED
    with pytest.raises(ValueError, match="direction"):
        verdict(_record(), 0)


def test_a_single_seed_is_at_most_suggestive():
    rng = np.random.default_rng(4)
    gold = rng.uniform(0, 5, N_ITEMS)
    pair = (_sts(gold + rng.normal(0, 3.0, N_ITEMS), gold), _sts(gold + rng.normal(0, 0.5, N_ITEMS), gold))
    record = seed_aware_difference([pair], resamples=200)["main_score"]
    assert record["ci"] is None and record["p_value"] is None and record["item"]["ci"][0] > 10
    assert record["detectable"] > 0 and verdict(record, 1)["verdict"] == SUGGESTIVE


def test_untrained_models_are_judged_on_their_items():
    """Two models no seed changes (both scored once): the items' normal interval carries the verdict."""
    reps = np.random.default_rng(7).normal(1.2, 0.4, size=(1, 2000))
    record = seed_record([50.0], [51.2], reps)
    assert record["ci"] is None and verdict(record, 1)["verdict"] == SUGGESTIVE
    fixed = without_seed_noise(record)
    se = np.std(reps, ddof=1)
    assert fixed["ci"] == pytest.approx([1.2 - 1.959964 * se, 1.2 + 1.959964 * se])
    assert fixed["p_value"] == pytest.approx(2 * stats.norm.sf(1.2 / se)) and fixed["p_value"] < 0.05
    assert verdict(fixed, 1)["verdict"] == REPRODUCED and verdict(fixed, -1)["verdict"] == OPPOSITE
    same = without_seed_noise(seed_record([50.0], [50.0], np.zeros((1, 10))))
    assert same["ci"] == [0.0, 0.0] and same["p_value"] == 1.0


def _simulate(sims: int, k: int, seed_sd: np.ndarray, effect: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Per simulation, k seeds of A and B on N_ITEMS items scored by their mean (AP-like values in points):
    value = item difficulty + item-by-run noise (sd 5: a seed's B - A has an item-level standard error of
    about 0.4, as on the examples' test sets); B - A moves by a seed shift with sd `seed_sd` (one per
    simulation) and by `effect`. Returns each seed's B - A (sims, k) and its bootstrap replicates
    (sims, k, R) on the bootstrap's own item draws."""
    difficulty = rng.normal(50, 20, size=(sims, 1, 1, N_ITEMS))
    values = difficulty + rng.normal(0, 5, size=(sims, 2, k, N_ITEMS))
    shift = rng.normal(0, 1, size=(sims, k, 1)) * seed_sd[:, None, None]
    diff = values[:, 1] - values[:, 0] + shift + effect  # (sims, k, n)
    counts = _counts(N_ITEMS)  # (R, n)
    return diff.mean(axis=-1), np.einsum("rn,skn->skr", counts, diff) / N_ITEMS


def _verdicts(deltas: np.ndarray, reps: np.ndarray, direction: int) -> list[str]:
    t = seed_t_interval(deltas, reps)
    items = np.percentile(reps.mean(axis=1), [2.5, 97.5], axis=-1)  # (2, sims)
    return [
        verdict(
            {
                "seeds": deltas.shape[1],
                "ci": [t["low"][i], t["high"][i]],
                "p_value": t["p_value"][i],
                "item": {"ci": list(items[:, i])},
                "detectable": t["detectable"][i],
                "level": 0.95,
            },
            direction,
        )["verdict"]
        for i in range(len(deltas))
    ]


def test_no_true_effect_is_rarely_reproduced():
    """2,000 comparisons with no true effect, 3 seeds, a seed spread of 1-4 points, 300 items: the verdict
    says reproduced in at most 5% of them in either direction. The rule it replaces (the item-level
    interval excludes 0 and every seed agrees in sign) and the plain two-level bootstrap do not."""
    rng = np.random.default_rng(5)
    sims = 2000
    deltas, reps = _simulate(sims, 3, rng.uniform(1, 4, sims), 0.0, rng)
    for direction in (1, -1):
        rate = np.mean(np.array(_verdicts(deltas, reps, direction)) == REPRODUCED)
        assert rate <= 0.05, (direction, rate)
    item_low = np.percentile(reps.mean(axis=1), 2.5, axis=-1)
    old_rule = np.mean((item_low > 0) & np.all(deltas > 0, axis=1))
    two_level = np.mean([two_level_bootstrap(r)["ci"][0] > 0 for r in reps])
    assert old_rule > 0.05 and two_level > 0.05, (old_rule, two_level)
    t = seed_t_interval(deltas, reps)
    assert np.all(((t["low"] > 0) | (t["high"] < 0)) == (t["p_value"] < 0.05))


@pytest.mark.parametrize(("k", "found"), [(3, 0.5), (5, 0.95)])
def test_a_planted_effect_is_found(k, found):
    """3 points with a seed spread of 1: found at least half the time with 3 seeds (the smallest detectable
    difference is about 3 there) and almost always with 5."""
    rng = np.random.default_rng(6)
    sims = 1000
    deltas, reps = _simulate(sims, k, np.ones(sims), 3.0, rng)
    rate = np.mean(np.array(_verdicts(deltas, reps, 1)) == REPRODUCED)
    assert rate >= found, rate
    # a paper that reported the other sign is contradicted just as often
    assert np.mean(np.array(_verdicts(deltas, reps, -1)) == OPPOSITE) == rate


def test_seed_record_of_identical_draws_matches_its_parts():
    deltas = np.array([1.0, 2.0])
    reps = np.array([[0.5, 1.5, 1.0], [1.5, 2.5, 2.0]])
    record = seed_record([10.0, 20.0], [11.0, 22.0], reps, level=0.95)
    assert record["a"] == 15.0 and record["b"] == 16.5 and record["delta"] == 1.5
    assert record["deltas"] == [1.0, 2.0] and record["seed_sd"] == pytest.approx(np.std(deltas, ddof=1))
    assert record["item"]["resamples"] == 3 and record["seeds"] == 2
