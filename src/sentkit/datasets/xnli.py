"""XNLI (Conneau et al. 2018) as shipped in SentEval's ml_transfer folder: premise<TAB>hypothesis<TAB>label
(the labelled-pair layout of datasets/labelled.py, with NLI labels)."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.labelled import LabelledPairs, load_split_pairs

XNLI_LANGS: tuple[str, ...] = (
    "ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh",
)  # fmt: skip
XNLI_LABELS: dict[str, int] = {"entailment": 0, "neutral": 1, "contradiction": 2}
XNLI_SPLITS = ("dev", "test")


def load_xnli(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """XNLI `{split}-{lang}.tsv` under `transfer/XNLI` (dev 2490 / test 5010 pairs per language)."""
    parts = ("transfer", "XNLI", f"{split}-{lang}.tsv")
    return load_split_pairs("XNLI", split, XNLI_SPLITS, parts, XNLI_LABELS, root)
