"""Transfer, kNN and retrieval loaders against the real files (counts from MANIFEST.md) and broken copies."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from sentkit.datasets.labelled import read_labelled_pairs
from sentkit.datasets.marc import MARC_SPLIT_LANGS, load_marc, marc_split_for, read_marc
from sentkit.datasets.pawsx import PAWSX_LANGS, load_pawsx
from sentkit.datasets.qabot import load_qabot, read_qabot_query
from sentkit.datasets.qam import QAM_LANGS, load_qam
from sentkit.datasets.xnli import XNLI_LABELS, XNLI_LANGS, load_xnli
from sentkit.errors import DataFormatError, MissingDataError


@pytest.mark.parametrize("lang", XNLI_LANGS)
def test_xnli_real_counts(data_root, lang):
    dev, test = load_xnli(lang, "dev", data_root), load_xnli(lang, "test", data_root)
    assert (len(dev), len(test)) == (2490, 5010)
    assert np.bincount(test.labels).tolist() == [1670, 1670, 1670]
    assert test.first[0] == test.first[1] == test.first[2]  # one premise, three hypotheses


def test_xnli_rows_are_parallel(data_root):
    en, de = load_xnli("en", "test", data_root), load_xnli("de", "test", data_root)
    assert np.array_equal(en.labels, de.labels)
    assert en.first[0].startswith("Well, I wasn't even thinking about that")


def test_pawsx_qam_real_counts(data_root):
    for lang in PAWSX_LANGS:
        for split in ("dev", "test"):
            data = load_pawsx(lang, split, data_root)
            assert len(data) == 2000 and set(data.labels.tolist()) == {0, 1}
    for lang in QAM_LANGS:
        for split in ("dev", "test"):
            data = load_qam(lang, split, data_root)
            assert len(data) == 10000 and int(data.labels.sum()) == 5000


def test_marc_real_counts_and_missing_test_ja(data_root):
    for split, langs in MARC_SPLIT_LANGS.items():
        for lang in langs:
            data = load_marc(lang, split, data_root)
            assert len(data) == 5000
            assert np.bincount(data.labels).tolist() == [1000] * 5
    assert marc_split_for("ja", "test") == "dev" and marc_split_for("de", "test") == "test"
    with pytest.raises(MissingDataError, match="test.ja.json"):
        load_marc("ja", "test", data_root)
    with pytest.raises(ValueError, match="no language 'ko'"):
        marc_split_for("ko", "test")


def test_qabot_real_counts(data_root):
    queries = load_qabot(data_root)
    assert [q.query_id for q in queries] == [str(i) for i in range(1, 21)]
    sizes = [len(q.questions) for q in queries]
    assert sizes.count(1141) == 11 and sizes.count(1142) == 9
    assert len({s for q in queries for s in q.questions}) == 1142
    assert all(1 <= q.labels.sum() <= 7 for q in queries)
    assert queries[0].query.startswith("課題1を提出")
    assert "\n" in queries[0].answers[1]  # quoted multi-line CSV fields are kept whole


# --- corrupted copies -----------------------------------------------------------------------------


def test_pair_tsv_wrong_field_count(tmp_path):
    path = tmp_path / "dev-en.tsv"
    path.write_text("a\tb\tneutral\nc\td\tentailment\ne\tcontradiction\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev-en\.tsv:3: expected 3 tab-separated fields, got 2"):
        read_labelled_pairs(path, XNLI_LABELS)


def test_pair_tsv_unknown_label_names_the_line(data_root, toy_root):
    lines = (data_root / "transfer" / "XNLI" / "dev-de.tsv").read_text(encoding="utf-8").splitlines()
    lines[16] = lines[16].rsplit("\t", 1)[0] + "\tmaybe"
    root = toy_root / "transfer" / "XNLI"
    root.mkdir(parents=True)
    (root / "dev-de.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev-de\.tsv:17: expected a label in .* got 'maybe'"):
        load_xnli("de", "dev", toy_root)


def test_pawsx_and_qam_reject_bad_labels(toy_root):
    (toy_root / "transfer" / "PAWSX").mkdir(parents=True)
    (toy_root / "transfer" / "PAWSX" / "test-fr.tsv").write_text("a\tb\t1\nc\td\t2\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"test-fr\.tsv:2: expected a label"):
        load_pawsx("fr", "test", toy_root)
    (toy_root / "transfer" / "QAM").mkdir(parents=True)
    (toy_root / "transfer" / "QAM" / "dev.en").write_bytes(b"q\tp\t0\nq\t\xff\t1\n")
    with pytest.raises(DataFormatError, match=r"dev\.en:2: expected UTF-8"):
        load_qam("en", "dev", toy_root)


def test_marc_bad_json_and_bad_stars(tmp_path):
    good = json.dumps({"stars": "3", "review_body": "ok"})
    path = tmp_path / "dev.en.json"
    path.write_text(f"{good}\n{good}\n{{not json\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev\.en\.json:3: expected one UTF-8 JSON object"):
        read_marc(path)
    path.write_text(f"{good}\n" + json.dumps({"stars": "6", "review_body": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev\.en\.json:2: expected 'stars' in 1\.\.5, got '6'"):
        read_marc(path)
    path.write_text(json.dumps({"stars": "1", "review_title": "no body"}) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev\.en\.json:1: expected a JSON object with a string"):
        read_marc(path)


def test_qabot_broken_copies(data_root, tmp_path):
    folder = tmp_path / "1"
    shutil.copytree(data_root / "retrieval" / "qabot" / "1", folder)
    raw = (folder / "data.csv").read_bytes()
    lines = raw.split(b"\n")  # records end in CRLF; quoted fields hold bare LF
    # the 2nd record is quoted and spans physical lines 4-9: the error names the line it ends on
    assert lines[8].endswith(b",0\r") and lines[3].startswith(b'"')
    lines[8] = lines[8][:-3] + b",yes\r"
    (folder / "data.csv").write_bytes(b"\n".join(lines))
    with pytest.raises(DataFormatError, match=r"data\.csv:9: expected label 0 or 1, got 'yes'"):
        read_qabot_query(folder)
    (folder / "data.csv").write_text("q,a\nx,y\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"data\.csv:1: expected header question,answer,label"):
        read_qabot_query(folder)
    (folder / "question.txt").unlink()
    with pytest.raises(MissingDataError, match="question.txt"):
        read_qabot_query(folder)
