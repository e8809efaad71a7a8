"""Plain one-sentence-per-line input files (for `sentkit encode`)."""

from __future__ import annotations

from pathlib import Path

from sentkit.errors import DataFormatError, MissingDataError


def read_lines(path: str | Path) -> list[str]:
    """Every line of a UTF-8 file, newline stripped; blank lines kept so rows stay aligned with lines."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a UTF-8 text file with one sentence per line")
    lines = []
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    path, number, f"expected UTF-8 text ({err.reason} at byte {err.start})"
                ) from None
    return lines
