"""Holm's adjustment on a case worked by hand, and the no-effect rate of *suggestive* against its limits."""

from __future__ import annotations

import pytest
from scipy import stats

from sentkit.stats.multiplicity import holm
from sentkit.stats.null_rate import plug_in_ratio, suggestive_rate


def test_holm_on_a_hand_checked_family():
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to 0.06 (step-down)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # a missing p-value is no test: m is 2 here, and it stays None
    assert holm([0.02, None, 0.04]) == pytest.approx([0.04, None, 0.04])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1, and never below a smaller p's adjustment
    assert holm([0.01]) == [0.01]  # one test: nothing to correct
    assert holm([]) == []


def test_holm_rejects_at_least_what_bonferroni_rejects_and_refuses_non_p_values():
    ps = [0.001, 0.011, 0.02, 0.3, 0.012]
    assert all(h <= min(1.0, len(ps) * p) for h, p in zip(holm(ps), ps))
    assert sum(h < 0.05 for h in holm(ps)) == 4 > sum(len(ps) * p < 0.05 for p in ps) == 1
    with pytest.raises(ValueError, match="not in"):
        holm([0.2, 1.5])


def test_suggestive_never_fires_without_seed_spread_and_tends_to_the_one_sided_half():
    assert suggestive_rate(0.0, 3, draws=20_000) == 0.0  # both intervals coincide: reproduced claims first
    rates = [suggestive_rate(r, 5, draws=20_000) for r in (0.1, 1.0, 10.0)]
    assert rates == sorted(rates) and rates[0] < 0.02 and 0.03 < rates[1] < 0.09
    # far more seed than item noise: P(item CI above 0) = 1 - Phi(z / sqrt(1 + r)) -> 1/2, less the
    # seed-aware test's own one-sided rate (at most 2.5%)
    upper = 1 - stats.norm.cdf(1.96 / (1 + 1000) ** 0.5)
    assert upper - 0.03 < suggestive_rate(1000.0, 5, draws=20_000) < upper
    with pytest.raises(ValueError):
        suggestive_rate(1.0, 1)


def test_plug_in_ratio_reads_a_seed_record():
    assert plug_in_ratio({"item_se": 0.5, "seed_sd": 1.0, "seeds": 4}) == pytest.approx(1.0)
