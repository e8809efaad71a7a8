"""MewsC-16 (EASE, Nishikawa et al. 2022) sentences with their Wikinews category, for kNN classification.

`{lang}_sentences.txt` and `{lang}_categories.txt` are line-aligned. Category names are written in each
language's own Wikinews vocabulary (`Sports`, `スポーツ`, `Themenportal Sport`), so labels are comparable
only within one language.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.lines import read_lines
from sentkit.datasets.marc import LabelledTexts
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

MEWSC16_LANGS: tuple[str, ...] = (
    "ar", "ca", "cs", "de", "en", "eo", "es", "fa", "fr", "ja", "ko", "pl", "pt", "ru", "sv", "tr",
)  # fmt: skip


def read_mewsc16_labelled(sentences_path: str | Path, categories_path: str | Path) -> LabelledTexts:
    """Line-aligned sentences and categories; labels are the category names themselves (str array)."""
    sentences = read_lines(sentences_path)
    categories = read_lines(categories_path)
    if len(sentences) != len(categories):
        raise DataFormatError(
            categories_path,
            min(len(sentences), len(categories)) + 1,
            f"expected as many lines as {Path(sentences_path).name} ({len(sentences)}), got {len(categories)}",
        )
    for number, category in enumerate(categories, start=1):
        if not category.strip():
            raise DataFormatError(categories_path, number, "expected a category name, got an empty line")
    return LabelledTexts(sentences, np.asarray(categories, dtype=str))


def load_mewsc16_labelled(lang: str, root: str | Path | None = None) -> LabelledTexts:
    """MewsC-16 sentences of one language with category labels."""
    return read_mewsc16_labelled(
        data_file("clustering", "mewsc16", f"{lang}_sentences.txt", root=root),
        data_file("clustering", "mewsc16", f"{lang}_categories.txt", root=root),
    )
