"""Whether a model still works, judged by what it does: the probe rule.

A few fixed sentences (the first distinct texts of the training data) are encoded once by the model the run
starts from, and again whenever a checkpoint, best/ or a score is due. Against the start, the model is
ruined when its embeddings of those sentences
- are not finite, or their mean norm grew `GROWTH` times (blow-up);
- collapsed: their spread (mean squared distance of the unit vectors from their centroid) fell under
  1/`COLLAPSE` of the start's, i.e. every sentence maps to nearly the same direction;
- lost the start's similarity structure: the Spearman correlation between the start's pairwise cosine
  similarities and the model's is below `RANK_FLOOR`.
The spread and structure rules apply only when the start itself has spread (`START_SPREAD_FLOOR`): a model
whose sentences all start in one direction (a randomly initialised [CLS] pooling) has no structure to lose.
The rule is described for users in docs/training.md ("A diverging run stops").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sentkit.datasets.columns import TEXT_COLUMNS

# 32 sentences give 496 pairs: the Spearman of two unrelated similarity structures is ~0 with a standard
# deviation of about 1/sqrt(496) = 0.045, so RANK_FLOOR is over 4 of them above chance, while a fine-tuning
# step only nudges the similarities (the start's order stays far above it).
PROBES = 32
MIN_PROBES = 4  # fewer distinct texts give too few pairs to rank: no probe check
# a norm 100 times the start's is orders of magnitude, as for the weights (sane_state.GROWTH)
GROWTH = 100.0
# contrastive objectives spread sentences out (uniformity), so a healthy run keeps or grows the spread;
# 10 times smaller is a start at mean cosine 0.9 squeezed to 0.99, and a fully collapsed model's spread is
# float noise (1e-5 and below), thousands of times smaller
COLLAPSE = 10.0
# a start whose unit vectors already lie within about 1% of each other (cosine above 0.99) has no spread
START_SPREAD_FLOOR = 1e-4
RANK_FLOOR = 0.2


def probe_sentences(dataset, limit: int = PROBES) -> list[str]:
    """The first `limit` distinct non-blank texts of the training rows (anchor, then positive, negative)."""
    columns = [c for c in TEXT_COLUMNS if c in dataset.column_names]
    found: dict[str, None] = {}
    head = dataset[: 4 * limit]  # enough rows in all but pathological data; the rest is not read
    for column in columns:
        for text in head[column]:
            if isinstance(text, str) and text.strip():
                found.setdefault(text)
            if len(found) >= limit:
                return list(found)
    return list(found)


@dataclass(frozen=True)
class ProbeRecord:
    """What the start model does on the probe sentences: its pairwise similarities, spread and mean norm."""

    texts: tuple[str, ...]
    similarities: tuple[float, ...]
    spread: float
    norm: float

    @classmethod
    def measure(cls, encoder, texts: Sequence[str]) -> ProbeRecord | None:
        """The start's record (None when there are too few distinct texts to judge by)."""
        if len(texts) < MIN_PROBES:
            return None
        shape = _shape(_encode(encoder, texts))
        if shape is None:  # a start that is itself not finite is caught by the weight checks
            return None
        sims, spread, norm = shape
        return cls(tuple(texts), tuple(float(s) for s in sims), spread, norm)

    def problem(self, encoder) -> str | None:
        """Why the encoder's model is ruined against this start (None when it still works)."""
        vectors = _encode(encoder, self.texts)
        shape = _shape(vectors)
        if shape is None:
            return "the model's embeddings of the probe sentences are not finite"
        sims, spread, norm = shape
        if not norm <= GROWTH * max(self.norm, 1e-12):
            return (
                f"the model's embeddings blew up: mean norm of the probe sentences' embeddings {self.norm:.3g} at "
                f"the start, {norm:.3g} now"
            )
        if self.spread < START_SPREAD_FLOOR:
            return None
        if not spread * COLLAPSE >= self.spread:
            return (
                f"the model collapsed: the probe sentences' embeddings all point the same way (spread "
                f"{self.spread:.3g} at the start, {spread:.3g} now)"
            )
        rho = _spearman(np.asarray(self.similarities), sims)
        if not rho >= RANK_FLOOR:
            return (
                f"the model lost what it knew: the probe sentences' similarities no longer follow the "
                f"start's (Spearman {rho:.2f}, below {RANK_FLOOR})"
            )
        return None

    def to_dict(self) -> dict:
        return {
            "texts": list(self.texts),
            "similarities": [round(s, 7) for s in self.similarities],
            "spread": self.spread,
            "norm": self.norm,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ProbeRecord:
        return cls(
            tuple(str(t) for t in data["texts"]),
            tuple(float(s) for s in data["similarities"]),
            float(data["spread"]),
            float(data["norm"]),
        )


def _encode(encoder, texts: Sequence[str]) -> np.ndarray:
    """The encoder's vectors of `texts` (eval mode, no gradient), leaving every RNG stream as it was."""
    from sentkit.training.rng import rng_preserved

    with rng_preserved():
        return np.asarray(encoder.encode(list(texts), batch_size=len(texts)), dtype=np.float64)


def _shape(vectors: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """(pairwise cosine similarities (upper triangle), spread, mean norm), None if any value is not finite."""
    if not np.isfinite(vectors).all():
        return None
    norms = np.linalg.norm(vectors, axis=1)  # (n,)
    norm = float(norms.mean())
    if not math.isfinite(norm) or not (norms > 0).all():
        return None if not math.isfinite(norm) else (np.zeros(0), 0.0, norm)
    unit = vectors / norms[:, None]  # (n, d)
    spread = float(max(1.0 - np.square(unit.mean(axis=0)).sum(), 0.0))
    sims = (unit @ unit.T)[np.triu_indices(len(unit), 1)]  # (n (n - 1) / 2,)
    return sims, spread, norm


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho (NaN when either side is constant, or the sizes differ)."""
    if a.shape != b.shape or a.size < 2:
        return math.nan
    from scipy.stats import spearmanr

    with np.errstate(invalid="ignore", divide="ignore"):
        return float(spearmanr(a, b).statistic)
