"""PAWS-X (Yang et al. 2019) paraphrase pairs: sentence1<TAB>sentence2<TAB>0|1, dev/test 2000 per language."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.labelled import LabelledPairs, load_split_pairs

PAWSX_LANGS: tuple[str, ...] = ("de", "en", "es", "fr", "ja", "ko", "zh")
PAWSX_LABELS: dict[str, int] = {"0": 0, "1": 1}
PAWSX_SPLITS = ("dev", "test")


def load_pawsx(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """PAWS-X `{split}-{lang}.tsv` under `transfer/PAWSX`; label 1 = paraphrase."""
    return load_split_pairs(
        "PAWS-X", split, PAWSX_SPLITS, ("transfer", "PAWSX", f"{split}-{lang}.tsv"), PAWSX_LABELS, root
    )
