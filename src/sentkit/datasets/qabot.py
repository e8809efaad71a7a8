"""QAbot (JCSE, Chen et al. 2023): Japanese course Q&A retrieval, 20 queries over a pool of 1142 pairs.

Each folder `N/` holds `question.txt` (the query) and `data.csv` (UTF-8 with BOM; header
question,answer,label; quoted multi-line fields). 11 queries see 1141 candidates and 9 the full 1142.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError, MissingDataError

QABOT_HEADER = ["question", "answer", "label"]


@dataclass
class QAbotQuery:
    """One query and its labelled candidates (labels[i] = 1 when question i answers the query)."""

    query_id: str
    query: str
    questions: list[str]
    answers: list[str]
    labels: np.ndarray  # (n_candidates,) int64


def read_qabot_query(folder: str | Path) -> QAbotQuery:
    """Read `question.txt` + `data.csv` of one query folder; bad rows raise DataFormatError(file:line)."""
    folder = Path(folder)
    question_path, csv_path = folder / "question.txt", folder / "data.csv"
    for path in (question_path, csv_path):
        if not path.is_file():
            raise MissingDataError(path)
    try:
        query = question_path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError as err:
        raise DataFormatError(question_path, None, f"expected UTF-8 text ({err.reason})") from None
    if not query:
        raise DataFormatError(question_path, 1, "expected the query text, got an empty file")
    questions, answers, labels = [], [], []
    with csv_path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            if header != QABOT_HEADER:
                raise DataFormatError(csv_path, 1, f"expected header {','.join(QABOT_HEADER)}, got {header}")
            for row in reader:
                # reader.line_num is the physical line where this (possibly multi-line) record ends
                if len(row) != 3:
                    raise DataFormatError(csv_path, reader.line_num, f"expected 3 CSV fields, got {len(row)}")
                if row[2] not in {"0", "1"}:
                    raise DataFormatError(csv_path, reader.line_num, f"expected label 0 or 1, got {row[2]!r}")
                questions.append(row[0])
                answers.append(row[1])
                labels.append(int(row[2]))
        except UnicodeDecodeError as err:
            raise DataFormatError(csv_path, None, f"expected UTF-8 text ({err.reason})") from None
        except csv.Error as err:
            raise DataFormatError(csv_path, reader.line_num, f"expected valid CSV ({err})") from None
    if not labels:
        raise DataFormatError(csv_path, None, "expected at least one candidate row")
    return QAbotQuery(folder.name, query, questions, answers, np.asarray(labels, dtype=np.int64))


def load_qabot(root: str | Path | None = None) -> list[QAbotQuery]:
    """All query folders under `retrieval/qabot`, in numeric order (1..20)."""
    base = data_file("retrieval", "qabot", root=root)
    folders = sorted(
        (p for p in base.iterdir() if p.is_dir()),
        key=lambda p: (0, int(p.name), "") if p.name.isdigit() else (1, 0, p.name),
    )
    if not folders:
        raise MissingDataError(base / "1" / "question.txt", "expected one folder per query under qabot/")
    return [read_qabot_query(folder) for folder in folders]
