"""What evaluation needs from any encoder: sentences in, one float32 row per sentence out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    name: str

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:  # (n, dim) float32
        ...


def length_order(sentences: Sequence[str]) -> np.ndarray:
    """Indices that sort sentences longest first, so each batch pads to a similar length."""
    return np.argsort([-len(s) for s in sentences], kind="stable")
