"""Relevant content words (JCSE sec. 4.3) with a character-count encoder whose answers are known by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.analysis.relevant_words import (
    RelevantWord,
    distribution_table,
    plot_distribution,
    pos_distribution,
    relevant_content_words,
    without_token,
)


@pytest.fixture(scope="module")
def ginza_nlp():
    pytest.importorskip("ginza", reason="GiNZA not installed: pip install 'sentkit[ja]'")
    from sentkit.training_data.jcse.domain_corpus import load_pipeline

    return load_pipeline("ja")


ALPHABET = sorted(set("頭痛と発熱を訴えているがあるfevrandcoughsml "))


class CharCounts:
    """Encodes a sentence as its character counts: cosines are checkable by hand."""

    name = "char-counts"

    def encode(self, sentences, batch_size=64, **_):
        return np.asarray([[s.count(c) for c in ALPHABET] for s in sentences], dtype=np.float32)


def test_without_token_keeps_the_rest():
    spacy = pytest.importorskip("spacy")
    doc = spacy.blank("en")("fever and cough")
    assert without_token(doc, 1) == "fever cough"
    assert without_token(doc, 2) == "fever and "


def test_the_shared_word_is_the_relevant_one_english():
    spacy = pytest.importorskip("spacy")
    words = relevant_content_words(
        CharCounts(), [("and fever", "fever"), ("cough and", "cough")], spacy.blank("en")
    )
    assert [(w.pair, w.word) for w in words] == [(0, "fever"), (1, "cough")]
    enc = CharCounts()
    a, b, rest = enc.encode(["and fever", "fever", "and "])  # "and fever" without "fever" = "and "
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    assert words[0].drop == pytest.approx(cos(a, b) - cos(rest, b), abs=1e-6)


def test_japanese_relevant_word_is_a_noun(ginza_nlp):
    words = relevant_content_words(CharCounts(), [("頭痛と発熱を訴えている", "発熱がある")], ginza_nlp)
    assert [(w.word, w.pos) for w in words] == [("発熱", "NOUN")]


def test_distribution_table_and_plot(tmp_path):
    words = [
        RelevantWord(0, "a", "NOUN", 0.1),
        RelevantWord(1, "b", "NOUN", 0.1),
        RelevantWord(2, "c", "VERB", 0.2),
    ]
    dist = pos_distribution(words)
    assert dist == pytest.approx({"NOUN": 200 / 3, "VERB": 100 / 3})
    table = distribution_table({"base": dist, "jcse": {"VERB": 100.0}})
    assert table.splitlines()[2] == "| NOUN | 66.7 | 0.0 |"
    png = plot_distribution({"base": dist, "jcse": {"VERB": 100.0}}, tmp_path / "pos.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
