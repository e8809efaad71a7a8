"""How often the seed-aware verdict says *suggestive* when the method has no effect at all (its rule:
`sentkit.stats.seeds.verdict`; the rates are quoted in docs/results.md, "Reading the verdicts").

*Suggestive* fires when the item-level interval (the seeds held fixed) excludes 0 on the paper's side but
the seed-aware one does not. The item-level interval leaves out how much a new training seed moves B - A,
so with no true effect it fires more often the more the seeds, rather than the items, spread the result.

The model, with no effect: k seeds, seed s gives B - A = u_s + e, where u_s ~ N(0, sigma^2) is what its
training run adds (independent between seeds) and e ~ N(0, V) what the test items add (shared: every seed
is scored on the same items). The mean over seeds has variance sigma^2 / k + V. The item-level interval
is mean +- z * sqrt(V) (the bootstrap's percentile interval is close to it); the seed-aware interval is
`seeds.seed_t` of the k differences with item variance V. The rate depends only on k and on the ratio
r = (sigma^2 / k) / V of the two parts of the mean's variance: it is 0 at r = 0 (the two intervals
then coincide, and the seed-aware verdict claims first) and tends to one-sided 1/2 minus the seed-aware
test's own rate as r grows (the item-level interval is then far too narrow).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from sentkit.stats import bootstrap
from sentkit.stats.seeds import alpha_of, seed_t

DRAWS = 200_000
SEED = 0


def suggestive_rate(
    ratio: float, seeds: int, level: float = bootstrap.LEVEL, draws: int = DRAWS, seed: int = SEED
) -> float:
    """The share of no-effect comparisons (module doc) judged *suggestive* on the paper's side, at the
    seed-to-item variance ratio `ratio` with `seeds` seeds, by simulation (`draws` comparisons)."""
    if seeds < 2:
        raise ValueError("the seed-aware verdict needs at least two seeds")
    if ratio < 0:
        raise ValueError(f"ratio must be >= 0, got {ratio!r}")
    rng = np.random.default_rng([seed, seeds])
    sigma = np.sqrt(ratio * seeds)  # V = 1: the item part of the mean's variance
    deltas = sigma * rng.standard_normal((draws, seeds)) + rng.standard_normal((draws, 1))
    t = seed_t(deltas, 1.0, level)
    item_above = t["delta"] > stats.norm.ppf(0.5 + level / 2)
    reproduced = (t["low"] > 0) & (t["p_value"] < alpha_of(level))
    return float(np.mean(item_above & ~reproduced))


def plug_in_ratio(record: dict) -> float:
    """The ratio (module doc) a seed-aware record estimates: its seeds' variance of the mean over its
    item variance (`seed_sd`, `seeds` and `item_se` of a `seeds.seed_record`)."""
    item = record["item_se"] ** 2
    seed_part = record["seed_sd"] ** 2 / record["seeds"]
    return float(seed_part / item) if item > 0 else float("inf")


def rate_table(ratios: Sequence[float], seeds: Sequence[int], level: float = bootstrap.LEVEL) -> dict:
    """{"seeds": ..., "ratios": ..., "rates": {k: [rate at each ratio]}} for the docs' table."""
    return {
        "level": level,
        "draws": DRAWS,
        "ratios": list(ratios),
        "rates": {str(k): [suggestive_rate(r, k, level) for r in ratios] for k in seeds},
    }
