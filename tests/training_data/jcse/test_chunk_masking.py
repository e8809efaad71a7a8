"""Noun-chunk masking with unique sentinels (JCSE sec. 3.2) on hand-built sentences."""

from __future__ import annotations

import pytest

from sentkit.training_data.jcse.chunk_masking import mask_noun_chunks
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence


def headache_sentence() -> ParsedSentence:
    text = "頭痛と発熱を訴えている"
    return ParsedSentence(text, 7, (NounChunk(0, 2, "頭痛", "ENT:D"), NounChunk(3, 5, "発熱", "ENT:D")))


def test_each_chunk_gets_its_own_sentinel_in_order():
    masked = mask_noun_chunks(headache_sentence())
    assert masked.masked_text() == "<extra_id_0>と<extra_id_1>を訴えている"
    assert masked.masked_text("[MASK{}]") == "[MASK0]と[MASK1]を訴えている"
    assert masked.segments == ("", "と", "を訴えている")


def test_fill_and_the_only_inside_chunks_check():
    masked = mask_noun_chunks(headache_sentence())
    assert masked.fill(["咳", "悪寒"]) == "咳と悪寒を訴えている"
    assert masked.differs_only_inside_chunks("咳と悪寒を訴えている")
    assert not masked.differs_only_inside_chunks("頭痛と発熱を訴えている")  # nothing changed
    assert not masked.differs_only_inside_chunks("咳と悪寒を訴えた")  # text outside a chunk changed
    assert not masked.differs_only_inside_chunks("とを訴えている")  # empty fillers
    with pytest.raises(ValueError, match="expected 2 fillers"):
        masked.fill(["咳"])


def test_max_chunks_and_no_chunks():
    masked = mask_noun_chunks(headache_sentence(), max_chunks=1)
    assert masked.masked_text() == "<extra_id_0>と発熱を訴えている"
    assert mask_noun_chunks(ParsedSentence("とても良い", 5, ())) is None


def test_misaligned_chunk_is_refused():
    bad = ParsedSentence("頭痛と発熱", 3, (NounChunk(0, 2, "発熱", "x"),))
    with pytest.raises(ValueError, match="does not fit"):
        mask_noun_chunks(bad)
