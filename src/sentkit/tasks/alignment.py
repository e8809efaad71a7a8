"""Alignment and uniformity of L2-normalised embeddings (Wang & Isola, 2020; EASE eqs. 5-6), on STS-B dev.

Positive pairs are STS-B dev pairs with gold > 4; uniformity runs over all distinct dev sentences (SimCSE's
choice of p_pos and p_data). Both are losses: lower is better. They are raw values, not percent;
`main_score` is -(alignment + uniformity), Wang & Isola's combined loss with weight 1, negated so that
higher is better like every other task.

Its confidence interval resamples positive pairs for alignment and sentences for uniformity; uniformity,
a mean over all sentence pairs, is resampled through per-sentence pseudo-values (its first-order
projection, `uniformity_pseudo_values`), which keeps the cost and the stored values linear in sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from sentkit.datasets.root import data_file
from sentkit.datasets.sts_pairs import STSPairs
from sentkit.datasets.stsb import read_stsb
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import Task
from sentkit.tasks.vectors import l2_normalize

POSITIVE_THRESHOLD = 4.0


def alignment_per_pair(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> np.ndarray:
    """||f(x_i) - f(y_i)||^alpha for each positive pair i, after L2 normalisation: (n,)."""
    diff = l2_normalize(x, np.float64) - l2_normalize(y, np.float64)  # (n, d)
    return np.linalg.norm(diff, axis=1) ** alpha


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    """E ||f(x) - f(y)||^alpha over positive pairs (row i of x with row i of y), after L2 normalisation."""
    return float(np.mean(alignment_per_pair(x, y, alpha)))


def uniformity(z: np.ndarray, t: float = 2.0, block: int = 1024) -> float:
    """log E exp(-t ||f(a) - f(b)||^2) over all distinct row pairs a < b of z, after L2 normalisation."""
    z = l2_normalize(z, np.float64)
    n = len(z)
    if n < 2:
        raise ValueError("uniformity needs at least 2 vectors")
    chunks = []
    for start in range(0, n, block):
        rows = z[start : start + block]  # (b, d)
        sq = np.clip(2.0 - 2.0 * rows @ z.T, 0.0, None)  # (b, n) squared distances of unit vectors
        i = np.arange(start, start + len(rows))[:, None]
        upper = np.arange(n)[None, :] > i  # keep each unordered pair once
        chunks.append(logsumexp(-t * sq[upper]) if upper.any() else -np.inf)
    return float(logsumexp(chunks) - np.log(n * (n - 1) / 2))


def uniformity_pseudo_values(z: np.ndarray, t: float = 2.0, block: int = 1024) -> np.ndarray:
    """2 h(a) - P for each row a: h(a) is the mean of exp(-t ||f(a) - f(b)||^2) over the other rows b and
    P = mean h, the pair mean inside `uniformity`. Their mean is P, so log(mean) is the uniformity, and a
    mean of resampled pseudo-values varies like the resampled pair mean to first order (Hoeffding)."""
    z = l2_normalize(z, np.float64)
    n = len(z)
    if n < 2:
        raise ValueError("uniformity needs at least 2 vectors")
    h = np.empty(n)
    for start in range(0, n, block):
        rows = z[start : start + block]  # (b, d)
        kernel = np.exp(-t * np.clip(2.0 - 2.0 * rows @ z.T, 0.0, None))  # (b, n)
        kernel[np.arange(len(rows)), np.arange(start, start + len(rows))] = (
            0.0  # no pair of a row with itself
        )
        h[start : start + len(rows)] = kernel.sum(axis=1) / (n - 1)
    return 2.0 * h - h.mean()


def alignment_uniformity(x: np.ndarray, y: np.ndarray, data: np.ndarray | None = None) -> tuple[float, float]:
    """(alignment over the pairs (x_i, y_i), uniformity over `data`, default the rows of x and y)."""
    return alignment(x, y), uniformity(np.vstack([x, y]) if data is None else data)


@dataclass
class AlignmentUniformityTask(Task):
    """Scores an encoder's embedding geometry; no gold ranking involved beyond picking positives."""

    pairs: STSPairs | None = field(default=None, repr=False)

    def load(self) -> None:
        if self.pairs is None:
            self.pairs = read_stsb(data_file("sts", "STSBenchmark", "sts-dev.csv", root=self.data_root))
            self.meta["positive_pairs"] = int((self.pairs.gold > POSITIVE_THRESHOLD).sum())

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        p = self.pairs
        encoded = encode_unique(encoder, [*p.sent1, *p.sent2], self.batch_size)
        pos = np.flatnonzero(p.gold > POSITIVE_THRESHOLD)
        a = encoded.rows([p.sent1[i] for i in pos])  # (n_pos, dim)
        b = encoded.rows([p.sent2[i] for i in pos])  # (n_pos, dim)
        align, unif = alignment(a, b), uniformity(encoded.vectors)
        self.meta["sentences"] = len(encoded.texts)
        items = TaskItems(unit="positive pair (alignment), sentence (uniformity)")
        pair_ids = digest_rows([p.sent1[i] for i in pos], [p.sent2[i] for i in pos])
        items.add("alignment", "mean", pair_ids, "positive pairs", value=alignment_per_pair(a, b))
        pseudo = uniformity_pseudo_values(encoded.vectors)
        items.add("uniformity", "log_mean", digest_rows(encoded.texts), "sentences", value=pseudo)
        items.aggregate("main_score", ["alignment", "uniformity"], combine="negative_sum")
        self.items = items
        scores = {"main_score": -(align + unif), "alignment": align, "uniformity": unif}
        return with_truncation(scores, encoder, encoded.texts)


def alignment_uniformity_task(*, langs=None, data_root=None, batch_size: int = 64) -> AlignmentUniformityTask:
    """STS-B dev alignment/uniformity (English only)."""
    select_languages("alignment-uniformity", langs, ("en",))
    return AlignmentUniformityTask(
        name="alignment-uniformity",
        languages=("en",),
        data_root=Path(data_root) if data_root is not None else None,
        batch_size=batch_size,
        meta={
            "positives": f"STS-B dev pairs with gold > {POSITIVE_THRESHOLD:g}",
            "units": "raw, lower is better",
        },
    )
