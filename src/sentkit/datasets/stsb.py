"""STS Benchmark csv (Cer et al., 2017): tab-separated, no quoting, score in column 5, sentences in 6-7."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.sts_pairs import STS_SCALE, STSPairs, parse_score, tab_rows

FIELDS = "genre, file, year, id, score, sentence1, sentence2"


def read_stsb(path: str | Path, lang: str = "en", scale: tuple[float, float] | None = STS_SCALE) -> STSPairs:
    """One STS-B split. Quotes are literal text (csv quoting would merge lines); columns after the 7th
    (source notes in some official releases) are ignored."""
    path = Path(path)
    sent1, sent2, gold = [], [], []
    for number, fields in tab_rows(path, 7, FIELDS):
        gold.append(parse_score(fields[4], path, number, scale))
        sent1.append(fields[5])
        sent2.append(fields[6])
    return STSPairs(sent1, sent2, np.asarray(gold, dtype=np.float64), lang, f"STSB.{_split(path)}")


def _split(path: Path) -> str:
    return path.stem.removeprefix("sts-")
