"""Readers for a user's own evaluation files: tab-separated tables (header row or fixed columns) and
line-aligned plain text, each recorded with its sha256 and row count for the results file.

Tables are UTF-8, one row a line, fields split on tabs with no quoting (quotes are literal text, as in
STS-B). A first line whose fields are exactly known column names is a header and may order the columns
freely; otherwise the columns are positional in the documented order. Trailing blank lines are ignored;
any other blank line, empty text field or wrong field count stops with `file:line: expected ...`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sentkit.cache import sha256_file
from sentkit.datasets.labelled import LabelledTexts
from sentkit.datasets.lines import read_lines
from sentkit.datasets.sts_pairs import STSPairs, parse_score
from sentkit.datasets.tatoeba import read_tatoeba_pair
from sentkit.datasets.xnli import LabelledPairs
from sentkit.errors import DataFormatError, MissingDataError

TEXT_FIELDS = ("text", "sentence1", "sentence2")  # columns that must not be empty
STS_COLUMNS = ("sentence1", "sentence2", "score", "lang")
LABELLED_COLUMNS = ("text", "label", "lang")
PAIR_LABELLED_COLUMNS = ("sentence1", "sentence2", "label", "lang")
ID_TEXT_COLUMNS = ("id", "text")
QRELS_COLUMNS = ("query_id", "doc_id", "relevance")


@dataclass(frozen=True)
class FileRecord:
    """Provenance of one input file: the path as given and resolved, its sha256 and the data rows read."""

    path: str
    sha256: str
    rows: int

    @classmethod
    def of(cls, path: str | Path, rows: int) -> FileRecord:
        return cls(str(path), sha256_file(path), rows)

    def as_dict(self) -> dict:
        # the path as typed says what the user asked for; the absolute one finds the file again later
        return {
            "path": self.path,
            "absolute_path": str(Path(self.path).resolve()),
            "sha256": self.sha256,
            "rows": self.rows,
        }


@dataclass
class Table:
    """Named columns of a tab-separated file; `lines[i]` is the 1-based line number of row i."""

    path: Path
    columns: dict[str, list[str]]
    lines: list[int]

    def __len__(self) -> int:
        return len(self.lines)

    def record(self) -> FileRecord:
        return FileRecord.of(self.path, len(self))


def read_table(
    path: str | Path,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    positional: tuple[tuple[str, ...], ...] | None = None,
) -> Table:
    """Read a headed or headerless TSV into named columns.

    Without a header, a row's field count picks its layout from `positional` (default: the required
    columns, then the required plus each optional one in turn); every row must have the same count.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a tab-separated file")
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise DataFormatError(path, None, f"expected a header or rows of {', '.join(required)}, got no rows")
    known = (*required, *optional)
    first = [f.strip().lower() for f in lines[0].split("\t")]
    if set(first) <= set(known) and set(required) <= set(first) and len(set(first)) == len(first):
        names, start = tuple(first), 2
    else:
        layouts = positional or tuple(required + optional[:i] for i in range(len(optional) + 1))
        by_count = {len(layout): layout for layout in layouts}
        count = len(lines[0].split("\t"))
        if count not in by_count:
            raise DataFormatError(
                path,
                1,
                f"expected {_layouts_text(layouts)} (tab-separated, or a header row), got {count} fields",
            )
        names, start = by_count[count], 1
    columns: dict[str, list[str]] = {name: [] for name in names}
    numbers: list[int] = []
    for number, line in enumerate(lines[start - 1 :], start=start):
        fields = line.split("\t")
        if not line.strip() or len(fields) != len(names):
            got = "a blank line" if not line.strip() else f"{len(fields)} fields"
            raise DataFormatError(
                path, number, f"expected {len(names)} tab-separated fields ({', '.join(names)}), got {got}"
            )
        for name, value in zip(names, fields):
            if name in TEXT_FIELDS and not value.strip():
                raise DataFormatError(path, number, f"expected a non-empty {name}, got an empty field")
            if name not in TEXT_FIELDS:
                value = value.strip()
                if not value:
                    raise DataFormatError(
                        path, number, f"expected a value in column {name}, got an empty field"
                    )
            columns[name].append(value)
        numbers.append(number)
    if not numbers:
        raise DataFormatError(path, None, "expected at least one row after the header, got none")
    return Table(path, columns, numbers)


def _layouts_text(layouts) -> str:
    return " or ".join(f"{len(layout)} fields ({', '.join(layout)})" for layout in layouts)


def labels_array(values: list[str]) -> np.ndarray:
    """Labels exactly as written: `1`, `01` and `١` are three labels (integer parsing would merge them)."""
    return np.asarray(values, dtype=str)


def by_language(table: Table) -> dict[str, list[int]]:
    """Row indices per `lang` value in order of first appearance; one group `all` without a lang column."""
    if "lang" not in table.columns:
        return {"all": list(range(len(table)))}
    groups: dict[str, list[int]] = {}
    for i, lang in enumerate(table.columns["lang"]):
        groups.setdefault(lang, []).append(i)
    return groups


# ---- one reader per task family ---------------------------------------------------------------------------
def read_sts_file(path: str | Path) -> tuple[dict[str, STSPairs], FileRecord]:
    """`sentence1 <TAB> sentence2 <TAB> score [<TAB> lang]`: pairs per lang (or `all`), gold any scale."""
    table = read_table(path, STS_COLUMNS[:3], STS_COLUMNS[3:])
    gold = np.asarray(
        [parse_score(v, table.path, n) for v, n in zip(table.columns["score"], table.lines)], dtype=np.float64
    )
    sets = {}
    for lang, rows in by_language(table).items():
        sets[lang] = STSPairs(
            [table.columns["sentence1"][i] for i in rows],
            [table.columns["sentence2"][i] for i in rows],
            gold[rows],
            lang,
            table.path.name,
        )
    return sets, table.record()


def read_labelled_file(path: str | Path) -> tuple[dict[str, LabelledTexts], FileRecord]:
    """`text <TAB> label [<TAB> lang]` (clustering, kNN): labelled texts per lang (or `all`)."""
    table = read_table(path, LABELLED_COLUMNS[:2], LABELLED_COLUMNS[2:])
    labels = labels_array(table.columns["label"])
    groups = {
        lang: LabelledTexts([table.columns["text"][i] for i in rows], labels[rows])
        for lang, rows in by_language(table).items()
    }
    return groups, table.record()


def read_classification_file(
    path: str | Path, split_by_lang: bool = True
) -> tuple[dict[str, LabelledTexts | LabelledPairs], FileRecord]:
    """`text <TAB> label` or `sentence1 <TAB> sentence2 <TAB> label` (XNLI layout), each with an optional
    `lang` column when the file has a header; a headerless 3-field row is a labelled pair.

    Groups per lang (or one group `all`); `split_by_lang=False` keeps every row in `all`, in file order.
    """
    path = Path(path)
    first = read_lines(path)[:1] if path.is_file() else []
    header = [f.strip().lower() for f in first[0].split("\t")] if first else []
    pairs = "sentence1" in header or (not set(header) & set(LABELLED_COLUMNS) and len(header) == 3)
    columns = PAIR_LABELLED_COLUMNS if pairs else LABELLED_COLUMNS
    table = read_table(path, columns[:-1], columns[-1:], positional=(columns[:-1],))
    labels = labels_array(table.columns["label"])
    groups = by_language(table) if split_by_lang else {"all": list(range(len(table)))}
    if pairs:
        first_col, second_col = table.columns["sentence1"], table.columns["sentence2"]
        out: dict = {
            lang: LabelledPairs([first_col[i] for i in rows], [second_col[i] for i in rows], labels[rows])
            for lang, rows in groups.items()
        }
    else:
        out = {
            lang: LabelledTexts([table.columns["text"][i] for i in rows], labels[rows])
            for lang, rows in groups.items()
        }
    return out, table.record()


def read_bitext_files(src: str | Path, tgt: str | Path) -> tuple[list[str], list[str], list[FileRecord]]:
    """Two line-aligned plain-text files, one sentence a line (Tatoeba's layout), at least 2 lines each."""
    a, b = read_tatoeba_pair(src, tgt)
    if len(a) < 2:
        raise DataFormatError(
            src, None, f"expected at least 2 lines (nearest-neighbour retrieval among them), got {len(a)}"
        )
    return a, b, [FileRecord.of(p, len(a)) for p in (src, tgt)]


def repeated_lines(lines: list[str]) -> tuple[int, tuple[int, int] | None]:
    """(how many lines repeat an earlier line, (earlier, later) 1-based line numbers of the first repeat)."""
    first_seen: dict[str, int] = {}
    count, first = 0, None
    for number, line in enumerate(lines, start=1):
        if line in first_seen:
            count += 1
            first = first or (first_seen[line], number)
        else:
            first_seen[line] = number
    return count, first


@dataclass
class RetrievalFiles:
    """Queries and corpus (ids in file order) with graded relevance judgements per query."""

    query_ids: list[str]
    queries: list[str]
    doc_ids: list[str]
    docs: list[str]
    qrels: dict[str, dict[str, int]]
    records: list[FileRecord]


def _id_text(path: str | Path, what: str) -> tuple[list[str], list[str], Table]:
    table = read_table(path, ID_TEXT_COLUMNS)
    seen: dict[str, int] = {}
    for ident, number in zip(table.columns["id"], table.lines):
        if ident in seen:
            raise DataFormatError(
                table.path, number, f"expected a unique {what} id, {ident!r} is also on line {seen[ident]}"
            )
        seen[ident] = number
    return table.columns["id"], table.columns["text"], table


def read_retrieval_files(queries: str | Path, corpus: str | Path, qrels: str | Path) -> RetrievalFiles:
    """`id <TAB> text` queries and corpus; `query_id <TAB> doc_id [<TAB> relevance]` judgements (BEIR/TREC
    style, relevance default 1; > 0 is relevant, 0 an explicit non-relevant judgement). A (query, document)
    judged twice must have the same relevance both times."""
    qids, qtexts, qtable = _id_text(queries, "query")
    dids, dtexts, dtable = _id_text(corpus, "document")
    table = read_table(qrels, QRELS_COLUMNS[:2], QRELS_COLUMNS[2:])
    known_q, known_d = set(qids), set(dids)
    judged: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    relevance = table.columns.get("relevance", ["1"] * len(table))
    for qid, did, rel, number in zip(
        table.columns["query_id"], table.columns["doc_id"], relevance, table.lines
    ):
        if qid not in known_q:
            raise DataFormatError(
                table.path, number, f"expected a query id from {Path(queries).name}, got {qid!r}"
            )
        if did not in known_d:
            raise DataFormatError(
                table.path, number, f"expected a document id from {Path(corpus).name}, got {did!r}"
            )
        try:
            value = int(rel)
        except ValueError:
            raise DataFormatError(table.path, number, f"expected an integer relevance, got {rel!r}") from None
        earlier = first_line.get((qid, did))
        if earlier is not None and judged[qid][did] != value:
            raise DataFormatError(
                table.path,
                number,
                f"expected one relevance per (query, document): ({qid!r}, {did!r}) has relevance "
                f"{judged[qid][did]} on line {earlier} and {value} here",
            )
        first_line.setdefault((qid, did), number)  # an identical repeat changes nothing
        judged.setdefault(qid, {})[did] = value
    return RetrievalFiles(
        qids, qtexts, dids, dtexts, judged, [qtable.record(), dtable.record(), table.record()]
    )
