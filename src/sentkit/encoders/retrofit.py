"""Retrofitting (Cai et al. 2022 sec. 4.2): two encoders' vectors of a sentence combined into one embedding.

The paper combines a text vector s with the vector h of the sentence's AMR graph; here either side is any
encoder (the AMR graph encoder is `sentkit.amr.encoder.AmrEncoder`). `combine` picks s, h, s+h, s concat h,
or the same two on L2-normalised parts (the paper's best and our default: normalised concatenation).
The name `retrofit:<text model>+<AMR encoder folder>[@combine]` resolves in `sentkit.load_encoder`, which
hands `load_retrofit` the AMR side's loader: this package never imports the AMR package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

COMBINATIONS = ("s", "h", "sum", "concat", "sum_norm", "concat_norm")
DEFAULT_COMBINATION = "concat_norm"


def _l2(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # (n, dim)


def combine_vectors(s: np.ndarray, h: np.ndarray, how: str = DEFAULT_COMBINATION) -> np.ndarray:
    """s (n, d_s) and h (n, d_h) -> one matrix: s | h | s+h | [s; h] | s/|s|+h/|h| | [s/|s|; h/|h|]."""
    if how not in COMBINATIONS:
        raise ValueError(f"combine must be one of {COMBINATIONS}, got {how!r}")
    if how == "s":
        return s
    if how == "h":
        return h
    if how.endswith("_norm"):
        s, h = _l2(s), _l2(h)
    if how.startswith("sum"):
        if s.shape[1] != h.shape[1]:
            raise ValueError(
                f"combine={how!r} adds vectors of equal size, got text {s.shape[1]} and AMR {h.shape[1]} "
                "dimensions; use concat or concat_norm"
            )
        return (s + h).astype(np.float32)
    return np.concatenate([s, h], axis=1).astype(np.float32)  # (n, d_s + d_h)


class RetrofitEncoder:
    """Two encoders, s from `text` and h from `other` (Cai et al.: the AMR graph encoder); `encode` returns
    their combination (one row per sentence)."""

    def __init__(self, text, other, combine: str = DEFAULT_COMBINATION, name: str | None = None) -> None:
        if combine not in COMBINATIONS:
            raise ValueError(f"combine must be one of {COMBINATIONS}, got {combine!r}")
        self.text = text
        self.other = other
        self.combine = combine
        self.name = name or f"retrofit:{text.name}+{other.name}@{combine}"

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        s = (
            np.asarray(self.text.encode(sentences, batch_size=batch_size), dtype=np.float32)
            if (self.combine != "h")
            else None
        )
        h = (
            np.asarray(self.other.encode(sentences, batch_size=batch_size), dtype=np.float32)
            if (self.combine != "s")
            else None
        )
        if s is None:
            return h
        if h is None:
            return s
        return combine_vectors(s, h, self.combine)


def load_retrofit(
    spec: str, load_other: Callable[[str], object], combine: str | None = None, **kwargs
) -> RetrofitEncoder:
    """`<text model>+<other>[@combine]`: the text side any encoder name (`kwargs` go to its loader), the
    other side whatever `load_other` makes of its name (`sentkit.load_encoder` passes the AMR encoder's)."""
    from sentkit.encoders import load_encoder

    spec, _, suffix = spec.rpartition("@") if "@" in spec else (spec, "", "")
    text_name, plus, other_name = spec.partition("+")
    if not plus or not text_name or not other_name:
        raise ValueError(f"expected retrofit:<text model>+<amr model>[@combine], got retrofit:{spec}")
    how = combine or suffix or DEFAULT_COMBINATION
    return RetrofitEncoder(load_encoder(text_name, **kwargs), load_other(other_name), how)
