"""Triplet construction by hand and XNLI dev triplet counts."""

from __future__ import annotations

import pytest

from sentkit.datasets.nli import NliRow, read_simcse_csv
from sentkit.training_data.specs import load_training_data
from sentkit.training_data.triplets import nli_triplets, xnli_triplets


def rows_of(dataset) -> list[tuple]:
    names = [c for c in ("anchor", "positive", "negative", "lang") if c in dataset.column_names]
    return [tuple(row[c] for c in names) for row in dataset]


def test_nli_triplets_by_hand():
    rows = [
        NliRow("A", "a-ent1", "entailment", "en"),
        NliRow("B", "b-ent", "entailment", "en"),  # B has no contradiction: dropped
        NliRow("A", "a-neu", "neutral", "en"),
        NliRow("C", "c-con1", "contradiction", "en"),
        NliRow("A", "a-con", "contradiction", "en"),
        NliRow("C", "c-con2", "contradiction", "en"),
        NliRow("C", "c-ent", "entailment", "en"),
        NliRow("A", "a-ent2", "entailment", "en"),  # reuses A's only contradiction
        NliRow("A", "A-de-ent", "entailment", "de"),  # same premise text, other language: its own group
        NliRow("A", "A-de-con", "contradiction", "de"),
        NliRow("D", "d-neu", "neutral", "en"),
    ]
    assert rows_of(nli_triplets(rows)) == [
        ("A", "a-ent1", "a-con", "en"),
        ("A", "a-ent2", "a-con", "en"),
        ("C", "c-ent", "c-con1", "en"),
        ("A", "A-de-ent", "A-de-con", "de"),
    ]


def test_entailments_cycle_through_contradictions():
    rows = [NliRow("P", f"e{i}", "entailment", "en") for i in range(3)]
    rows += [NliRow("P", f"c{i}", "contradiction", "en") for i in range(2)]
    assert [(r[1], r[2]) for r in rows_of(nli_triplets(rows))] == [("e0", "c0"), ("e1", "c1"), ("e2", "c0")]


def test_no_triplets_is_an_error():
    with pytest.raises(ValueError, match="no premise has both"):
        nli_triplets([NliRow("P", "h", "neutral", "en"), NliRow("P", "h2", "entailment", "en")])


def test_simcse_csv_round_trip(tmp_path):
    path = tmp_path / "nli_for_simcse.csv"
    lines = ["sent0,sent1,hard_neg", "P,p1,n1", "Q,q1,m1", "P,p2,n2"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    direct = load_training_data(path, shuffle=False)
    assert direct.column_names == ["anchor", "positive", "negative"]
    assert rows_of(direct) == [("P", "p1", "n1"), ("Q", "q1", "m1"), ("P", "p2", "n2")]
    # through NliRows the same triplets come back, grouped by premise
    rebuilt = rows_of(nli_triplets(read_simcse_csv(path)))
    assert rebuilt == [("P", "p1", "n1", "en"), ("P", "p2", "n2", "en"), ("Q", "q1", "m1", "en")]


def test_xnli_dev_triplet_counts(data_root):
    # every dev file is 830 premises x (entailment, neutral, contradiction) = 2490 rows -> 830 triplets;
    # in dev-ur two premises share their text, so 829 groups, one of them with 2 + 2 -> still 830
    for lang in ("en", "ur"):
        assert len(xnli_triplets([lang], data_root=data_root)) == 830
    everything = xnli_triplets(data_root=data_root)
    assert len(everything) == 15 * 830
    assert everything.column_names == ["anchor", "positive", "negative", "lang"]
    english = [r for r in rows_of(everything) if r[3] == "en"]
    assert english[0] == (
        "And he said, Mama, I'm home.",
        "He told his mom he had gotten home.",
        "He didn't say a word.",
        "en",
    )
    assert len(xnli_triplets("en,de", splits=("test",), data_root=data_root)) == 2 * 1670
