"""XGLUE QAM (Liang et al. 2020) question-passage matching: question<TAB>passage<TAB>0|1, 10000 per file."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.root import data_file
from sentkit.datasets.xnli import LabelledPairs, read_labelled_pairs

QAM_LANGS: tuple[str, ...] = ("de", "en", "fr")
QAM_LABELS: dict[str, int] = {"0": 0, "1": 1}
QAM_SPLITS = ("dev", "test")


def load_qam(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """QAM `{split}.{lang}` under `transfer/QAM`; label 1 = the passage answers the question."""
    if split not in QAM_SPLITS:
        raise ValueError(f"QAM split must be one of {QAM_SPLITS}, got {split!r}")
    return read_labelled_pairs(data_file("transfer", "QAM", f"{split}.{lang}", root=root), QAM_LABELS)
