"""Emu's cross-lingual evaluation on a label shared by every language: leave-one-out 1-NN accuracy over the
query-language x target-language matrix (Hirota et al. 2020, Tables 2-4), on MARC's product category.
A user's own labelled file runs the same protocol as `knn:labelled.tsv` (sentkit.tasks.user_tasks).

MARC: test splits (ja has none here and falls back to dev: leave it out when ja dev sentences were used
in training, as the default language list does); text = review title (short, like Emu's intents) or body.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.datasets.labelled import LabelledTexts
from sentkit.datasets.labelled_sentences import load_marc_categories
from sentkit.datasets.marc import marc_split_for
from sentkit.errors import LanguageNotCovered
from sentkit.tasks.knn import KNNTask

MARC_CATEGORY_LANGS = ("en", "de", "es", "fr", "zh")  # languages with a MARC test split


@dataclass
class CategoryKNNTask(KNNTask):
    """KNNTask on MARC's product category (every ordered pair); only loading differs."""

    source: str = "marc"
    text_field: str = "review_title"  # or review_body

    def load(self) -> None:
        files = {}
        for lang in self.languages:
            split = marc_split_for(lang, self.split)
            rows = load_marc_categories(lang, split, self.data_root, self.text_field)
            files[lang] = f"marc/{split}.{lang}:{self.text_field}"
            full = LabelledTexts(list(rows.texts), np.asarray(rows.labels, dtype=str))
            self.data[lang] = full.subset(self.kept_rows(len(full)))
        self.meta.update(files=files)


def category_knn_task(
    *,
    langs: Iterable[str] | None = None,
    data_root: str | Path | None = None,
    batch_size: int = 64,
    **options,
) -> CategoryKNNTask:
    """Registry factory: every ordered pair of `langs` (default: MARC's languages with a test split)."""
    items = list(MARC_CATEGORY_LANGS if langs is None else langs)
    bad = [lang for lang in items if lang not in (*MARC_CATEGORY_LANGS, "ja")]
    if bad:
        raise LanguageNotCovered(f"knn-marc-category: no MARC language {bad} (known: en de es fr ja zh)")
    if not items:
        raise LanguageNotCovered("knn-marc-category: none of the requested languages")
    pairs = tuple((a, b) for a in items for b in items)
    return CategoryKNNTask(
        name=options.pop("name", "knn-marc-category"),
        languages=tuple(items),
        data_root=Path(data_root) if data_root is not None else None,
        batch_size=batch_size,
        pairs=pairs,
        **options,
    )
