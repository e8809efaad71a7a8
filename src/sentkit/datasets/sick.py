"""SICK relatedness files (SentEval's SICK_*.txt, JSICK): a header row naming the columns, then pairs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.lines import read_lines
from sentkit.datasets.sts_pairs import STSPairs, parse_score
from sentkit.errors import DataFormatError

COLUMNS = ("sentence_A", "sentence_B", "relatedness_score")


def read_sick(path: str | Path, lang: str = "en", dataset: str | None = None) -> STSPairs:
    """Pairs and relatedness (1-5) found by header name, so both SentEval's 5-column split files and the
    full 12-column SICK.txt read alike."""
    path = Path(path)
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataFormatError(
            path, 1, f"expected a header row naming {', '.join(COLUMNS)}, got an empty file"
        )
    header = lines[0].split("\t")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise DataFormatError(path, 1, f"expected a header row with column(s) {', '.join(missing)}")
    a, b, score = (header.index(c) for c in COLUMNS)
    width = len(header)
    sent1, sent2, gold = [], [], []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != width:
            raise DataFormatError(
                path, number, f"expected {width} tab-separated fields as in the header, got {len(fields)}"
            )
        gold.append(parse_score(fields[score], path, number))
        sent1.append(fields[a])
        sent2.append(fields[b])
    return STSPairs(sent1, sent2, np.asarray(gold, dtype=np.float64), lang, dataset or f"SICK.{path.stem}")
