"""Zero-shot transfer: pair features, CV over C, separable toy data -> 100, shuffled labels -> chance."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fakes import TableEncoder

from sentkit.errors import LanguageNotCovered
from sentkit.langs import MUSE_LANGUAGES
from sentkit.tasks.transfer import (
    C_GRID,
    pair_features,
    seen_all_averages,
    select_c_by_cv,
    subsample,
    transfer_task,
)

LABEL_NAMES = ["entailment", "neutral", "contradiction"]


def write_xnli_toy(root, rng, table, n_premises, lang, split, shuffle_labels=False, dim=8):
    """Each premise gets three hypotheses whose vector encodes the label (one-hot x 3 + noise)."""
    folder = root / "transfer" / "XNLI"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(n_premises):
        premise = f"{lang}-{split}-p{k}"
        table[premise] = rng.standard_normal(dim)
        labels = rng.permutation(3) if shuffle_labels else range(3)
        for label, written in zip(range(3), labels):
            hypothesis = f"{premise}-h{label}"
            table[hypothesis] = rng.standard_normal(dim) * 0.3
            table[hypothesis][label] += 3.0
            lines.append(f"{premise}\t{hypothesis}\t{LABEL_NAMES[written]}")
    (folder / f"{split}-{lang}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_pair_features_shape_and_values():
    u = np.array([[1.0, -2.0], [0.5, 0.0]])
    v = np.array([[3.0, 1.0], [0.5, 4.0]])
    f = pair_features(u, v)
    assert f.shape == (2, 8)
    assert f[0].tolist() == [1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]
    assert f[1].tolist() == [0.5, 0.0, 0.5, 4.0, 0.0, 4.0, 0.25, 0.0]


def test_seen_all_averages_by_hand():
    acc = {"en": 80.0, "de": 70.0, "sw": 40.0, "ja(dev)": 60.0}
    assert seen_all_averages(acc, ["en", "de", "ja"]) == {"all": 62.5, "seen": 70.0}
    assert seen_all_averages(acc, []) == {"all": 62.5}
    assert "sw" not in MUSE_LANGUAGES and len(MUSE_LANGUAGES) == 15  # 16 with zh-cn/zh-tw folded into zh


def test_subsample_is_seeded_sorted_and_parallel():
    a, b = subsample(100, 10, seed=3), subsample(100, 10, seed=3)
    assert np.array_equal(a, b) and len(set(a.tolist())) == 10 and np.all(np.diff(a) > 0)
    assert not np.array_equal(a, subsample(100, 10, seed=4))
    assert np.array_equal(subsample(5, 10, seed=0), np.arange(5))


def test_cv_picks_smallest_c_on_easy_data():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    x = rng.standard_normal((60, 4)) * 0.1
    x[:, 0] += np.where(y == 1, 5.0, -5.0)
    c, acc = select_c_by_cv(x, y)
    assert acc == 100.0 and c == min(C_GRID)


def test_separable_toy_xnli_scores_100(toy_root):
    rng, table = np.random.default_rng(0), {}
    write_xnli_toy(toy_root, rng, table, 60, "en", "dev")
    for lang in ("en", "de"):
        write_xnli_toy(toy_root, rng, table, 50, lang, "test")
    task = transfer_task("xnli", langs=["en", "de"], data_root=toy_root, seen_langs=("en",))
    encoder = TableEncoder(table)
    scores = task.evaluate(encoder)
    assert scores == {"main_score": 100.0, "all": 100.0, "seen": 100.0, "en": 100.0, "de": 100.0}
    assert encoder.calls == [60 * 4 + 2 * 50 * 4]  # one call, each distinct sentence once
    assert task.meta["cv_accuracy"] == 100.0 and task.meta["n_train"] == 180


def test_shuffled_training_labels_give_chance(toy_root):
    rng, table = np.random.default_rng(1), {}
    write_xnli_toy(toy_root, rng, table, 100, "en", "dev", shuffle_labels=True)
    write_xnli_toy(toy_root, rng, table, 200, "de", "test")
    scores = transfer_task("xnli", langs=["de"], data_root=toy_root).evaluate(TableEncoder(table))
    assert 23.0 < scores["de"] < 43.0  # chance is 33.3 (600 test pairs: sd ~1.9)


def test_marc_uses_ja_dev_and_max_per_lang(toy_root):
    rng, table = np.random.default_rng(2), {}
    folder = toy_root / "transfer" / "MARC"
    folder.mkdir(parents=True)
    for split, lang, n in (("dev", "en", 100), ("test", "en", 50), ("dev", "ja", 50)):
        rows = []
        for i in range(n):
            text, stars = f"{split}.{lang}.{i}", 1 + i % 5
            table[text] = rng.standard_normal(8) * 0.3
            table[text][stars - 1] += 3.0
            rows.append(json.dumps({"stars": str(stars), "review_body": text}))
        (folder / f"{split}.{lang}.json").write_text("\n".join(rows) + "\n", encoding="utf-8")
    task = transfer_task("marc", langs=["en", "ja"], data_root=toy_root, max_per_lang=20)
    scores = task.evaluate(TableEncoder(table))
    assert scores["en"] == 100.0 and scores["ja(dev)"] == 100.0 and scores["main_score"] == 100.0
    assert task.meta["tests"]["ja(dev)"] == "marc/dev.ja"
    assert task.meta["n_test"] == {"en": 20, "ja(dev)": 20} and task.meta["n_train"] == 100


class _DeclaringEncoder(TableEncoder):
    """A table encoder that declares training languages, as muse-m and e5-small-m do."""

    def __init__(self, table, languages):
        super().__init__(table, dim=8)
        self.languages = languages


def test_seen_average_uses_the_encoders_own_languages(toy_root):
    rng, table = np.random.default_rng(4), {}
    write_xnli_toy(toy_root, rng, table, 60, "en", "dev")
    write_xnli_toy(toy_root, rng, table, 40, "de", "test")
    write_xnli_toy(toy_root, rng, table, 40, "sw", "test", shuffle_labels=True)  # sw scores near chance
    table = {k: v for k, v in table.items() if not k.startswith("sw-")}  # sw sentences: random vectors
    langs = ["de", "sw"]
    english_only = transfer_task("xnli", langs=langs, data_root=toy_root)
    scores = english_only.evaluate(_DeclaringEncoder(table, ("en",)))
    assert "seen" not in scores  # neither test language is among the encoder's
    assert (
        english_only.meta["seen_languages"] == ["en"]
        and "table.languages" in english_only.meta["seen_source"]
    )
    german = transfer_task("xnli", langs=langs, data_root=toy_root)
    scores = german.evaluate(_DeclaringEncoder(table, ("en", "de")))
    assert scores["seen"] == scores["de"] == 100.0 and scores["all"] == pytest.approx(
        (100.0 + scores["sw"]) / 2
    )
    silent = transfer_task("xnli", langs=langs, data_root=toy_root)
    # an encoder that declares nothing gets no "seen" (it was mUSE's list for every model)
    scores = silent.evaluate(TableEncoder(table, dim=8))
    assert "seen" not in scores and silent.meta["seen_languages"] is None
    assert "declares no training languages" in silent.meta["seen_source"]


def test_factory_rejects_unknown_language_and_dataset():
    with pytest.raises(LanguageNotCovered, match="has no data for ja"):
        transfer_task("qam", langs=["ja"])
    assert transfer_task("qam", langs=["ja", "de"]).languages == ("de",)  # what it has of a global --langs
    with pytest.raises(ValueError, match="unknown transfer dataset"):
        transfer_task("mldoc")
