"""Retrofitting (Cai et al. 2022 sec. 4.2): two encoders' vectors of a sentence combined into one embedding.

The paper combines a text vector s with the vector h of the sentence's AMR graph; here either side is any
encoder (the AMR graph encoder is `sentkit.amr.encoder.AmrEncoder`). `combine` picks s, h, s+h, s concat h,
or the same two on L2-normalised parts (the paper's best and our default: normalised concatenation), or
`concat_norm_w<w>`: [s/|s| ; w h/|h|], whose weight `choose_concat_weight` picks on a dev split.
The name `retrofit:<text model>+<AMR encoder folder>[@combine]` resolves in `sentkit.load_encoder`, which
hands `load_retrofit` the AMR side's loader: this package never imports the AMR package.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

COMBINATIONS = ("s", "h", "sum", "concat", "sum_norm", "concat_norm")
DEFAULT_COMBINATION = "concat_norm"
WEIGHTED = "concat_norm_w"  # + a weight w >= 0: concat_norm_w0.5 is [s/|s| ; 0.5 h/|h|]
# the grid `choose_concat_weight` searches: w = 1 is concat_norm, w = 0 is s alone
DEV_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.25, 1.5, 2.0)


def weighted_name(weight: float) -> str:
    """The combine name of a weighted normalised concatenation: 0.5 -> "concat_norm_w0.5"."""
    return f"{WEIGHTED}{weight:g}"


def parse_combination(how: str) -> tuple[str, float | None]:
    """A combine name -> (one of COMBINATIONS, the weight of h or None); a bad name raises ValueError."""
    if how in COMBINATIONS:
        return how, None
    if how.startswith(WEIGHTED):
        text = how.removeprefix(WEIGHTED)
        try:
            weight = float(text)
        except ValueError:
            weight = math.nan
        if math.isfinite(weight) and weight >= 0 and text.strip() == text:
            return "concat_norm", weight
        raise ValueError(f"combine {how!r}: expected {WEIGHTED}<weight>, a number >= 0 (e.g. {WEIGHTED}0.5)")
    raise ValueError(f"combine must be one of {COMBINATIONS} or {WEIGHTED}<weight>, got {how!r}")


def _l2(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # (n, dim)


def combine_vectors(s: np.ndarray, h: np.ndarray, how: str = DEFAULT_COMBINATION) -> np.ndarray:
    """s (n, d_s) and h (n, d_h) -> one matrix: s | h | s+h | [s; h] | s/|s|+h/|h| | [s/|s|; h/|h|] |
    [s/|s|; w h/|h|] (`concat_norm_w<w>`: the cosine of two such rows is (cos_s + w^2 cos_h) / (1 + w^2))."""
    base, weight = parse_combination(how)
    if base == "s":
        return s
    if base == "h":
        return h
    if base.endswith("_norm"):
        s, h = _l2(s), _l2(h)
    if weight is not None:
        h = weight * h
    if base.startswith("sum"):
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
        parse_combination(combine)
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


class _Memo:
    """Encodes each distinct sentence once, however many combinations are scored."""

    def __init__(self, encoder) -> None:
        self.encoder, self.name = encoder, encoder.name
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        todo = list(dict.fromkeys(s for s in sentences if s not in self.cache))
        if todo:
            vectors = np.asarray(self.encoder.encode(todo, batch_size=batch_size), dtype=np.float32)
            self.cache.update(zip(todo, vectors))
        return np.stack([self.cache[s] for s in sentences])


@dataclass(frozen=True)
class WeightChoice:
    """The weight `choose_concat_weight` picked, its combine name, and the dev score at every weight tried."""

    weight: float
    combine: str
    task: str
    curve: dict[float, float]  # weight -> the dev task's main score


def choose_concat_weight(text, other, dev_task, weights: Sequence[float] = DEV_WEIGHTS) -> WeightChoice:
    """The weight w of `concat_norm_w<w>` with the best `dev_task` main score (Spearman for STS) over
    `weights`; ties go to the weight nearest 1 (the paper's plain normalised concatenation).

    Why: a text encoder whose cosines are compressed (e5: sd 0.057 over STS-B pairs) lets h decide the
    ranking of the plain average. Give it a dev split (`stsb-dev`, `jacsts-dev`, ...), never the test set
    the combination is then reported on; a task that declares `meta["split"] == "test"` is refused.
    """
    split = getattr(dev_task, "meta", {}).get("split", "")
    if str(split).startswith("test"):
        raise ValueError(f"{dev_task.name}: a test split; choose the weight on a dev split (e.g. stsb-dev)")
    weights = sorted({float(w) for w in weights})
    if not weights or any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError(f"weights must be numbers >= 0, got {weights}")
    s, h = _Memo(text), _Memo(other)
    curve = {
        w: float(dev_task.evaluate(RetrofitEncoder(s, h, weighted_name(w)))["main_score"]) for w in weights
    }
    best = max(weights, key=lambda w: (curve[w], -abs(w - 1.0)))
    return WeightChoice(best, weighted_name(best), dev_task.name, curve)


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
    parse_combination(how)  # a bad name fails before either model loads
    return RetrofitEncoder(load_encoder(text_name, **kwargs), load_other(other_name), how)
