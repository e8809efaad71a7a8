"""Score-first tsv (JSTS and JAC-STS as shipped with JCSE's SentEval): score, sentence1, sentence2."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.sts_pairs import STS_SCALE, STSPairs, parse_score, tab_rows
from sentkit.errors import DataFormatError


def read_jsts(
    path: str | Path,
    lang: str = "ja",
    dataset: str | None = None,
    scale: tuple[float, float] | None = STS_SCALE,
) -> STSPairs:
    """One split, no header, no quoting; extra columns are an error (a sentence holding a tab).
    JSTS and JAC-STS both annotate 0-5 (`scale`)."""
    path = Path(path)
    sent1, sent2, gold = [], [], []
    for number, fields in tab_rows(path, 3, "score, sentence1, sentence2"):
        if len(fields) != 3:
            raise DataFormatError(
                path,
                number,
                f"expected 3 tab-separated fields (score, sentence1, sentence2), got {len(fields)}",
            )
        gold.append(parse_score(fields[0], path, number, scale))
        sent1.append(fields[1])
        sent2.append(fields[2])
    return STSPairs(sent1, sent2, np.asarray(gold, dtype=np.float64), lang, dataset or path.stem)
