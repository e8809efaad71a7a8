"""Graph triplets with Algorithm 1's mixing, on the real XNLI dev and JSICK train files."""

from __future__ import annotations

import pytest

from sentkit.amr.triplets import mixed_triplets, parallel_triplets, read_sick_entailment


def _fake_linearize(sentences, lang):
    return [f"( {lang} :snt {s} )" for s in sentences]


EXAMPLES = [{"en": (f"a{i}", f"p{i}", f"n{i}"), "de": (f"A{i}", f"P{i}", f"N{i}")} for i in range(400)]


def test_q_zero_all_graphs_q_one_all_text():
    graphs = mixed_triplets(EXAMPLES[:20], _fake_linearize, q=0.0)
    assert all(r[k].startswith("( ") for r in graphs for k in ("anchor", "positive", "negative"))
    texts = mixed_triplets(EXAMPLES[:20], _fake_linearize, q=1.0)
    assert [r["anchor"] for r in texts][:2] in (["a0", "a1"], ["A0", "a1"], ["a0", "A1"], ["A0", "A1"])
    assert not any(r[k].startswith("( ") for r in texts for k in ("anchor", "positive", "negative"))


def test_mixing_languages_and_text_share():
    rows = mixed_triplets(EXAMPLES, _fake_linearize, q=0.5, seed=3)
    slots = [r[k] for r in rows for k in ("anchor", "positive", "negative")]
    text_share = sum(not s.startswith("( ") for s in slots) / len(slots)
    assert 0.45 < text_share < 0.55  # 1200 draws at q = 0.5
    de_share = sum(s.startswith("( de") or s[0].isupper() for s in slots) / len(slots)
    assert 0.45 < de_share < 0.55  # each slot picks one of the two languages
    # one triplet mixes languages: anchor from one, positive from the other
    assert any(
        r["anchor"][0].isupper() != r["positive"].replace("( de :snt ", "P")[0].isupper() for r in rows
    )
    assert rows == mixed_triplets(EXAMPLES, _fake_linearize, q=0.5, seed=3)  # seeded
    # every slot still holds its own sentence (index i of example i)
    for i, row in enumerate(rows):
        assert row["negative"].endswith(f"{i}") or row["negative"].endswith(f"{i} )")


def test_real_training_triplets(data_root):
    rows = read_sick_entailment(data_root / "sts-ja/JSICK/SICK_train.txt")
    labels = [r.label for r in rows]
    assert (len(rows), labels.count("entailment"), labels.count("contradiction")) == (4500, 969, 743)
    examples = parallel_triplets(("en",), jsick=True, data_root=data_root)
    english = [e for e in examples if "en" in e]
    assert len(english) == 830  # XNLI dev: 830 premises with both an entailment and a contradiction
    japanese = [e for e in examples if "ja" in e]
    assert japanese and all(len(e) == 1 for e in japanese)
    two = parallel_triplets(("en", "de"), data_root=data_root)
    assert len(two) == 830 and set(two[0]) == {"en", "de"}


def test_bad_sick_file_names_the_line(tmp_path):
    from sentkit.errors import DataFormatError

    path = tmp_path / "sick.txt"
    path.write_text("sentence_A\tsentence_B\tentailment_judgment\na\tb\tmaybe\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"sick.txt:2: expected an entailment judgment"):
        read_sick_entailment(path)
