"""Readers for NLI data in its released formats; every reader returns `NliRow`s with a text label.

SNLI 1.0 / MultiNLI 1.0 (`.jsonl` and the tab-separated `.txt` with a header row; gold label "-" =
annotators reached no consensus, skipped as the papers do), SimCSE's `nli_for_simcse.csv`
(sent0, sent1, hard_neg), JSNLI 1.1 (label<TAB>premise<TAB>hypothesis, JUMAN++-segmented) and
XNLI as shipped in SentEval (premise<TAB>hypothesis<TAB>label). None of the English or Japanese
training sets is available offline here; the readers are for users who have the files.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from sentkit.datasets.labelled import read_labelled_pairs
from sentkit.datasets.lines import iter_jsonl, iter_utf8_lines
from sentkit.datasets.root import data_file
from sentkit.datasets.xnli import XNLI_LABELS, XNLI_LANGS, XNLI_SPLITS
from sentkit.errors import DataFormatError, MissingDataError

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
NLI_LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)
NO_CONSENSUS = "-"  # SNLI/MNLI gold label when the five annotators had no majority

_SNLI_FIELDS = ("sentence1", "sentence2", "gold_label")
_SIMCSE_FIELDS = ("sent0", "sent1", "hard_neg")
# JUMAN++ puts a space between every morpheme; keep one only between two ASCII letters/digits ("iPhone 6")
_SEGMENT_SPACE = re.compile(r"(?<![A-Za-z0-9]) +| +(?![A-Za-z0-9])")


@dataclass(frozen=True)
class NliRow:
    """One premise-hypothesis pair with its gold label (one of NLI_LABELS) and language code."""

    premise: str
    hypothesis: str
    label: str
    lang: str


def read_snli_jsonl(path: str | Path, lang: str = "en") -> list[NliRow]:
    """SNLI/MultiNLI `.jsonl`: one object a line with sentence1, sentence2, gold_label ("-" skipped)."""
    rows = []
    for number, obj in iter_jsonl(path):
        if any(not isinstance(obj.get(k), str) for k in _SNLI_FIELDS):
            raise DataFormatError(
                path, number, f"expected a JSON object with string fields {list(_SNLI_FIELDS)}"
            )
        row = _labelled(path, number, obj["sentence1"], obj["sentence2"], obj["gold_label"], lang)
        if row is not None:
            rows.append(row)
    return _non_empty(path, rows)


def read_snli_txt(path: str | Path, lang: str = "en") -> list[NliRow]:
    """SNLI/MultiNLI `.txt`: tab-separated with a header row naming gold_label, sentence1, sentence2."""
    rows = []
    header: list[str] = []
    columns: list[int] = []
    for number, line in iter_utf8_lines(path):
        fields = line.split("\t")
        if number == 1:
            header = fields
            missing = [k for k in _SNLI_FIELDS if k not in header]
            if missing:
                raise DataFormatError(
                    path, 1, f"expected a header row naming {list(_SNLI_FIELDS)}, missing {missing}"
                )
            columns = [header.index(k) for k in _SNLI_FIELDS]
            continue
        if not line.strip():
            continue
        if len(fields) != len(header):
            raise DataFormatError(
                path,
                number,
                f"expected {len(header)} tab-separated fields (as the header), got {len(fields)}",
            )
        premise, hypothesis, label = (fields[i] for i in columns)
        row = _labelled(path, number, premise, hypothesis, label, lang)
        if row is not None:
            rows.append(row)
    return _non_empty(path, rows)


def read_simcse_csv(path: str | Path, lang: str = "en") -> list[NliRow]:
    """SimCSE's `nli_for_simcse.csv` (header sent0,sent1,hard_neg): each row gives an entailment and a
    contradiction row for sent0, in that order, so `nli_triplets` rebuilds exactly the file's triplets."""
    rows = []
    for number, record in read_csv_records(path, _SIMCSE_FIELDS):
        premise, positive, negative = (record[k] for k in _SIMCSE_FIELDS)
        if not premise.strip():
            raise DataFormatError(path, number, "expected a non-empty sent0")
        rows.append(NliRow(premise, positive, ENTAILMENT, lang))
        rows.append(NliRow(premise, negative, CONTRADICTION, lang))
    return _non_empty(path, rows)


def read_jsnli_tsv(path: str | Path, join_morphemes: bool = True) -> list[NliRow]:
    """JSNLI 1.1 `train_w_filtering.tsv` / `dev.tsv`: label<TAB>premise<TAB>hypothesis, no header.

    The released sentences are JUMAN++-segmented ("自転車 で 2 人 の 男性 が ..."); `join_morphemes`
    removes those spaces (keeping one between ASCII words) since encoders tokenize raw text themselves.
    """
    rows = []
    for number, line in iter_utf8_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise DataFormatError(
                path,
                number,
                f"expected 3 tab-separated fields (label, premise, hypothesis), got {len(fields)}",
            )
        label, premise, hypothesis = fields
        if join_morphemes:
            premise, hypothesis = join_segmented(premise), join_segmented(hypothesis)
        row = _labelled(path, number, premise, hypothesis, label, "ja")
        if row is not None:
            rows.append(row)
    return _non_empty(path, rows)


def read_xnli_tsv(path: str | Path, lang: str) -> list[NliRow]:
    """An XNLI file in SentEval's layout: premise<TAB>hypothesis<TAB>label, no header."""
    pairs = read_labelled_pairs(path, XNLI_LABELS)
    names = {i: name for name, i in XNLI_LABELS.items()}
    return [
        NliRow(p, h, names[int(y)], lang)
        for p, h, y in zip(pairs.first, pairs.second, pairs.labels, strict=True)
    ]


def read_xnli(lang: str, split: str = "dev", root: str | Path | None = None) -> list[NliRow]:
    """XNLI `{split}-{lang}.tsv` under `transfer/XNLI` of the data root (dev 2490 / test 5010 rows)."""
    if lang not in XNLI_LANGS:
        raise ValueError(f"XNLI has no language {lang!r}; languages: {', '.join(XNLI_LANGS)}")
    if split not in XNLI_SPLITS:
        raise ValueError(f"XNLI split must be one of {XNLI_SPLITS}, got {split!r}")
    return read_xnli_tsv(data_file("transfer", "XNLI", f"{split}-{lang}.tsv", root=root), lang)


def join_segmented(text: str) -> str:
    """Undo word segmentation: drop spaces unless both neighbours are ASCII letters or digits."""
    return _SEGMENT_SPACE.sub("", text.strip())


def read_csv_records(path: str | Path, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """(line, record) for a UTF-8 `.csv` or `.tsv` with a header row holding `required` columns."""
    path = Path(path)
    text = _decode(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise DataFormatError(
            path, 1, f"expected a header row naming {list(required)}, got an empty file"
        ) from None
    header = [h.strip() for h in header]
    missing = [k for k in required if k not in header]
    if missing:
        raise DataFormatError(path, 1, f"expected a header row naming {list(required)}, missing {missing}")
    records = []
    start = reader.line_num + 1
    for fields in reader:
        if not any(f.strip() for f in fields):
            start = reader.line_num + 1
            continue
        if len(fields) != len(header):
            raise DataFormatError(
                path, start, f"expected {len(header)} fields (as the header {header}), got {len(fields)}"
            )
        records.append((start, dict(zip(header, fields, strict=True))))
        start = reader.line_num + 1
    return records


def _decode(path: Path) -> str:
    if not path.is_file():
        raise MissingDataError(path, "expected a UTF-8 .csv/.tsv file with a header row")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataFormatError(path, line, f"expected UTF-8 text ({err.reason})") from None


def _labelled(path, number: int, premise: str, hypothesis: str, label: str, lang: str) -> NliRow | None:
    label = label.strip()
    if label == NO_CONSENSUS:
        return None
    if label not in NLI_LABELS:
        raise DataFormatError(path, number, f"expected a label in {list(NLI_LABELS)} or '-', got {label!r}")
    return NliRow(premise, hypothesis, label, lang)


def _non_empty(path, rows: list[NliRow]) -> list[NliRow]:
    if not rows:
        raise DataFormatError(path, None, "expected at least one labelled NLI pair, found none")
    return rows
