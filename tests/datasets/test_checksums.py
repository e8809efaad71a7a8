"""Shipped-file checksums: the table matches the data and MANIFEST.md, and a cut or edited copy stops with one line."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from sentkit.datasets import checksums
from sentkit.datasets.checksums import VERIFY_ENV, file_digest, shipped_table, verify_shipped
from sentkit.datasets.root import data_file
from sentkit.datasets.sts_pairs import parse_score
from sentkit.errors import DataFormatError
from sentkit.tasks import get_task


def _copy(data_root, tmp_path, rel):
    dst = tmp_path / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data_root / rel, dst)
    return dst


def test_table_matches_the_data_folder(data_root):
    table = shipped_table()
    on_disk = {
        p.relative_to(data_root).as_posix()
        for p in data_root.rglob("*")
        if p.is_file() and p.name != "MANIFEST.md"
    }
    assert set(table) == on_disk
    for rel in (
        "sts/STSBenchmark/sts-dev.csv",
        "transfer/XNLI/test-sw.tsv",
        "bitext/tatoeba/tatoeba.deu-eng.eng",
    ):
        assert file_digest(data_root / rel) == table[rel]


# MANIFEST.md's row counts, as line counts of the files (JSICK adds its header line).
MANIFEST_LINES = {
    "sts/STSBenchmark/sts-train.csv": 5749,
    "sts/STSBenchmark/sts-dev.csv": 1500,
    "sts/STSBenchmark/sts-test.csv": 1379,
    "sts-ja/JSICK/SICK_train.txt": 4500 + 1,
    "sts-ja/JSICK/SICK_trial.txt": 500 + 1,
    "sts-ja/JSICK/SICK_test_annotated.txt": 4927 + 1,
    "sts-ja/JSTS/JSTS-train.csv": 5000,
    "sts-ja/JSTS/JSTS-test.csv": 5000,
    "sts-ja/JSTS/JSTS-dev.csv": 1457,
    # MANIFEST says 183 / 3481; the files hold 184 / 3482 data rows and no header (docs/evaluation.md)
    "sts-ja/JAC-STS/JAC-sts-dev.csv": 184,
    "sts-ja/JAC-STS/JAC-sts-test.csv": 3482,
}


def test_line_counts_agree_with_manifest():
    table = shipped_table()
    for rel, lines in MANIFEST_LINES.items():
        assert table[rel][0] == lines, rel
    xnli = {k: v[0] for k, v in table.items() if k.startswith("transfer/XNLI/")}
    assert len(xnli) == 30 and {v for k, v in xnli.items() if "/dev-" in k} == {2490}
    assert {v for k, v in xnli.items() if "/test-" in k} == {5010}
    pawsx = {v[0] for k, v in table.items() if k.startswith("transfer/PAWSX/")}
    assert pawsx == {2000}
    sts17 = {k: v[0] for k, v in table.items() if k.startswith("sts/STS17-test/STS.gs.")}
    assert len(sts17) == 7 and set(sts17.values()) == {250}
    tatoeba = [k for k in table if k.startswith("bitext/tatoeba/tatoeba.")]
    assert len(tatoeba) == 2 * 112


def test_truncated_stsb_dev_stops_with_one_line(data_root, tmp_path):
    """A copy cut mid-line at row 700 scored 91.86 on 700 pairs before; now it names file, lines and hash."""
    dst = _copy(data_root, tmp_path, "sts/STSBenchmark/sts-dev.csv")
    lines = dst.read_bytes().split(b"\n")
    dst.write_bytes(b"\n".join(lines[:699]) + b"\n" + lines[699][:20])
    with pytest.raises(DataFormatError) as err:
        get_task("stsb-dev", data_root=tmp_path).load()
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(dst))
    assert re.search(
        r"expected the shipped sts/STSBenchmark/sts-dev\.csv \(1500 lines, sha256 af3680429fce\)", message
    )
    assert re.search(r"found 700 lines, sha256 [0-9a-f]{12}", message)
    with pytest.raises(DataFormatError, match="1500 lines"):  # alignment-uniformity reads the same file
        get_task("alignment-uniformity", data_root=tmp_path).load()


def test_edited_file_with_same_line_count_and_folder_reads(data_root, tmp_path):
    dst = _copy(data_root, tmp_path, "sts/STS17-test/STS.input.track5.en-en.txt")
    text = dst.read_text(encoding="utf-8")
    dst.write_text(text.replace("a", "e", 1), encoding="utf-8")
    # sts17 reads through the folder: every listed file below it is checked
    with pytest.raises(DataFormatError, match=r"STS\.input\.track5\.en-en\.txt.*250 lines.*found 250 lines"):
        get_task("sts17", langs=["en-en"], data_root=tmp_path).load()


def test_users_own_files_and_opt_out_are_not_checked(data_root, tmp_path, monkeypatch):
    own = tmp_path / "sts" / "STSBenchmark" / "my-own.csv"
    own.parent.mkdir(parents=True)
    own.write_text("x\n")
    assert data_file("sts", "STSBenchmark", "my-own.csv", root=tmp_path) == own  # not in the table
    verify_shipped(own, tmp_path)
    outside = tmp_path / "elsewhere.csv"
    outside.write_text("y\n")
    verify_shipped(outside, data_root)  # not below the data root at all
    dst = _copy(data_root, tmp_path, "sts/STSBenchmark/sts-test.csv")
    dst.write_bytes(dst.read_bytes()[:5000])
    monkeypatch.setenv(VERIFY_ENV, "0")
    assert data_file("sts", "STSBenchmark", "sts-test.csv", root=tmp_path) == dst


def test_digest_is_cached_by_size_and_mtime(tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a\nb\nc")
    assert file_digest(path)[0] == 3  # a last line without newline counts
    calls = []
    real_sha = checksums.hashlib.sha256
    monkeypatch.setattr(checksums.hashlib, "sha256", lambda: calls.append(1) or real_sha())
    file_digest(path), file_digest(path)
    assert calls == []  # cached: the file is not read again
    path.write_bytes(b"a\nb\nd")
    os.utime(path, ns=(1, 1))  # same size, other mtime -> rehashed
    assert file_digest(path)[1] == real_sha(b"a\nb\nd").hexdigest() and calls == [1]


def test_regenerated_table_is_the_shipped_one(data_root, tmp_path):
    out = checksums.write_table_module(data_root, tmp_path / "table.py")
    assert out.read_text(encoding="utf-8") == checksums.TABLE_MODULE.read_text(encoding="utf-8")


# ---- gold scales -------------------------------------------------------------------------------
def test_parse_score_scale():
    assert parse_score("5.0", "f", 1, (0, 5)) == 5.0 and parse_score("7", "f", 1) == 7.0
    with pytest.raises(DataFormatError, match=r"f:3: expected a similarity score in \[0, 5\], got '5.2'"):
        parse_score("5.2", "f", 3, (0, 5))


@pytest.mark.parametrize(
    "rel,line,bad,message",
    [
        (
            "sts/STSBenchmark/sts-dev.csv",
            12,
            lambda f: f[:4] + ["5.5"] + f[5:],
            r"sts-dev\.csv:12: .*\[0, 5\], got '5.5'",
        ),
        (
            "sts-ja/JSTS/JSTS-dev.csv",
            3,
            lambda f: ["-1.0"] + f[1:],
            r"JSTS-dev\.csv:3: .*\[0, 5\], got '-1.0'",
        ),
        (
            "sts-ja/JAC-STS/JAC-sts-test.csv",
            9,
            lambda f: ["6"] + f[1:],
            r"JAC-sts-test\.csv:9: .*\[0, 5\], got '6'",
        ),
        (
            "sts-ja/JSICK/SICK_test_annotated.txt",
            4,
            lambda f: f[:3] + ["0.5"] + f[4:],
            r":4: .*\[1, 5\], got '0.5'",
        ),
    ],
)
def test_gold_outside_the_scale_names_file_and_line(
    data_root, tmp_path, monkeypatch, rel, line, bad, message
):
    from sentkit.datasets.jsts import read_jsts
    from sentkit.datasets.sick import read_sick
    from sentkit.datasets.stsb import read_stsb

    dst = _copy(data_root, tmp_path, rel)
    lines = dst.read_text(encoding="utf-8").split("\n")
    lines[line - 1] = "\t".join(bad(lines[line - 1].split("\t")))
    dst.write_text("\n".join(lines), encoding="utf-8")
    reader = read_stsb if "STSB" in rel else read_sick if "SICK" in rel else read_jsts
    with pytest.raises(DataFormatError, match=message):
        reader(dst)


def test_sts17_inline_gold_outside_the_scale(data_root, tmp_path):
    from sentkit.datasets.senteval_sts import read_senteval_sts

    dst = _copy(data_root, tmp_path, "sts/STS17-test/STS.input.extended.de-en.txt")
    lines = dst.read_text(encoding="utf-8").split("\n")
    fields = lines[1].split("\t")
    lines[1] = "\t".join([*fields[:2], "50"])
    dst.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(
        DataFormatError, match=r"de-en\.txt:2: expected a similarity score in \[0, 5\], got '50'"
    ):
        read_senteval_sts(dst)
