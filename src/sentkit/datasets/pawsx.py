"""PAWS-X (Yang et al. 2019) paraphrase pairs: sentence1<TAB>sentence2<TAB>0|1, dev/test 2000 per language."""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.root import data_file
from sentkit.datasets.xnli import LabelledPairs, read_labelled_pairs

PAWSX_LANGS: tuple[str, ...] = ("de", "en", "es", "fr", "ja", "ko", "zh")
PAWSX_LABELS: dict[str, int] = {"0": 0, "1": 1}
PAWSX_SPLITS = ("dev", "test")


def load_pawsx(lang: str, split: str, root: str | Path | None = None) -> LabelledPairs:
    """PAWS-X `{split}-{lang}.tsv` under `transfer/PAWSX`; label 1 = paraphrase."""
    if split not in PAWSX_SPLITS:
        raise ValueError(f"PAWS-X split must be one of {PAWSX_SPLITS}, got {split!r}")
    return read_labelled_pairs(data_file("transfer", "PAWSX", f"{split}-{lang}.tsv", root=root), PAWSX_LABELS)
