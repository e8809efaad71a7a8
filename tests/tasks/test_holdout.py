"""Held-out test sets (docs/preregistration.md): the rows outside the samples the methods were developed on,
never one of those rows, on the real files."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sentkit.datasets.labelled_sentences import load_marc_categories
from sentkit.datasets.mewsc16 import load_mewsc16
from sentkit.tasks import get_task
from sentkit.tasks.task import holdout, subsample


def test_holdout_is_the_complement_of_the_sample_or_a_seeded_part_of_it():
    used = subsample(5000, 500)
    rest = holdout(5000, 500)
    assert len(rest) == 4500 and not set(rest) & set(used)
    assert sorted([*rest, *used]) == list(range(5000))
    part = holdout(5000, 500, limit=1000)
    assert len(part) == 1000 and set(part) <= set(rest) and np.all(np.diff(part) > 0)
    assert np.array_equal(part, holdout(5000, 500, limit=1000))  # seeded: the same rows every time
    assert np.array_equal(holdout(226, 100, limit=1000), holdout(226, 100))  # fewer than the limit: all
    with pytest.raises(ValueError, match="no rows are held out"):
        holdout(100, 100)


def test_marc_holdout_never_shares_a_review_with_the_500_sample(data_root):
    """Every review of MARC test is in exactly one of knn-marc-category-body-500 and -holdout (as rows: the
    two texts multisets add up to the file's)."""
    used = get_task("knn-marc-category-body-500", data_root=data_root)
    held = get_task("knn-marc-category-body-holdout", data_root=data_root)
    used.load()
    held.load()
    assert held.languages == used.languages == ("en", "de", "es", "fr", "zh")
    for lang in held.languages:
        full = load_marc_categories(lang, "test", data_root, "title_body")
        assert len(used.data[lang]) == 500 and len(held.data[lang]) == len(full) - 500 == 4500
        assert Counter(used.data[lang].texts) + Counter(held.data[lang].texts) == Counter(full.texts)


def test_mewsc16_holdout_never_shares_a_sentence_row_with_the_100_sample(data_root):
    used = get_task("mewsc16-100", data_root=data_root)
    held = get_task("mewsc16-holdout", data_root=data_root)
    used.load()
    held.load()
    sizes = {}
    for lang in held.subsets:
        texts, _ = load_mewsc16(lang, data_root)
        mine, theirs = Counter(held._data[lang][0]), Counter(used._data[lang][0])
        assert mine + theirs <= Counter(texts)  # no row in both
        assert len(held._data[lang][0]) == min(1000, len(texts) - 100)
        sizes[lang] = len(held._data[lang][0])
    assert sizes["en"] == 1000 and sizes["eo"] == 227 - 100  # MewsC-16 eo has 227 sentences
