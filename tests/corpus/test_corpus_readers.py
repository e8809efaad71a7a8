"""Streaming corpus readers: every format, compressed or not, gives the same (row, text); bad rows name file:row."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

from sentkit.corpus.readers import InputFile, detect_format, input_files, iter_rows
from sentkit.errors import DataFormatError, MissingDataError

LINES = ["Ein Mann spielt Gitarre.", "", "A man plays a guitar.\tTabbed", "última línea"]
OPENERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _write(path, data: bytes):
    opener = OPENERS[path.suffix if path.suffix in OPENERS else ""]
    with opener(path, "wb") as fh:
        fh.write(data)
    return path


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
def test_text_rows_are_lines_with_their_numbers_in_any_compression(tmp_path, suffix):
    # a BOM on line 1 and CRLF endings are dropped; the blank line stays a row (vectors align with lines)
    data = ("\ufeff" + "\r\n".join(LINES) + "\r\n").encode("utf-8")
    path = _write(tmp_path / f"corpus.txt{suffix}", data)
    source = input_files(path)[0]
    assert source.format == "text"
    assert list(iter_rows(source)) == list(enumerate(LINES, start=1))


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_jsonl_rows_take_the_text_field(tmp_path, suffix):
    rows = [{"id": i, "body": text} for i, text in enumerate(LINES)]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    path = _write(tmp_path / f"corpus.jsonl{suffix}", data)
    source = input_files(path)[0]
    assert source.format == "jsonl"
    assert list(iter_rows(source, text_field="body")) == list(enumerate(LINES, start=1))


@pytest.mark.parametrize(
    "line, expected",
    [
        ('{"text": "ok"', "expected a JSON object (Expecting ',' delimiter)"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"body": "no text"}', "expected a string field 'text' (no such key)"),
        ('{"text": 5}', "expected a string field 'text' (int)"),
        ("", "expected a JSON object, got a blank line"),
    ],
)
def test_malformed_jsonl_row_names_file_and_line(tmp_path, line, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"}\n' + line + '\n{"text": "d"}\n', encoding="utf-8")
    rows = iter_rows(InputFile(str(path), "jsonl"))
    assert next(rows) == (1, "a") and next(rows) == (2, "b")  # rows before the bad one stream out first
    with pytest.raises(DataFormatError) as err:
        next(rows)
    assert str(err.value) == f"{path}:3: {expected}"


def test_non_utf8_line_inside_a_gzip_names_its_line(tmp_path):
    path = _write(tmp_path / "c.txt.gz", b"fine\nalso fine\n\xff\xfe broken\nafter\n")
    with pytest.raises(DataFormatError, match=r"c\.txt\.gz:3: expected UTF-8 text"):
        list(iter_rows(InputFile(str(path), "text")))


def test_truncated_gzip_is_a_format_error_naming_the_file(tmp_path):
    whole = gzip.compress(("line\n" * 5000).encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataFormatError, match=r"cut\.txt\.gz:\d+: expected a complete gz stream"):
        list(iter_rows(InputFile(str(path), "text")))


def test_parquet_rows_and_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"sentence": LINES, "n": list(range(4))}), path, row_group_size=3)
    source = input_files(path)[0]
    assert source.format == "parquet"
    assert list(iter_rows(source, "sentence")) == list(enumerate(LINES, start=1))  # across row groups
    with pytest.raises(DataFormatError, match=r"expected a text column 'text' \(columns: sentence, n\)"):
        list(iter_rows(source))
    with pytest.raises(DataFormatError, match="expected column 'n' to hold strings, got int64"):
        list(iter_rows(source, "n"))
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a", None, "c"]}), nulls)
    with pytest.raises(
        DataFormatError, match=r"nulls\.parquet:2: expected a text in column 'text', got null"
    ):
        list(iter_rows(InputFile(str(nulls), "parquet")))


def test_formats_from_names_and_folders_in_sorted_order(tmp_path):
    assert [detect_format(n) for n in ("a.txt", "a.jsonl.gz", "a.ndjson", "a.parquet", "a.tsv.xz", "a")] == [
        "text",
        "jsonl",
        "jsonl",
        "parquet",
        "text",
        "text",
    ]
    for name in ("b.txt", "a.jsonl", ".hidden", "c.txt.gz"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "sub").mkdir()
    found = input_files(tmp_path)
    assert [(p.path.rsplit("/", 1)[1], p.format) for p in found] == [
        ("a.jsonl", "jsonl"),
        ("b.txt", "text"),
        ("c.txt.gz", "text"),
    ]
    assert [s.format for s in input_files(tmp_path, "text")] == ["text"] * 3
    assert found[1].row_id(7) == f"{tmp_path}/b.txt:7"
    with pytest.raises(MissingDataError):
        input_files(tmp_path / "missing.txt")
