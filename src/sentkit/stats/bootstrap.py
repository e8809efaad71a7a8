"""Percentile bootstrap over a task's test items: confidence intervals and paired differences.

One replicate draws, for each stratum of n items, n item indices with replacement, and recomputes every
group's metric on the drawn items (a Spearman on the drawn STS pairs, the share of drawn Tatoeba
sentences whose translation was retrieved, ...); an aggregate such as main_score is then formed from
its groups' replicate scores. The draws depend only on (seed, stratum name, n, resamples), so two runs on
the same items are scored on the very same resamples: that pairing is what `paired_difference` uses.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from sentkit.stats.items import TaskItems
from sentkit.stats.statistics import STATISTICS

RESAMPLES = 1000
SEED = 0  # fixed and recorded: every run's intervals come from the same draws
LEVEL = 0.95
CHUNK = 100  # replicates drawn and scored at once: CHUNK x n indices in memory


def resample_indices(n: int, resamples: int, seed: int, stratum: str) -> Iterator[np.ndarray]:
    """The draws of one stratum, in chunks of CHUNK replicates: (c, n) indices in [0, n)."""
    rng = np.random.default_rng([seed, zlib.crc32(stratum.encode("utf-8"))])
    for start in range(0, resamples, CHUNK):
        yield rng.integers(0, n, size=(min(CHUNK, resamples - start), n))


def _draw_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(c, n) indices -> (c, n) float counts: how often each item was drawn in each replicate."""
    c = idx.shape[0]
    flat = (idx + (np.arange(c) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=c * n).reshape(c, n).astype(np.float64)


def _check_same_layout(runs: Sequence[TaskItems]) -> None:
    first = runs[0]
    for other in runs[1:]:
        layout = {k: (g.statistic, g.stratum, g.n) for k, g in first.groups.items()}
        if layout != {k: (g.statistic, g.stratum, g.n) for k, g in other.groups.items()}:
            raise ValueError("runs differ in their groups, strata or item counts")


def _combine(items: TaskItems, groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Group scores -> group and aggregate scores (arrays of any shape, combined elementwise)."""
    out = dict(groups)
    for name, agg in items.aggregates.items():
        stacked = np.stack([groups[g] for g in agg.groups])
        out[name] = stacked.mean(axis=0) if agg.combine == "mean" else -stacked.sum(axis=0)
    return out


def point_scores(items: TaskItems) -> dict[str, float]:
    """Every group and aggregate score on the items as they are (no resampling)."""
    groups = {}
    for key, g in items.groups.items():
        groups[key] = float(STATISTICS[g.statistic](g.arrays, np.ones((1, g.n)))[0])  # each item once
    return {k: float(v) for k, v in _combine(items, groups).items()}


def replicate_scores(
    runs: Sequence[TaskItems], resamples: int = RESAMPLES, seed: int = SEED
) -> list[dict[str, np.ndarray]]:
    """For each run (all on the same items), `resamples` replicate scores of every group and aggregate."""
    if resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples}")
    _check_same_layout(runs)
    first = runs[0]
    reps = [{key: np.empty(resamples) for key in first.groups} for _ in runs]
    for stratum, n in first.strata().items():
        keys = [k for k, g in first.groups.items() if g.stratum == stratum]
        start = 0
        for idx in resample_indices(n, resamples, seed, stratum):
            counts = _draw_counts(idx, n)
            for run, out in zip(runs, reps):
                for key in keys:
                    g = run.groups[key]
                    out[key][start : start + len(idx)] = STATISTICS[g.statistic](g.arrays, counts)
            start += len(idx)
    return [_combine(run, out) for run, out in zip(runs, reps)]


def percentile_interval(replicates: np.ndarray, level: float = LEVEL) -> list[float] | None:
    """The central `level` percentile interval of the finite replicates (None if there are none)."""
    finite = replicates[np.isfinite(replicates)]
    if len(finite) == 0:
        return None
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return [float(low), float(high)]


def confidence_intervals(
    items: TaskItems, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> dict[str, list[float]]:
    """Score key -> [low, high] percentile bootstrap interval, for every group and aggregate."""
    reps = replicate_scores([items], resamples, seed)[0]
    intervals = {key: percentile_interval(values, level) for key, values in reps.items()}
    return {key: ci for key, ci in intervals.items() if ci is not None}


# Fewer items than this in a stratum and a percentile interval means little: resamples of a handful of items
# take few distinct values (4 STS pairs are ranked the same way in most draws, giving [100, 100]), and the
# percentile bootstrap is known to undercover at such sizes. 30 is the usual rule of thumb for it.
MIN_ITEMS = 30


def interval_warnings(items: TaskItems, intervals: dict[str, list[float]], level: float = LEVEL) -> list[str]:
    """Why a task's intervals do not measure its uncertainty: strata of fewer than MIN_ITEMS items, or else a
    main_score interval of zero width (every resample gave the same score). Empty when neither holds."""
    strata = items.strata()
    small = {name: n for name, n in strata.items() if n < MIN_ITEMS}
    pct = f"{100 * level:g}%"
    main = intervals.get("main_score")
    shown = f" {_interval_text(main)}" if main is not None else ""
    if len(strata) == 1 and small:
        n = next(iter(small.values()))
        return [
            f"only {n} items: too few for a bootstrap interval (at least {MIN_ITEMS} needed), so its {pct} "
            f"CI{shown} does not measure the uncertainty"
        ]
    if small:
        listed = ", ".join(f"{name}: {n}" for name, n in list(small.items())[:3])
        more = f" and {len(small) - 3} more" if len(small) > 3 else ""
        return [
            f"{len(small)} of its {len(strata)} item sets hold fewer than {MIN_ITEMS} items ({listed}{more}): "
            f"their {pct} CIs do not measure the uncertainty"
        ]
    if main is not None and main[0] == main[1]:
        return [
            f"every resample gave main_score {main[0]:.2f}, so its {pct} CI{shown} has no width and does not "
            "measure the uncertainty"
        ]
    return []


def _interval_text(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def paired_difference(
    a: TaskItems, b: TaskItems, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> dict[str, dict]:
    """Score key -> B - A with its paired percentile interval and a two-sided bootstrap p-value.

    Both runs are scored on the same resamples; the p-value is the share of replicate differences at
    least as far from the observed difference as that difference is from zero (the bootstrap
    distribution shifted to the null of no difference), (1 + count) / (1 + replicates).
    """
    point_a, point_b = point_scores(a), point_scores(b)
    reps_a, reps_b = replicate_scores([a, b], resamples, seed)
    return {
        key: _difference(
            point_a[key], point_b[key], point_b[key] - point_a[key], reps_b[key] - reps_a[key], level
        )
        for key in reps_a
    }


def pooled_difference(
    pairs: Sequence[tuple[TaskItems, TaskItems]],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> dict[str, dict]:
    """Score key -> the mean over (A, B) pairs of B - A, e.g. one pair per training seed, all on the same
    items: every run is scored on the same resamples, and each resample's statistic is the mean of its
    pairs' differences. The interval and p-value are formed as in `paired_difference`, which one pair
    reproduces exactly; `deltas` lists each pair's own B - A. The interval covers the choice of test items
    for these runs, not the spread over further seeds (read that from `deltas`)."""
    if not pairs:
        raise ValueError("pooled_difference needs at least one (A, B) pair")
    runs = [run for pair in pairs for run in pair]
    points = [point_scores(run) for run in runs]
    reps = replicate_scores(runs, resamples, seed)
    out = {}
    for key in reps[0]:
        deltas = [points[2 * i + 1][key] - points[2 * i][key] for i in range(len(pairs))]
        diffs = np.mean([reps[2 * i + 1][key] - reps[2 * i][key] for i in range(len(pairs))], axis=0)  # (R,)
        mean_a = float(np.mean([points[2 * i][key] for i in range(len(pairs))]))
        mean_b = float(np.mean([points[2 * i + 1][key] for i in range(len(pairs))]))
        out[key] = _difference(mean_a, mean_b, float(np.mean(deltas)), diffs, level)
        out[key]["deltas"] = deltas
    return out


def _difference(a: float, b: float, delta: float, diffs: np.ndarray, level: float) -> dict:
    """A difference's record: the point values, its percentile interval and two-sided p-value."""
    diffs = diffs[np.isfinite(diffs)]
    extreme = int(np.sum(np.abs(diffs - delta) >= abs(delta)))
    return {
        "a": a,
        "b": b,
        "delta": delta,
        "ci": percentile_interval(diffs, level),
        "p_value": (1 + extreme) / (1 + len(diffs)),
        "resamples": len(diffs),
    }
