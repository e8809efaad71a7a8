"""MewsC-16 (EASE, Nishikawa et al. 2022): Wikinews first sentences with their category, 16 languages.

`{lang}_sentences.txt` and `{lang}_categories.txt` are line-aligned. As in EASE's clustering loader, lines
whose sentence is empty (a sentence-splitter failure upstream: 1 in de, 3 in pl) are dropped.
"""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.lines import read_aligned_lines
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

FOLDER = ("clustering", "mewsc16")
MEWSC16_LANGUAGES: tuple[str, ...] = (
    "ar", "ca", "cs", "de", "en", "eo", "es", "fa", "fr", "ja", "ko", "pl", "pt", "ru", "sv", "tr",
)  # fmt: skip


def read_mewsc16(sentences_path: str | Path, categories_path: str | Path) -> tuple[list[str], list[str]]:
    """(sentences, category names) from two line-aligned files, stripped, empty sentences dropped."""
    sentences, categories = read_aligned_lines(sentences_path, categories_path)
    texts, labels = [], []
    for number, (sentence, category) in enumerate(zip(sentences, categories), start=1):
        if not category.strip():
            raise DataFormatError(categories_path, number, "expected a category name, got an empty line")
        if sentence.strip():
            texts.append(sentence.strip())
            labels.append(category.strip())
    return texts, labels


def load_mewsc16(lang: str, root: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The MewsC-16 set of one language (ISO 639-1 code, see MEWSC16_LANGUAGES): (sentences, categories)."""
    if lang not in MEWSC16_LANGUAGES:
        raise ValueError(f"MewsC-16 has no language {lang!r}; available: {', '.join(MEWSC16_LANGUAGES)}")
    return read_mewsc16(
        data_file(*FOLDER, f"{lang}_sentences.txt", root=root),
        data_file(*FOLDER, f"{lang}_categories.txt", root=root),
    )
