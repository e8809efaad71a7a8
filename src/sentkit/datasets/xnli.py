"""XNLI (Conneau et al. 2018) as shipped in SentEval's ml_transfer folder: premise<TAB>hypothesis<TAB>label.

The tab-separated labelled-pair reader here is shared by the PAWS-X and QAM loaders, whose files have
the same three-column layout with other label vocabularies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.datasets.lines import iter_utf8_lines
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

XNLI_LANGS: tuple[str, ...] = (
    "ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh",
)  # fmt: skip
XNLI_LABELS: dict[str, int] = {"entailment": 0, "neutral": 1, "contradiction": 2}
XNLI_SPLITS = ("dev", "test")


@dataclass
class LabelledPairs:
    """Sentence pairs with an integer class each (row i = first[i], second[i], labels[i])."""

    first: list[str]
    second: list[str]
    labels: np.ndarray  # (n,) int64

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, rows: np.ndarray) -> LabelledPairs:
        return LabelledPairs([self.first[i] for i in rows], [self.second[i] for i in rows], self.labels[rows])


def read_labelled_pairs(path: str | Path, label_ids: Mapping[str, int]) -> LabelledPairs:
    """Read `text<TAB>text<TAB>label` lines (no header); a bad line raises DataFormatError(file:line)."""
    first, second, labels = [], [], []
    for number, line in iter_utf8_lines(path):
        fields = line.split("\t")
        if len(fields) != 3:
            raise DataFormatError(path, number, f"expected 3 tab-separated fields, got {len(fields)}")
        label = fields[2].strip()
        if label not in label_ids:
            raise DataFormatError(
                path, number, f"expected a label in {sorted(label_ids)} in field 3, got {label!r}"
            )
        first.append(fields[0])
        second.append(fields[1])
        labels.append(label_ids[label])
    if not labels:
        raise DataFormatError(path, None, "expected at least one labelled pair, got an empty file")
    return LabelledPairs(first, second, np.asarray(labels, dtype=np.int64))


def load_split_pairs(
    name: str, split: str, splits: tuple[str, ...], parts: tuple[str, ...], label_ids: Mapping[str, int], root
) -> LabelledPairs:
    """One split of a labelled-pair dataset: check `split`, then read `data_file(*parts)`."""
    if split not in splits:
        raise ValueError(f"{name} split must be one of {splits}, got {split!r}")
    return read_labelled_pairs(data_file(*parts, root=root), label_ids)


def load_xnli(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """XNLI `{split}-{lang}.tsv` under `transfer/XNLI` (dev 2490 / test 5010 pairs per language)."""
    parts = ("transfer", "XNLI", f"{split}-{lang}.tsv")
    return load_split_pairs("XNLI", split, XNLI_SPLITS, parts, XNLI_LABELS, root)
