"""Graph triplets with Algorithm 1's mixing, on the real XNLI dev and JSICK train files."""

from __future__ import annotations

import pytest

from sentkit.amr.triplets import mixed_triplets, parallel_triplets, read_sick_entailment


def _fake_linearize(sentences, lang):
    return [f"( {lang} :snt {s} )" for s in sentences]


EXAMPLES = [{"en": (f"a{i}", f"p{i}", f"n{i}"), "de": (f"A{i}", f"P{i}", f"N{i}")} for i in range(400)]


def _is_graph(slot: str) -> bool:
    return slot.startswith("( ")


def test_q_zero_all_graphs_q_one_all_english_text():
    graphs = mixed_triplets(EXAMPLES[:20], _fake_linearize, q=0.0)
    assert all(_is_graph(r[k]) for r in graphs for k in ("anchor", "positive", "negative"))
    # Algorithm 1: a slot drawn in English keeps its text with probability q; any other language is parsed
    texts = mixed_triplets(EXAMPLES[:20], _fake_linearize, q=1.0)
    slots = [r[k] for r in texts for k in ("anchor", "positive", "negative")]
    assert all(s[0].islower() for s in slots if not _is_graph(s))  # every text slot is English
    assert all(s.startswith("( de ") for s in slots if _is_graph(s))  # every German slot is a graph
    assert {_is_graph(s) for s in slots} == {True, False}


def test_mixing_languages_and_text_share():
    rows = mixed_triplets(EXAMPLES, _fake_linearize, q=0.5, seed=3)
    slots = [r[k] for r in rows for k in ("anchor", "positive", "negative")]
    text_share = sum(not _is_graph(s) for s in slots) / len(slots)
    assert 0.2 < text_share < 0.3  # 1200 draws: English (1/2) and then text (q = 1/2)
    de_share = sum(s.startswith("( de") for s in slots) / len(slots)
    assert 0.45 < de_share < 0.55  # each slot picks one of the two languages; German ones are all graphs
    assert all(s.startswith("( en") for s in slots if _is_graph(s) and not s.startswith("( de"))
    # one triplet mixes languages: anchor from one, positive from the other
    assert any(r["anchor"].startswith("( de") != r["positive"].startswith("( de") for r in rows)
    assert rows == mixed_triplets(EXAMPLES, _fake_linearize, q=0.5, seed=3)  # seeded
    # every slot still holds its own sentence (index i of example i)
    for i, row in enumerate(rows):
        assert row["negative"].endswith(f"{i}") or row["negative"].endswith(f"{i} )")


def test_japanese_only_examples_are_always_graphs():
    """JSICK examples exist only in Japanese: Algorithm 1 parses them whatever q is."""
    japanese = [{"ja": (f"あ{i}", f"い{i}", f"う{i}")} for i in range(50)]
    rows = mixed_triplets(japanese, _fake_linearize, q=1.0)
    assert all(r[k].startswith("( ja :snt ") for r in rows for k in ("anchor", "positive", "negative"))
    # the earlier reading (any language may keep its text) stays available
    old = mixed_triplets(japanese, _fake_linearize, q=1.0, text_langs=None)
    assert [r["anchor"] for r in old] == [f"あ{i}" for i in range(50)]
    # the languages drawn do not depend on text_langs: only which English slots keep text does
    a = mixed_triplets(EXAMPLES[:50], _fake_linearize, q=0.5, seed=1)
    b = mixed_triplets(EXAMPLES[:50], _fake_linearize, q=0.5, seed=1, text_langs=None)
    for ra, rb in zip(a, b):
        for k in ("anchor", "positive", "negative"):
            if not rb[k][0].isupper():  # an English draw: identical under both readings
                assert ra[k] == rb[k]
            else:  # a German draw kept as text by the old reading is parsed by Algorithm 1
                assert ra[k] == f"( de :snt {rb[k]} )"


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
