"""The common shape of every STS reader: two sentence lists and a gold score per pair."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.datasets.lines import read_lines
from sentkit.errors import DataFormatError

# Gold scales: SemEval STS 2012-2017, STS-B, JSTS and JAC-STS annotate 0-5; SICK/JSICK relatedness is 1-5.
STS_SCALE: tuple[float, float] = (0.0, 5.0)
SICK_SCALE: tuple[float, float] = (1.0, 5.0)


@dataclass
class STSPairs:
    """Sentence pairs with gold similarity; `lang` is "en" or a pair "en-de", `dataset` names the source."""

    sent1: list[str]
    sent2: list[str]
    gold: np.ndarray  # (n,) float64
    lang: str
    dataset: str

    def __post_init__(self) -> None:
        if not len(self.sent1) == len(self.sent2) == len(self.gold):
            raise ValueError(
                f"{self.dataset}: {len(self.sent1)} first sentences, {len(self.sent2)} second, "
                f"{len(self.gold)} gold scores"
            )

    def __len__(self) -> int:
        return len(self.gold)


def concat_pairs(parts: Sequence[STSPairs], dataset: str) -> STSPairs:
    """One set from several (SentEval's "all" setting pools a year's subsets before ranking)."""
    langs = sorted({p.lang for p in parts})
    return STSPairs(
        sent1=[s for p in parts for s in p.sent1],
        sent2=[s for p in parts for s in p.sent2],
        gold=np.concatenate([p.gold for p in parts]) if parts else np.zeros(0),
        lang=langs[0] if len(langs) == 1 else ",".join(langs),
        dataset=dataset,
    )


def tab_rows(path: str | Path, min_fields: int, what: str) -> Iterator[tuple[int, list[str]]]:
    """(1-based line, fields) of a tab-separated file, no quoting; trailing blank lines are ignored.

    `what` names the expected columns for the error message, e.g. "score, sentence1, sentence2".
    """
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if not line.strip() or len(fields) < min_fields:
            got = "a blank line" if not line.strip() else f"{len(fields)}"
            raise DataFormatError(
                path, number, f"expected {min_fields} tab-separated fields ({what}), got {got}"
            )
        yield number, fields


def parse_score(text: str, path: str | Path, line: int, scale: tuple[float, float] | None = None) -> float:
    """A finite gold score inside `scale` (inclusive; None = any), or a DataFormatError naming file and line."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataFormatError(path, line, f"expected a numeric similarity score, got {text!r}")
    if scale is not None and not scale[0] <= value <= scale[1]:
        raise DataFormatError(
            path, line, f"expected a similarity score in [{scale[0]:g}, {scale[1]:g}], got {text.strip()!r}"
        )
    return value
