"""SICK / JSICK entailment judgments as NLI rows (SentEval's SICK_*.txt: a header naming sentence_A,
sentence_B and entailment_judgment). JCSE's offline stage-two data: JSICK train (4500 pairs)."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.nli import CONTRADICTION, NLI_LABELS, NliRow
from sentkit.datasets.root import data_file
from sentkit.datasets.sick import sick_columns
from sentkit.errors import DataFormatError

COLUMNS = ("sentence_A", "sentence_B", "entailment_judgment")
JSICK_SPLITS = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def read_sick_nli(path: str | Path, lang: str = "en", symmetric_contradiction: bool = True) -> list[NliRow]:
    """A -> B rows labelled ENTAILMENT / NEUTRAL / CONTRADICTION (any case). With `symmetric_contradiction`
    each contradiction is also given as B -> A: contradiction is symmetric, and SICK pairs rarely share a
    premise, so this more than doubles the triplets (JSICK train: 117 -> 215)."""
    path = Path(path)
    (a, b, judgment), table = sick_columns(path, COLUMNS)
    rows = []
    for number, fields in table:
        label = fields[judgment].strip().lower()
        if label not in NLI_LABELS:
            raise DataFormatError(
                path, number, f"expected an entailment_judgment in {list(NLI_LABELS)}, got {label!r}"
            )
        rows.append(NliRow(fields[a], fields[b], label, lang))
        if symmetric_contradiction and label == CONTRADICTION:
            rows.append(NliRow(fields[b], fields[a], label, lang))
    if not rows:
        raise DataFormatError(path, None, "expected at least one labelled pair, found none")
    return rows


def read_jsick_nli(split: str = "train", root: str | Path | None = None, **options) -> list[NliRow]:
    """JSICK `sts-ja/JSICK/SICK_{split}.txt` as Japanese NLI rows; the test split is the `jsick` STS task."""
    if split not in JSICK_SPLITS:
        raise ValueError(f"JSICK split must be one of {list(JSICK_SPLITS)}, got {split!r}")
    return read_sick_nli(data_file("sts-ja", "JSICK", JSICK_SPLITS[split], root=root), lang="ja", **options)
