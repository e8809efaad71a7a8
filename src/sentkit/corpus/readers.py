"""Streaming corpus readers: (row number, text) from text, JSONL or parquet files, compressed or not.

Memory stays bounded by one line (text, JSONL) or one record batch (parquet) whatever the file size.
Row numbers are 1-based and count every row of the file (a text file's blank lines are rows: vectors stay
aligned with lines), so `file:row` is a stable id for a sentence; bad input stops at its file and row.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sentkit.datasets.lines import decode_lines
from sentkit.errors import DataFormatError, InvalidArgument, MissingDataError, SentkitError

FORMATS = ("text", "jsonl", "parquet")
COMPRESSION = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
PARQUET_BATCH_ROWS = 8192  # rows decoded at a time from a parquet file
# what a damaged compressed stream raises while it is read (a truncated file: EOFError)
_STREAM_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


@dataclass(frozen=True)
class InputFile:
    """One input file and the format it is read as; `path` is kept as the user wrote it (row ids use it)."""

    path: str
    format: str

    def row_id(self, row: int) -> str:
        return f"{self.path}:{row}"


def detect_format(path: str | Path) -> str:
    """The format a file name implies: `.jsonl`/`.ndjson` JSON lines, `.parquet`, anything else text;
    a `.gz`, `.bz2` or `.xz` ending is looked through (`wiki.jsonl.gz` is JSONL)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSION:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in (".jsonl", ".ndjson"):
        return "jsonl"
    if last == ".parquet":
        return "parquet"
    return "text"


def input_files(path: str | Path, input_format: str = "auto") -> list[InputFile]:
    """The file itself, or every regular non-hidden file directly inside a folder (sorted by name, so the
    order and the row ids repeat); each read as `input_format` or, for "auto", as its name implies."""
    if input_format != "auto" and input_format not in FORMATS:
        raise SentkitError(f"input format must be auto or one of {', '.join(FORMATS)}, got {input_format!r}")
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
        if not files:
            raise InvalidArgument(
                f"{p}: a folder with no corpus file in it (expected {INPUT_EXPECTED}; hidden files and "
                "anything but regular files are skipped)"
            )
    else:
        check_regular_file(p, INPUT_EXPECTED)
        files = [p]
    return [InputFile(str(f), detect_format(f) if input_format == "auto" else input_format) for f in files]


INPUT_EXPECTED = "a regular text, JSONL or parquet file, or a folder holding such files"
_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_regular_file(path: str | Path, expected: str) -> None:
    """Refuse (one line) a path that is not a regular file (through symlinks): a missing path is
    MissingDataError; a pipe, device, socket or folder InvalidArgument saying what it is. Inputs are read
    more than once (shards are checked against them, mining reads their texts back), so a stream cannot be
    one."""
    try:
        mode = Path(path).stat().st_mode
    except FileNotFoundError:
        raise MissingDataError(path, f"expected {expected}") from None
    if stat.S_ISREG(mode):
        return
    what = "a folder" if stat.S_ISDIR(mode) else next((w for test, w in _SPECIAL if test(mode)), "not a file")
    raise InvalidArgument(
        f"{path}: is {what}, not a regular file (expected {expected}; inputs are read more than once, so a "
        "stream or device cannot be one)"
    )


def iter_rows(source: InputFile, text_field: str = "text") -> Iterator[tuple[int, str]]:
    """(1-based row number, text) of every row of `source`; `text_field` names the JSONL key or parquet
    column holding the text."""
    if source.format == "parquet":
        yield from _parquet_rows(source.path, text_field)
    elif source.format == "jsonl":
        yield from _jsonl_rows(source.path, text_field)
    elif source.format == "text":
        yield from _text_lines(source.path)
    else:
        raise SentkitError(f"{source.path}: unknown input format {source.format!r}")


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    p = Path(path)
    check_regular_file(p, "a UTF-8 text file")
    opener = COMPRESSION.get(p.suffix.lower())
    with opener(p, "rb") if opener else p.open("rb") as fh:
        number = 0
        try:
            for number, line in decode_lines(fh, path):
                yield number, line
        except _STREAM_ERRORS as err:
            if not opener:
                raise
            kind = p.suffix.lower().lstrip(".")
            raise DataFormatError(
                path, number + 1, f"expected a complete {kind} stream ({type(err).__name__}: {err})"
            ) from None


def _jsonl_rows(path: str, text_field: str) -> Iterator[tuple[int, str]]:
    for number, line in _text_lines(path):
        if not line.strip():
            raise DataFormatError(path, number, "expected a JSON object, got a blank line")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, number, f"expected a JSON object ({err.msg})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(obj).__name__}")
        text = obj.get(text_field)
        if not isinstance(text, str):
            got = "no such key" if text_field not in obj else type(text).__name__
            raise DataFormatError(path, number, f"expected a string field {text_field!r} ({got})")
        yield number, text


def _parquet_rows(path: str, text_field: str) -> Iterator[tuple[int, str]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:
        raise SentkitError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from err
    check_regular_file(path, "a parquet file")
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise DataFormatError(path, None, f"expected a parquet file ({err})") from None
    schema = parquet.schema_arrow
    if text_field not in schema.names:
        raise DataFormatError(
            path, None, f"expected a text column {text_field!r} (columns: {', '.join(schema.names)})"
        )
    kind = schema.field(text_field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)):
        raise DataFormatError(path, None, f"expected column {text_field!r} to hold strings, got {kind}")
    number = 0
    for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[text_field]):
        for text in batch.column(0).to_pylist():
            number += 1
            if text is None:
                raise DataFormatError(path, number, f"expected a text in column {text_field!r}, got null")
            yield number, text
