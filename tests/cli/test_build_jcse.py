"""`sentkit build contradictions` and `sentkit build translated-sts` through the command line."""

from __future__ import annotations

import json

import pytest

from sentkit.cli import main
from sentkit.training_data.jcse.contradictions import save_parsed
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence
from sentkit.training_data.specs import load_training_data

STUB = '''
class Upper:
    """en -> "ja" = upper case; back = lower case, except that it loses the word "not"."""

    def translate(self, texts, src, tgt):
        if tgt == "ja":
            return [t.upper() for t in texts]
        return [" ".join(w for w in t.lower().split() if w != "not") for t in texts]
'''


def test_build_contradictions_from_a_parsed_cache(tmp_path, capsys):
    corpus = [
        ParsedSentence(f"患者は{s}を訴えた", 5, (NounChunk(3, 5, s, "ENT:D"),))
        for s in ("発熱", "頭痛", "咳嗽")
    ]
    parsed = save_parsed(corpus, tmp_path / "parsed.jsonl")
    out = tmp_path / "rows.jsonl"
    code = main(
        [
            "build",
            "contradictions",
            "--corpus",
            "unused",
            "--parsed",
            str(parsed),
            "--out",
            str(out),
            "--k",
            "2",
        ]
    )
    assert code == 0
    assert "6 rows from 3 sentences" in capsys.readouterr().out
    rows = load_training_data(str(out), shuffle=False)
    assert len(rows) == 6 and rows["anchor"] == rows["positive"]
    manifest = json.loads((tmp_path / "rows.jsonl.manifest.json").read_text(encoding="utf-8"))
    assert manifest["rows_per_anchor"] == 2.0 and manifest["generator"] == "chunk-swap"


def test_build_contradictions_bad_output_is_one_line(tmp_path, capsys):
    assert main(["build", "contradictions", "--corpus", "x", "--out", str(tmp_path / "rows.txt")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"sentkit: error: --out must end in .jsonl or .csv, got '{tmp_path / 'rows.txt'}'"
    )


def test_build_translated_sts(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sacrebleu", reason="pip install 'sentkit[ja]'")
    (tmp_path / "stub_upper.py").write_text(STUB, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "STS.input.toy.txt").write_text(
        "a man is not here\tthe man is here\nit is red\tit is blue\n", encoding="utf-8"
    )
    (tmp_path / "STS.gs.toy.txt").write_text("1.5\n2\n", encoding="utf-8")
    out = tmp_path / "ja"
    args = [
        "build",
        "translated-sts",
        "--input",
        str(tmp_path / "STS.input.toy.txt"),
        "--gold",
        str(tmp_path / "STS.gs.toy.txt"),
    ]
    assert main([*args, "--translator", "stub_upper:Upper", "--out", str(out), "--min-bleu", "90"]) == 0
    assert "1 of 2 pairs kept" in capsys.readouterr().out
    assert (out / "STS.input.toy.txt").read_text(encoding="utf-8") == "IT IS RED\tIT IS BLUE\n"
    assert (out / "STS.gs.toy.txt").read_text(encoding="utf-8") == "2\n"
    report = json.loads((out / "toy.bleu.json").read_text(encoding="utf-8"))
    assert [r["kept"] for r in report["rows"]] == [False, True]
