"""How tasks call an encoder: each distinct sentence once, and how many of a task's sentences it truncated."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sentkit.encoders.protocol import Encoder

TRUNCATED_KEY = "truncated_sentences"  # result key: distinct inputs of the task cut at the model's window


@dataclass
class EncodedTexts:
    """Vectors of distinct texts, looked up by text (`rows`) so duplicates share one encoding."""

    texts: list[str]
    vectors: np.ndarray  # (n_distinct, dim) float32
    index: dict[str, int]

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of `texts` in order, repeats included: (len(texts), dim)."""
        return self.vectors[[self.index[t] for t in texts]]


def encode_unique(encoder: Encoder, texts: Iterable[str], batch_size: int) -> EncodedTexts:
    """Encode each distinct text once, in first-seen order (one `encode` call)."""
    distinct = list(dict.fromkeys(texts))
    vectors = np.asarray(encoder.encode(distinct, batch_size=batch_size), dtype=np.float32)
    return EncodedTexts(distinct, vectors, {t: i for i, t in enumerate(distinct)})


def truncated_sentences(encoder: Encoder, texts: Iterable[str]) -> int | None:
    """How many distinct `texts` the encoder cut at its window (None: the encoder does not record it).

    Read from the encoder's `truncated_texts`, so sentences a run-wide cache served still count.
    """
    cut = getattr(encoder, "truncated_texts", None)
    if cut is None:
        return None
    return sum(1 for t in set(texts) if t in cut)


def with_truncation(scores: dict[str, float], encoder: Encoder, texts: Iterable[str]) -> dict[str, float]:
    """`scores` plus `truncated_sentences` (distinct inputs cut at the window) when the encoder records it."""
    count = truncated_sentences(encoder, texts)
    return scores if count is None else {**scores, TRUNCATED_KEY: float(count)}
