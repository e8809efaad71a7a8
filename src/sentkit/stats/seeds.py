"""Seed-aware paired comparison: B - A over several training seeds, with the spread over seeds and the
spread over test items both in its interval and p-value, and the verdict built on it.

Seed s gives a pair of runs (A_s, B_s) on the same test items and a difference d_s = B_s - A_s; the
estimate is their mean over the k seeds. Every run is resampled on the same item draws (bootstrap.py), so
each draw r gives every seed's difference d_s(r) and their mean m(r). Two sources of noise move the mean:

- the seeds: a new training run moves d_s; estimated by the sample variance of the d_s over the seeds,
  s^2 / k for their mean;
- the items: another test set moves every seed's score at once (the items are the same for every seed);
  estimated by the variance of m(r) over the item draws, seeds held fixed.

The seed-aware interval is mean +- t * se with se^2 = s^2 / k + Var(m(r)), and t the Student quantile at the
Welch-Satterthwaite degrees of freedom (k - 1 when the seeds dominate, growing to the normal quantile when
the items do; the item part is an estimate from many draws and is given infinite degrees of freedom).
With two seeds the seed variance rests on one degree of freedom, its estimate is often far too small and
the Satterthwaite df then too large (5-7% of null comparisons significant on one side in the simulation
of docs/lab/evaluation.md, "Choosing the seed-aware test", against 2.5% nominal): two seeds use df = 1, the seeds' own.
The p-value is the same t statistic's two-sided tail, so the interval excludes 0 exactly when p < 1 - level.
s^2 already holds the part of the item noise that differs between seeds, so that part is counted twice:
the interval errs on the wide side.

Why not the plain two-level bootstrap (seeds drawn with replacement, then items; Davison & Hinkley 1997,
§3.8; `two_level_bootstrap`, reported beside): with k = 3 seeds there are 10 distinct seed draws, the
draws' variance is (k - 1) / k of the seeds' and their percentiles ignore that s^2 rests on k - 1 degrees of
freedom. In the simulation of tests/stats/test_seeds.py (3 seeds, no true effect, a seed spread of a few
points) it calls 5-13% of null comparisons significant in the paper's direction; the t interval at most 3.5%
(docs/lab/evaluation.md, "Choosing the seed-aware test", gives the numbers).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from scipy import stats

from sentkit.stats import bootstrap
from sentkit.stats.items import TaskItems

POWER = 0.8  # the smallest detectable difference is the one the test finds with this probability

REPRODUCED = "reproduced"
OPPOSITE = "opposite"
SUGGESTIVE = "suggestive"
UNDERPOWERED = "underpowered"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REPRODUCED, OPPOSITE, SUGGESTIVE, UNDERPOWERED, INCONCLUSIVE)


def seed_t_interval(deltas: np.ndarray, replicates: np.ndarray, level: float = bootstrap.LEVEL) -> dict:
    """The seed-aware interval (module doc) of the mean of `deltas` (..., k): each seed's B - A, with
    `replicates` (..., k, R) each seed's B - A on R item draws shared by the seeds. Leading axes are
    independent comparisons (a simulation computes thousands at once); see `seed_t`."""
    pooled = np.asarray(replicates, dtype=np.float64).mean(axis=-2)  # (..., R): mean over seeds per draw
    return seed_t(deltas, _finite_variance(pooled), level)


def seed_t(deltas: np.ndarray, item_variance: np.ndarray | float, level: float = bootstrap.LEVEL) -> dict:
    """The seed-aware interval of the mean of `deltas` (..., k) whose item-level variance (seeds held
    fixed) is `item_variance` (...). Returns arrays (...): delta, se, df, low, high, p_value and detectable
    (the difference found with probability POWER at this level: the half-width times
    (t_{1-a/2} + t_{POWER}) / t_{1-a/2}). k >= 2."""
    deltas = np.asarray(deltas, dtype=np.float64)
    k = deltas.shape[-1]
    if k < 2:
        raise ValueError("a seed-aware interval needs at least two seeds")
    v_item = np.asarray(item_variance, dtype=np.float64)
    v_seed = deltas.var(axis=-1, ddof=1) / k
    delta = deltas.mean(axis=-1)
    se = np.sqrt(v_seed + v_item)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(v_seed > 0, se**4 / (v_seed**2 / (k - 1)), np.inf)
        if k == 2:  # one degree of freedom: Satterthwaite's df is too often large (module doc)
            df = np.full_like(se, 1.0)
        t = np.where(se > 0, np.abs(delta) / se, np.where(delta == 0, 0.0, np.inf))
    q = stats.t.ppf(0.5 + level / 2, df)
    half = q * se
    return {
        "delta": delta,
        "se": se,
        "df": df,
        "low": delta - half,
        "high": delta + half,
        "p_value": 2.0 * stats.t.sf(t, df),
        "detectable": (q + stats.t.ppf(POWER, df)) * se,
    }


def alpha_of(level: float) -> float:
    """The test's size for an interval's level, without float noise (1 - 0.95 is 0.05000000000000004)."""
    return round(1.0 - level, 12)


def _finite_variance(values: np.ndarray) -> np.ndarray:
    """Sample variance over the last axis of the finite values (an undefined draw, e.g. a Spearman of
    tied pairs, is left out as in the percentile intervals); 0 with fewer than two."""
    finite = np.isfinite(values)
    n = finite.sum(axis=-1)
    clean = np.where(finite, values, 0.0)
    mean = clean.sum(axis=-1) / np.maximum(n, 1)
    squares = np.where(finite, (clean - mean[..., None]) ** 2, 0.0).sum(axis=-1)
    return np.where(n > 1, squares / np.maximum(n - 1, 1), 0.0)


def two_level_bootstrap(
    replicates: np.ndarray, level: float = bootstrap.LEVEL, seed: int = bootstrap.SEED
) -> dict:
    """The plain two-level bootstrap of the mean over seeds: draw r takes k seeds with replacement and
    the item draw r shared by every seed, `replicates` (k, R). Its interval is by order statistics and its
    p-value 2 min(P(m* <= 0), P(m* >= 0)), so the interval excludes 0 exactly when p < 1 - level."""
    replicates = np.asarray(replicates, dtype=np.float64)
    k, resamples = replicates.shape
    rng = np.random.default_rng([seed, zlib.crc32(b"seeds")])
    drawn = rng.integers(0, k, size=(resamples, k))  # (R, k): the seeds of each draw
    means = replicates[drawn, np.arange(resamples)[:, None]].mean(axis=1)  # (R,)
    means = np.sort(means[np.isfinite(means)])
    if len(means) == 0:
        return {"ci": None, "p_value": None}
    n, alpha = len(means), alpha_of(level)
    m = int(alpha * n / 2) + 1
    while m > 0 and not 2.0 * m / n < alpha:  # m: the largest tail count whose p-value is below alpha
        m -= 1
    tail = min(np.sum(means <= 0), np.sum(means >= 0))
    return {"ci": [float(means[m]), float(means[n - 1 - m])], "p_value": float(min(1.0, 2.0 * tail / n))}


def seed_aware_difference(
    pairs: Sequence[tuple[TaskItems, TaskItems]],
    resamples: int = bootstrap.RESAMPLES,
    seed: int = bootstrap.SEED,
    level: float = bootstrap.LEVEL,
) -> dict[str, dict]:
    """Score key -> B - A over the (A, B) pairs, one pair per training seed, all on the same items (the
    caller checks): `seed_record` of each key, every run resampled on the same item draws."""
    if not pairs:
        raise ValueError("seed_aware_difference needs at least one (A, B) pair")
    runs = [run for pair in pairs for run in pair]
    points = [bootstrap.point_scores(run) for run in runs]
    reps = bootstrap.replicate_scores(runs, resamples, seed)
    out = {}
    for key in reps[0]:
        a = [points[2 * i][key] for i in range(len(pairs))]
        b = [points[2 * i + 1][key] for i in range(len(pairs))]
        diffs = np.stack([reps[2 * i + 1][key] - reps[2 * i][key] for i in range(len(pairs))])  # (k, R)
        out[key] = seed_record(a, b, diffs, level, seed)
    return out


def seed_record(
    a: Sequence[float],
    b: Sequence[float],
    replicates: np.ndarray,
    level: float = bootstrap.LEVEL,
    seed: int = bootstrap.SEED,
) -> dict:
    """One score's comparison from each seed's A and B scores and its B - A on shared item draws (k, R):
    the per-seed differences and their spread, the item-level interval of their mean (`item`: the draws'
    percentiles and p-value, as `bootstrap.pooled_difference` gives them; it leaves the seeds out), the
    seed-aware interval, p-value and smallest detectable difference (None for one seed, where
    `detectable` is the items' alone: a lower bound), and the plain two-level bootstrap for reference."""
    deltas = [float(y - x) for x, y in zip(a, b)]
    k = len(deltas)
    replicates = np.asarray(replicates, dtype=np.float64).reshape(k, -1)
    mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
    pooled = replicates.mean(axis=0)  # (R,)
    item = bootstrap._difference(mean_a, mean_b, float(np.mean(deltas)), pooled, level)
    record = {
        "a": mean_a,
        "b": mean_b,
        "delta": item["delta"],
        "seeds": k,
        "deltas": deltas,
        "seed_sd": float(np.std(deltas, ddof=1)) if k > 1 else None,
        "item": {key: item[key] for key in ("ci", "p_value", "resamples")},
        "level": level,
        "two_level_bootstrap": None,
    }
    _add_seed_aware(record, float(_finite_variance(pooled)))
    if k > 1:
        record["two_level_bootstrap"] = two_level_bootstrap(replicates, level, seed)
    return record


def record_from_summary(
    a: float, b: float, deltas: Sequence[float], item_ci: Sequence[float], level: float = bootstrap.LEVEL
) -> dict:
    """A `seed_record` rebuilt without the per-item values, from what a summary keeps: each seed's B - A
    and the item-level percentile interval of their mean, whose variance is read off its width as a normal
    interval's ((high - low) / (2 z))^2. Close to the record from the items, not identical; `item_ci`
    stays the one given."""
    deltas = [float(d) for d in deltas]
    record = {
        "a": float(a),
        "b": float(b),
        "delta": float(np.mean(deltas)),
        "seeds": len(deltas),
        "deltas": deltas,
        "seed_sd": float(np.std(deltas, ddof=1)) if len(deltas) > 1 else None,
        "item": {"ci": list(item_ci) if item_ci else None, "p_value": None, "resamples": None},
        "level": level,
        "two_level_bootstrap": None,
        "item_variance_from": "the item-level CI's width",
    }
    z = stats.norm.ppf(0.5 + level / 2)
    _add_seed_aware(record, ((item_ci[1] - item_ci[0]) / (2 * z)) ** 2 if item_ci else 0.0)
    return record


def _add_seed_aware(record: dict, item_variance: float) -> None:
    """Fill the seed-aware fields of a record from its deltas and the item-level variance of their mean;
    with one seed only `detectable`, from the items alone (a lower bound on the true one)."""
    level = record["level"]
    record.update(ci=None, p_value=None, se=None, df=None, detectable=None)
    record["item_se"] = float(np.sqrt(item_variance))
    if record["seeds"] > 1:
        t = seed_t(np.asarray(record["deltas"]), item_variance, level)
        df = float(t["df"])
        record.update(
            ci=[float(t["low"]), float(t["high"])],
            p_value=float(t["p_value"]),
            se=float(t["se"]),
            df=df if np.isfinite(df) else None,  # None: the normal quantile (no seed spread)
            detectable=float(t["detectable"]),
        )
    else:
        z = stats.norm.ppf(0.5 + level / 2) + stats.norm.ppf(POWER)
        record["detectable"] = float(z * np.sqrt(item_variance))


def without_seed_noise(record: dict) -> dict:
    """A record of runs no training seed changes (two untrained models, each scored once): the seed-aware
    fields become the items' normal interval delta +- z * item_se and its p-value, which then carry the
    verdict (nothing else varies). The items' percentile interval stays under `item`."""
    z = stats.norm.ppf(0.5 + record["level"] / 2)
    se, delta = record["item_se"], record["delta"]
    t = abs(delta) / se if se > 0 else (0.0 if delta == 0 else np.inf)
    return {
        **record,
        "ci": [delta - z * se, delta + z * se],
        "p_value": float(2.0 * stats.norm.sf(t)),
        "se": se,
        "df": None,
        "detectable": float((z + stats.norm.ppf(POWER)) * se),
        "seed_noise": False,
    }


def format_p(p: float) -> str:
    """A p-value as tables print it: three decimals, and "<0.001" below that (never "0.000")."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _excludes_zero(ci: Sequence[float] | None) -> int:
    """+1 when the interval lies above 0, -1 below, 0 when it holds 0 (or is missing)."""
    if not ci:
        return 0
    return 1 if ci[0] > 0 else -1 if ci[1] < 0 else 0


def verdict(record: dict, direction: int, effect: float | None = None) -> dict:
    """Whether a `seed_record` reproduces a claim that B - A has sign `direction` (the paper's; `effect`
    its size in points, when it prints one): {"verdict": one of VERDICTS, "why": a short reason}.

    - reproduced: the seed-aware interval excludes 0 on the paper's side, and p < 1 - level (the two agree
      by construction; both are checked). A single seed is never more than suggestive, unless no seed
      changes the runs (`without_seed_noise`).
    - opposite: the seed-aware interval excludes 0 on the other side.
    - suggestive: only the item-level interval (the seeds as fixed) excludes 0 on the paper's side.
    - underpowered: none of the above, and the smallest detectable difference exceeds |effect|.
    - inconclusive: anything else.
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be 1 or -1, got {direction!r}")
    seeds, item = _excludes_zero(record["ci"]), _excludes_zero(record["item"]["ci"])
    alpha = alpha_of(record["level"])
    p = record["p_value"]
    detectable = record["detectable"]
    if seeds == direction and p is not None and p < alpha:
        return {"verdict": REPRODUCED, "why": f"seed-aware CI excludes 0, p {format_p(p)}"}
    if seeds == -direction:
        return {"verdict": OPPOSITE, "why": f"seed-aware CI excludes 0 on the other side, p {format_p(p)}"}
    if item == direction:
        why = (
            "one seed: only the item-level CI can exclude 0"
            if record["seeds"] < 2
            else f"only the item-level CI excludes 0; seed-aware p {format_p(p)}"
        )
        return {"verdict": SUGGESTIVE, "why": why}
    if effect is not None and detectable is not None and detectable > abs(effect):
        return {
            "verdict": UNDERPOWERED,
            "why": f"detects {detectable:.2f} or more, the paper's effect is {abs(effect):.2f}",
        }
    why = "the seed-aware CI includes 0" + ("" if effect is not None else "; the paper's effect is not known")
    return {"verdict": INCONCLUSIVE, "why": why}
