"""Offline chunk-swap generator: same-kind, frequency-weighted, never the original; real Japanese property."""

from __future__ import annotations

from collections import Counter

import numpy as np

from sentkit.training_data.jcse.chunk_masking import mask_noun_chunks
from sentkit.training_data.jcse.chunk_swap import ChunkSwapGenerator, coarse_kind
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence

pytest_plugins = ["ja_fixtures"]  # GiNZA fixtures (a conftest.py here would shadow tests/conftest.py)


def sentence(*chunks: tuple[str, str]) -> ParsedSentence:
    text, parsed = "", []
    for chunk_text, kind in chunks:
        text += "の"
        parsed.append(NounChunk(len(text), len(text) + len(chunk_text), chunk_text, kind))
        text += chunk_text
    return ParsedSentence(text + "を認めた", 5, tuple(parsed))


def test_coarse_kind():
    assert coarse_kind("ENT:Disease") == "ENT"
    assert coarse_kind("NUM+NOUN+NOUN") == "NOUN"


def test_draws_same_kind_by_frequency_never_the_original():
    corpus = (
        [sentence(("発熱", "ENT:D"))] * 6 + [sentence(("頭痛", "ENT:D"))] * 3 + [sentence(("咳", "ENT:D"))]
    )
    corpus += [sentence(("39歳", "NUM+NOUN"))] * 5
    generator = ChunkSwapGenerator(corpus)
    rng = np.random.default_rng(0)
    draws = Counter(generator.replacement(NounChunk(0, 2, "頭痛", "ENT:D"), rng) for _ in range(2000))
    assert set(draws) == {"発熱", "咳"}  # same kind, never the original, never the NUM chunk
    assert abs(draws["発熱"] / 2000 - 6 / 7) < 0.03  # frequency-weighted: 6 vs 1


def test_falls_back_to_coarser_kinds():
    corpus = [sentence(("発熱", "ENT:D")), sentence(("骨折", "ENT:I")), sentence(("左肺", "NOUN+NOUN"))]
    generator = ChunkSwapGenerator(corpus)
    rng = np.random.default_rng(0)
    drawn = {generator.replacement(NounChunk(0, 2, "発熱", "ENT:D"), rng) for _ in range(50)}
    assert drawn == {"骨折"}  # the only other entity: coarse level "ENT"
    lone = ChunkSwapGenerator([sentence(("発熱", "ENT:D"))])
    assert lone.replacement(NounChunk(0, 2, "発熱", "ENT:D"), rng) is None


def test_k_distinct_contradictions_differ_only_inside_chunks():
    corpus = [
        sentence((t, "ENT:D"), (n, "NUM+NOUN")) for t in "発熱 頭痛 咳 悪寒".split() for n in ("3日", "5日")
    ]
    masked = [mask_noun_chunks(s) for s in corpus]
    out = ChunkSwapGenerator(corpus).generate(masked, k=4, seed=1)
    assert [len(x) for x in out] == [3] * 8  # 3 other symptoms x 1 other duration = 3 distinct fillings
    for m, contradictions in zip(masked, out):
        assert len(set(contradictions)) == len(contradictions)
        assert all(m.differs_only_inside_chunks(c) for c in contradictions)
    assert out == ChunkSwapGenerator(corpus).generate(masked, k=4, seed=1)  # seeded


def test_real_japanese_contradictions_differ_only_inside_masked_chunks(clinic_parsed):
    masked = [m for m in (mask_noun_chunks(s) for s in clinic_parsed) if m is not None]
    out = ChunkSwapGenerator(clinic_parsed).generate(masked, k=4, seed=0)
    assert sum(len(x) == 4 for x in out) > 0.9 * len(masked)
    for m, contradictions in zip(masked, out):
        for c in contradictions:
            assert c != m.anchor
            assert m.differs_only_inside_chunks(c), (m.anchor, c)
