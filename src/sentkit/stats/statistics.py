"""The statistics a task's per-item values are scored with, each computed at once over many bootstrap
replicates from how often each item was drawn (docs/statistics.md). Named by the task's items file
(`TaskItems.statistic`), so the items and the bootstrap agree on one table."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# statistic(arrays, counts (c, n): how often each item was drawn in each of c replicates) -> (c,) scores
Statistic = Callable[[dict[str, np.ndarray], np.ndarray], np.ndarray]


def _mean(arrays: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Mean of per-item values (already in the score's units: 0/100 hits, 100 x AP)."""
    return counts @ arrays["value"].astype(np.float64) / counts.shape[1]


def _percent(arrays: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Percent of drawn items that are hits (a retrieved translation, a correctly labelled row); a 2-d
    `hit` (n, runs) is one hit per k-means seed, each item then counting its share of hits."""
    hit = arrays["hit"].reshape(counts.shape[1], -1).astype(np.float64).mean(axis=1)  # (n,)
    return 100.0 * (counts @ hit) / counts.shape[1]


def _log_mean(arrays: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """log of a mean: uniformity from its per-sentence pseudo-values (a drawn mean <= 0 gives NaN)."""
    mean = _mean(arrays, counts)
    return np.log(mean, out=np.full_like(mean, np.nan), where=mean > 0)


def _midranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(c, n): in each replicate, the average rank of each item's value among the drawn items (ties,
    drawn copies included, share their mean rank, as scipy's rankdata gives them), without sorting
    each replicate."""
    _, group = np.unique(values, return_inverse=True)  # (n,) id of each item's value, ascending
    order = np.argsort(group, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0])
    drawn = np.add.reduceat(counts[:, order], starts, axis=1)  # (c, distinct values): draws of each
    mid = np.cumsum(drawn, axis=1) - (drawn - 1) / 2  # (c, distinct values): mean of the ranks they take
    return mid[:, group.ravel()]


def _spearman(arrays: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Spearman x100 of (pred, gold) on the drawn pairs: Pearson of average ranks, each drawn copy counted."""
    n = counts.shape[1]
    pred = _midranks(arrays["pred"], counts) - (n + 1) / 2  # ranks of n draws average (n + 1) / 2
    gold = _midranks(arrays["gold"], counts) - (n + 1) / 2
    cov = np.einsum("cn,cn,cn->c", counts, pred, gold)
    norm = np.sqrt(
        np.einsum("cn,cn,cn->c", counts, pred, pred) * np.einsum("cn,cn,cn->c", counts, gold, gold)
    )
    return 100.0 * np.divide(cov, norm, out=np.full_like(cov, np.nan), where=norm > 0)


def _two_fold_f1(arrays: dict[str, np.ndarray], counts: np.ndarray) -> np.ndarray:
    """BUCC's two-fold F1 x100 from per-source-sentence counts at the fixed tuned thresholds.

    Per source sentence: its `fold`, `kept` candidates at its fold's threshold, `tp` correct among them,
    and `gold` pairs. Each fold's F1 is 2 TP / (kept + gold) over its drawn sentences; the score is their mean.
    """
    member = np.stack([arrays["fold"] == 0, arrays["fold"] == 1], axis=1)  # (n, 2)
    per_item = np.concatenate([member * arrays[k][:, None] for k in ("tp", "kept", "gold")], axis=1)  # (n, 6)
    sums = counts @ per_item.astype(np.float64)  # (c, 6): tp, kept, gold of fold 0 and fold 1
    tp, kept, gold = sums[:, 0:2], sums[:, 2:4], sums[:, 4:6]  # (c, 2) each
    f1 = np.divide(2.0 * tp, kept + gold, out=np.zeros_like(tp), where=tp > 0)
    return 100.0 * f1.mean(axis=1)


STATISTICS: dict[str, Statistic] = {
    "mean": _mean,
    "percent": _percent,
    "log_mean": _log_mean,
    "spearman": _spearman,
    "two_fold_f1": _two_fold_f1,
}
