"""Multilingual Amazon Reviews Corpus (Keung et al. 2020): JSON lines, text = review_body, label = stars - 1.

Only dev (en, de, es, fr, ja, zh) and test (en, de, es, fr, zh) are available here: test.ja is missing,
so `marc_split_for` names the split a language falls back to.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sentkit.datasets.labelled import LabelledTexts
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError, MissingDataError

MARC_LANGS: tuple[str, ...] = ("de", "en", "es", "fr", "ja", "zh")
MARC_SPLIT_LANGS: dict[str, tuple[str, ...]] = {
    "dev": ("de", "en", "es", "fr", "ja", "zh"),
    "test": ("de", "en", "es", "fr", "zh"),
}


def read_marc(path: str | Path) -> LabelledTexts:
    """One JSON object a line with `review_body` and `stars` ("1".."5"); label = stars - 1 (0..4)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path)
    texts, labels = [], []
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise DataFormatError(path, number, f"expected one UTF-8 JSON object ({err})") from None
            if not isinstance(record, dict) or not isinstance(record.get("review_body"), str):
                raise DataFormatError(path, number, "expected a JSON object with a string 'review_body'")
            stars = str(record.get("stars", ""))
            if stars not in {"1", "2", "3", "4", "5"}:
                raise DataFormatError(path, number, f"expected 'stars' in 1..5, got {record.get('stars')!r}")
            texts.append(record["review_body"])
            labels.append(int(stars) - 1)
    if not labels:
        raise DataFormatError(path, None, "expected at least one review, got an empty file")
    return LabelledTexts(texts, np.asarray(labels, dtype=np.int64))


def marc_split_for(lang: str, split: str) -> str:
    """The split actually read for `lang`: `split` if it exists, else dev (only for test.ja)."""
    if split not in MARC_SPLIT_LANGS:
        raise ValueError(f"MARC split must be one of {tuple(MARC_SPLIT_LANGS)}, got {split!r}")
    if lang in MARC_SPLIT_LANGS[split]:
        return split
    if lang in MARC_SPLIT_LANGS["dev"]:
        return "dev"
    raise ValueError(f"MARC has no language {lang!r} (known: {', '.join(MARC_LANGS)})")


def load_marc(lang: str, split: str, root: str | Path | None = None) -> LabelledTexts:
    """MARC `{split}.{lang}.json` under `transfer/MARC` (5000 reviews, 1000 per star)."""
    return read_marc(data_file("transfer", "MARC", f"{split}.{lang}.json", root=root))
