"""JCSE stage-two triplets from JSICK's entailment judgments (real row counts checked by hand)."""

from __future__ import annotations

import pytest

from sentkit.datasets.sick_nli import read_jsick_nli, read_sick_nli
from sentkit.errors import DataFormatError
from sentkit.training_data.specs import load_training_data


def test_jsick_train_labels_and_symmetric_contradictions(data_root):
    plain = read_jsick_nli("train", root=data_root, symmetric_contradiction=False)
    assert len(plain) == 4500
    assert sum(r.label == "contradiction" for r in plain) == 743
    assert sum(r.label == "entailment" for r in plain) == 969
    assert len(read_jsick_nli("train", root=data_root)) == 4500 + 743


def test_jsick_spec_gives_triplets(data_root):
    data = load_training_data("jsick", shuffle=False, data_root=data_root)
    assert len(data) == 215  # 117 with one-way contradictions only
    assert set(data["lang"]) == {"ja"}
    assert len(load_training_data("jsick:train,trial", shuffle=False, data_root=data_root)) == 278
    with pytest.raises(ValueError, match="JSICK splits must be among"):
        load_training_data("jsick:dev", data_root=data_root)


def test_hand_made_sick_file(tmp_path):
    path = tmp_path / "SICK_x.txt"
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    path.write_text(
        header + "1\tA\tB\t4.5\tENTAILMENT\n2\tC\tA\t1.2\tCONTRADICTION\n3\tA\tD\t3\tNEUTRAL\n",
        encoding="utf-8",
    )
    from sentkit.training_data.triplets import nli_triplets

    rows = read_sick_nli(path)
    assert [(r.premise, r.hypothesis, r.label) for r in rows][1:3] == [
        ("C", "A", "contradiction"),
        ("A", "C", "contradiction"),
    ]
    triplets = nli_triplets(rows)
    assert triplets[0] == {"anchor": "A", "positive": "B", "negative": "C", "lang": "en"}
    path.write_text(header + "1\tA\tB\t4.5\tMAYBE\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"SICK_x.txt:2: expected an entailment_judgment"):
        read_sick_nli(path)
