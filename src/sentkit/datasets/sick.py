"""SICK relatedness files (SentEval's SICK_*.txt, JSICK): a header row naming the columns, then pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.lines import read_lines
from sentkit.datasets.sts_pairs import SICK_SCALE, STSPairs, parse_score
from sentkit.errors import DataFormatError

COLUMNS = ("sentence_A", "sentence_B", "relatedness_score")


def sick_columns(path: Path, columns: tuple[str, ...]) -> tuple[list[int], list[tuple[int, list[str]]]]:
    """SICK-format rows: the header positions of `columns` and each data row's (1-based line, fields),
    every row checked to have the header's width. SentEval's split files and the full SICK.txt alike."""
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataFormatError(
            path, 1, f"expected a header row naming {', '.join(columns)}, got an empty file"
        )
    header = lines[0].split("\t")
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataFormatError(path, 1, f"expected a header row with column(s) {', '.join(missing)}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataFormatError(
                path,
                number,
                f"expected {len(header)} tab-separated fields as in the header, got {len(fields)}",
            )
        rows.append((number, fields))
    return [header.index(c) for c in columns], rows


def read_sick(
    path: str | Path,
    lang: str = "en",
    dataset: str | None = None,
    scale: tuple[float, float] | None = SICK_SCALE,
) -> STSPairs:
    """Pairs and relatedness (1-5) found by header name, so both SentEval's 5-column split files and the
    full 12-column SICK.txt read alike."""
    path = Path(path)
    (a, b, score), rows = sick_columns(path, COLUMNS)
    sent1, sent2, gold = [], [], []
    for number, fields in rows:
        gold.append(parse_score(fields[score], path, number, scale))
        sent1.append(fields[a])
        sent2.append(fields[b])
    return STSPairs(sent1, sent2, np.asarray(gold, dtype=np.float64), lang, dataset or f"SICK.{path.stem}")
