"""knn-marc-category: Emu's LOO 1-NN matrix on MARC product categories (real files)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentkit.errors import LanguageNotCovered
from sentkit.tasks import get_task
from sentkit.tasks.knn import knn_accuracy_matrix
from sentkit.tasks.task import subsample
from tasks.fakes import TableEncoder


def _raw_titles(data_root, lang: str, rows: np.ndarray) -> tuple[list[str], list[str]]:
    """(review titles, product categories) of the given rows of MARC test.{lang}, read with json alone."""
    path = data_root / "transfer" / "MARC" / f"test.{lang}.json"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [records[i]["review_title"] for i in rows], [records[i]["product_category"] for i in rows]


def test_oracle_scores_its_ceiling_and_random_scores_chance(data_root):
    task = get_task("knn-marc-category", langs=["en", "de"], data_root=data_root, max_per_lang=100)
    task.load()
    assert task.pairs == (("en", "en"), ("en", "de"), ("de", "en"), ("de", "de"))
    assert task.meta["files"] == {"en": "marc/test.en:review_title", "de": "marc/test.de:review_title"}
    # the expected answer comes from the raw files, not from task.data: the task's seeded rows read with json
    raw = {lang: _raw_titles(data_root, lang, subsample(5000, 100)) for lang in ("en", "de")}
    for lang, (titles, categories) in raw.items():
        assert task.data[lang].texts == titles and task.data[lang].labels.tolist() == categories
    categories = sorted({c for _, cats in raw.values() for c in cats})
    # an encoder that maps every title to a one-hot of its category (plus a little noise) is always right
    rng = np.random.default_rng(0)
    table = {
        text: np.eye(len(categories))[categories.index(label)] + 0.01 * rng.standard_normal(len(categories))
        for titles, cats in raw.values()
        for text, label in zip(titles, cats)
    }
    oracle = task.evaluate(TableEncoder(table))
    vectors = {
        lang: np.array([table[t] for t in titles], dtype=np.float32) for lang, (titles, _) in raw.items()
    }
    labels = {lang: np.array(cats) for lang, (_, cats) in raw.items()}
    expected = knn_accuracy_matrix(vectors, labels, task.pairs)  # the matrix on the independently read rows
    for a, b in task.pairs:
        assert oracle[f"{a}->{b}"] == expected[f"{a}->{b}"]
        # right when the query's category occurs among the targets (itself left out when a == b), except
        # for titles shared by two categories ("Four Stars" maps to one vector): near that ceiling, far
        # above chance, which texts and labels out of step would give
        qa, kb = raw[a][1], raw[b][1]
        ceiling = 100 * np.mean([kb.count(y) - (a == b) > 0 for y in qa])
        assert ceiling - 10.0 <= oracle[f"{a}->{b}"] <= ceiling
    chance = task.evaluate(TableEncoder(dim=16))
    assert chance["main_score"] < 15.0 and chance["main_score"] == pytest.approx(
        np.mean([chance[k] for k in ("en->en", "en->de", "de->en", "de->de")])
    )
    # a random encoder scores what the recorded chance level says, within sampling noise (100 queries)
    assert abs(chance["main_score"] - task.meta["chance_mean"]) < 5.0
    shares = {c: list(task.data["en"].labels).count(c) / 100 for c in categories}
    assert task.meta["chance"]["en->en"] == pytest.approx(
        100 * sum(s * (s * 100 - 1) / 99 for s in shares.values()), abs=0.01
    )


def test_title_body_texts_carry_both_fields(data_root):
    import json

    task = get_task("knn-marc-category-body", langs=["de"], data_root=data_root)
    task.load()
    assert task.meta["files"] == {"de": "marc/test.de:title_body"}
    first = json.loads((data_root / "transfer" / "MARC" / "test.de.json").open(encoding="utf-8").readline())
    text = first["review_title"].strip() + "\n" + first["review_body"].strip()
    assert text in task.data["de"].texts
    row = list(task.data["de"].texts).index(text)
    assert task.data["de"].labels[row] == first["product_category"]


def test_ja_falls_back_to_dev_and_unknown_languages_are_refused(data_root):
    task = get_task("knn-marc-category", langs=["ja"], data_root=data_root, max_per_lang=10)
    task.load()
    assert task.meta["files"] == {"ja": "marc/dev.ja:review_title"}
    with pytest.raises(LanguageNotCovered, match="no MARC language"):
        get_task("knn-marc-category", langs=["ko"])
