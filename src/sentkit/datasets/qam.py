"""XGLUE QAM (Liang et al. 2020) question-passage matching: question<TAB>passage<TAB>0|1, 10000 per file."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.labelled import LabelledPairs, load_split_pairs

QAM_LANGS: tuple[str, ...] = ("de", "en", "fr")
QAM_LABELS: dict[str, int] = {"0": 0, "1": 1}
QAM_SPLITS = ("dev", "test")


def load_qam(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """QAM `{split}.{lang}` under `transfer/QAM`; label 1 = the passage answers the question."""
    return load_split_pairs(
        "QAM", split, QAM_SPLITS, ("transfer", "QAM", f"{split}.{lang}"), QAM_LABELS, root
    )
