"""SentEval STS files: STS.input.X.txt (sentence1<TAB>sentence2) with STS.gs.X.txt (one score a line).

Also reads the inline form (a gold score as third column, no STS.gs file) of the extended STS17 release.
A blank gold line means "not scored": the pair is skipped, as SentEval does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentkit.datasets.lines import read_lines
from sentkit.datasets.sts_pairs import STS_SCALE, STSPairs, concat_pairs, parse_score, tab_rows
from sentkit.errors import DataFormatError, MissingDataError

# SentEval's subset lists (STS13 lacks the licensed SMT subset), also those of the Japanese translation.
SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}


def read_senteval_sts(
    input_path: str | Path,
    gold_path: str | Path | None = None,
    lang: str = "en",
    dataset: str | None = None,
    scale: tuple[float, float] | None = STS_SCALE,
) -> STSPairs:
    """Scored pairs of one STS.input file; gold from `gold_path` (same line count) or the third column,
    each inside `scale` (SemEval's 0-5)."""
    input_path = Path(input_path)
    inline = gold_path is None
    what = "sentence1, sentence2, score" if inline else "sentence1, sentence2"
    rows = list(tab_rows(input_path, 3 if inline else 2, what))
    if inline:
        scores = [(number, fields[2]) for number, fields in rows]
        where = input_path
    else:
        gold_path = Path(gold_path)
        gold_lines = read_lines(gold_path)
        while len(gold_lines) > len(rows) and not gold_lines[-1].strip():
            gold_lines.pop()
        if len(gold_lines) != len(rows):
            line = min(len(gold_lines), len(rows)) + 1
            raise DataFormatError(
                gold_path,
                line,
                f"expected one gold line per pair of {input_path.name} ({len(rows)} lines), got {len(gold_lines)}",
            )
        scores = list(enumerate(gold_lines, start=1))
        where = gold_path
    sent1, sent2, gold = [], [], []
    for (number, text), (_, fields) in zip(scores, rows):
        if not text.strip():
            continue
        gold.append(parse_score(text, where, number, scale))
        sent1.append(fields[0])
        sent2.append(fields[1])
    name = dataset or input_path.stem.removeprefix("STS.input.")
    return STSPairs(sent1, sent2, np.asarray(gold, dtype=np.float64), lang, name)


def read_sts_year(folder: str | Path, year: str, lang: str = "en") -> list[STSPairs]:
    """Every SentEval subset of one year (`year` in SUBSETS) from its folder, e.g. STS12-en-test/."""
    folder = Path(folder)
    if year not in SUBSETS:
        raise KeyError(f"unknown STS year {year!r}; known: {', '.join(SUBSETS)}")
    parts = []
    for subset in SUBSETS[year]:
        inp, gs = folder / f"STS.input.{subset}.txt", folder / f"STS.gs.{subset}.txt"
        for path in (inp, gs):
            if not path.is_file():
                raise MissingDataError(
                    path, f"{year} needs STS.input/STS.gs files for {', '.join(SUBSETS[year])}"
                )
        parts.append(read_senteval_sts(inp, gs, lang=lang, dataset=f"{year}.{subset}"))
    return parts


def read_sts_year_all(folder: str | Path, year: str, lang: str = "en") -> STSPairs:
    """A year's subsets pooled into one set (SentEval/SimCSE "all" setting)."""
    return concat_pairs(read_sts_year(folder, year, lang), dataset=year)
