"""Stage-one rows (anchor, positive = anchor, negative = contradiction) and their files, read back by the trainer's loader."""

from __future__ import annotations

import pytest

from sentkit.errors import DataFormatError
from sentkit.training_data.jcse.chunk_swap import ChunkSwapGenerator
from sentkit.training_data.jcse.contradictions import contradiction_rows, load_parsed, save_parsed, write_rows
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence
from sentkit.training_data.specs import load_training_data


def corpus() -> list[ParsedSentence]:
    out = []
    for symptom in ("発熱", "頭痛", "咳嗽", "悪寒", "嘔吐"):
        text = f"患者は{symptom}を訴えた"
        out.append(
            ParsedSentence(text, 5, (NounChunk(0, 2, "患者", "NOUN"), NounChunk(3, 5, symptom, "ENT:D")))
        )
    out.append(ParsedSentence("とても良かった", 5, ()))  # no chunk: no row
    return out


def test_rows_pair_each_anchor_with_itself_and_k_contradictions():
    rows = contradiction_rows(corpus(), ChunkSwapGenerator(corpus()), k=2, seed=0)
    assert len(rows) == 5 * 2
    assert rows.column_names == ["anchor", "positive", "negative", "group"]
    # one group per anchor sentence: its k rows share it, different sentences never do
    by_anchor: dict[str, set] = {}
    for row in rows:
        by_anchor.setdefault(row["anchor"], set()).add(row["group"])
    assert all(len(g) == 1 for g in by_anchor.values())
    assert len({next(iter(g)) for g in by_anchor.values()}) == len(by_anchor) < len(rows)
    assert rows["anchor"] == rows["positive"]
    symptoms = {"発熱", "頭痛", "咳嗽", "悪寒", "嘔吐"}
    for anchor, negative in zip(rows["anchor"], rows["negative"]):
        assert negative[2] == "は" and negative.endswith("を訴えた")
        # 患者 is the only NOUN chunk: its exact and coarse pools hold nothing else, so "any chunk" is used
        assert negative[:2] in symptoms
        assert negative[3:5] in symptoms - {anchor[3:5]}  # an entity of the same label, never the original


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_written_rows_read_back_as_triplets(tmp_path, suffix):
    rows = contradiction_rows(corpus(), ChunkSwapGenerator(corpus()), k=3, seed=0)
    path = write_rows(rows, tmp_path / f"stage1{suffix}")
    loaded = load_training_data(str(path), shuffle=False)
    assert loaded.column_names[:3] == ["anchor", "positive", "negative"]
    assert loaded.to_dict() == rows.to_dict()


def test_parsed_corpus_round_trip_and_bad_line(tmp_path):
    path = save_parsed(corpus(), tmp_path / "parsed.jsonl")
    assert load_parsed(path) == corpus()
    path.write_text('{"text": "x"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"parsed.jsonl:1: expected a parsed sentence"):
        load_parsed(path)


def test_no_contradiction_at_all_raises():
    lone = [ParsedSentence("患者は発熱を訴えた", 5, (NounChunk(3, 5, "発熱", "ENT:D"),))]
    with pytest.raises(ValueError, match="produced no contradiction"):
        contradiction_rows(lone, ChunkSwapGenerator(lone))
