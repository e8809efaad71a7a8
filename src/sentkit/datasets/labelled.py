"""Labelled texts and labelled sentence pairs: the shapes classification-style readers return, and the
reader of the common `text<TAB>text<TAB>label` layout (XNLI, PAWS-X, QAM as shipped in SentEval)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.datasets.lines import iter_utf8_lines
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError


@dataclass
class LabelledTexts:
    """Texts with a class each (int ids for MARC stars, category names for MewsC-16)."""

    texts: list[str]
    labels: np.ndarray  # (n,)

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, rows: np.ndarray) -> LabelledTexts:
        return LabelledTexts([self.texts[i] for i in rows], self.labels[rows])


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
