"""knn-marc-category: Emu's LOO 1-NN matrix on MARC product categories (real files)."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.errors import LanguageNotCovered
from sentkit.tasks import get_task
from tasks.fakes import TableEncoder


def test_oracle_scores_100_and_random_scores_chance(data_root):
    task = get_task("knn-marc-category", langs=["en", "de"], data_root=data_root, max_per_lang=100)
    task.load()
    assert task.pairs == (("en", "en"), ("en", "de"), ("de", "en"), ("de", "de"))
    assert task.meta["files"] == {"en": "marc/test.en:review_title", "de": "marc/test.de:review_title"}
    categories = sorted({c for d in task.data.values() for c in d.labels})
    # an encoder that maps every title to a one-hot of its category (plus a little noise) is always right
    rng = np.random.default_rng(0)
    table = {
        text: np.eye(len(categories))[categories.index(label)] + 0.01 * rng.standard_normal(len(categories))
        for d in task.data.values()
        for text, label in zip(d.texts, d.labels)
    }
    oracle = task.evaluate(TableEncoder(table))
    for a, b in task.pairs:
        # right when the query's category occurs among the targets (itself left out when a == b), except
        # for titles shared by two categories ("Five Stars" maps to one vector): near that ceiling, far
        # above chance, which texts and labels out of step would give
        qa, kb = task.data[a].labels, list(task.data[b].labels)
        ceiling = 100 * np.mean([kb.count(y) - (a == b) > 0 for y in qa])
        assert ceiling - 10.0 <= oracle[f"{a}->{b}"] <= ceiling
    chance = task.evaluate(TableEncoder(dim=16))
    assert chance["main_score"] < 15.0 and chance["main_score"] == pytest.approx(
        np.mean([chance[k] for k in ("en->en", "en->de", "de->en", "de->de")])
    )


def test_ja_falls_back_to_dev_and_unknown_languages_are_refused(data_root):
    task = get_task("knn-marc-category", langs=["ja"], data_root=data_root, max_per_lang=10)
    task.load()
    assert task.meta["files"] == {"ja": "marc/dev.ja:review_title"}
    with pytest.raises(LanguageNotCovered, match="no MARC language"):
        get_task("knn-marc-category", langs=["ko"])
