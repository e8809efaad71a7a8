"""Reading UTF-8 text files line by line, with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from sentkit.errors import DataFormatError, MissingDataError


def iter_utf8_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) for a UTF-8 file; a bad byte names file:line."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a UTF-8 text file")
    with path.open("rb") as fh:
        yield from decode_lines(fh, path)


def decode_lines(fh: Iterable[bytes], path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, decoded line) of a binary stream read from `path` (any byte source: a file,
    a decompressing reader); a leading BOM is dropped and a bad byte names path:line."""
    for number, raw in enumerate(fh, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataFormatError(
                path, number, f"expected UTF-8 text ({err.reason} at byte {err.start} of the line)"
            ) from None
        if number == 1:
            line = line.removeprefix("\ufeff")
        yield number, line.rstrip("\r\n")


def read_lines(path: str | Path) -> list[str]:
    """Every line of a UTF-8 file, newline stripped; blank lines kept so rows stay aligned with lines."""
    return [line for _, line in iter_utf8_lines(path)]


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file; anything but an object is an error."""
    for number, line in iter_utf8_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError(path, number, f"expected a JSON object ({err.msg})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(obj).__name__}")
        yield number, obj


def read_aligned_lines(first: str | Path, second: str | Path) -> tuple[list[str], list[str]]:
    """Two line-aligned UTF-8 files (e.g. texts and their labels); a length mismatch names the longer file.

    The error points at the first line that has no partner in the shorter file.
    """
    a, b = read_lines(first), read_lines(second)
    if len(a) != len(b):
        longer, shorter = (first, second) if len(a) > len(b) else (second, first)
        n = min(len(a), len(b))
        raise DataFormatError(
            longer, n + 1, f"expected as many lines as {Path(shorter).name} ({n}), got {max(len(a), len(b))}"
        )
    return a, b
