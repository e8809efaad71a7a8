"""The evaluation task contract: a name, languages, real files, and `evaluate(encoder) -> scores`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.encoders.protocol import Encoder
from sentkit.stats.items import TaskItems

SUBSAMPLE_SEED = 1111  # one seed for every task's subsample, so tasks on the same file keep the same rows


def subsample(n: int, limit: int | None, seed: int = SUBSAMPLE_SEED) -> np.ndarray:
    """Sorted row indices of a seeded sample of `limit` rows (all rows if limit is None or >= n).

    Every language uses the same seed, so on parallel test sets (XNLI, PAWS-X) the same items are kept,
    and two tasks sampling one file (MewsC-16 clustering and kNN) see the same rows.
    """
    if limit is None or limit >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def holdout(n: int, used: int, limit: int | None = None, seed: int = SUBSAMPLE_SEED) -> np.ndarray:
    """Sorted row indices outside `subsample(n, used, seed)`, the rows a task sampled with limit `used`
    keeps: a test set disjoint from it (docs/preregistration.md). `limit` keeps a seeded sample of them,
    drawn from a stream of its own (seed, used)."""
    rest = np.setdiff1d(np.arange(n), subsample(n, used, seed))
    if len(rest) == 0:
        raise ValueError(f"no rows are held out: the {used}-row sample takes all {n}")
    if limit is None or limit >= len(rest):
        return rest
    return np.sort(np.random.default_rng([seed, used]).choice(rest, size=limit, replace=False))


@dataclass
class Task:
    """Subclasses load their real files lazily and return scores in percent.

    `evaluate` returns a flat dict: `main_score` (MTEB convention) plus breakdown keys such as a
    language pair (`en-de`), a dataset (`STS12`) or a direction (`deu->eng`). It also sets `items`, the
    per-item values its scores are recomputed from (confidence intervals, paired comparisons).
    """

    name: str = ""
    languages: tuple[str, ...] = ()
    data_root: Path | None = None
    batch_size: int = 64
    meta: dict = field(default_factory=dict)
    items: TaskItems | None = field(default=None, repr=False)

    def load(self) -> None:  # pragma: no cover - each task implements it
        raise NotImplementedError

    def evaluate(self, encoder: Encoder) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError
