"""Labelled multilingual sentences (text, label, language) for semantic specialization (Emu) and kNN
evaluation: MARC's `product_category` (a label shared by all six languages) and user files in TSV or JSONL.

User files hold one sentence a row with its label and language code; an empty label marks an unlabelled
sentence (usable as adversarial data). An optional `id` groups translations of one sentence (Emu-Parallel).
TSV: a header naming the columns (`text`, `label`, `lang`[, `id`]) or exactly those three or four columns
in that order. JSONL: one object a line with string `text`, `lang` and `label` (null or "" = unlabelled)
and an optional `id`. A bad row stops with `file:line: expected ...`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sentkit.datasets.lines import iter_jsonl, iter_utf8_lines
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError, MissingDataError

# a review's title, its body, or both ("title_body": title, a newline, body): titles alone ("Five Stars")
# often carry no trace of the product category
MARC_TEXT_FIELDS = ("review_title", "review_body", "title_body")
USER_COLUMNS = ("text", "label", "lang")
USER_OPTIONAL = ("id",)


@dataclass
class LabelledSentences:
    """Parallel lists: text, label ("" = unlabelled), language code and an optional translation-group id."""

    texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # "" where the file gives none

    def __len__(self) -> int:
        return len(self.texts)

    def append(self, text: str, label: str, lang: str, id_: str = "") -> None:
        self.texts.append(text)
        self.labels.append(label)
        self.langs.append(lang)
        self.ids.append(id_)

    def where(self, keep) -> LabelledSentences:
        """The rows for which keep(text, label, lang, id) is true."""
        out = LabelledSentences()
        for row in zip(self.texts, self.labels, self.langs, self.ids):
            if keep(*row):
                out.append(*row)
        return out

    def extend(self, other: LabelledSentences) -> LabelledSentences:
        for row in zip(other.texts, other.labels, other.langs, other.ids):
            self.append(*row)
        return self


# ---- MARC product categories -------------------------------------------------------------------------
def read_marc_categories(path: str | Path, text_field: str = "review_title") -> LabelledSentences:
    """MARC JSON lines -> (review title or body, product_category, language); every row labelled."""
    if text_field not in MARC_TEXT_FIELDS:
        raise ValueError(f"MARC text field must be one of {MARC_TEXT_FIELDS}, got {text_field!r}")
    path = Path(path)
    out = LabelledSentences()
    fields = ("review_title", "review_body") if text_field == "title_body" else (text_field,)
    for number, record in iter_jsonl(path):
        parts = [record.get(f) for f in fields]
        category, lang = record.get("product_category"), record.get("language")
        if not all(isinstance(v, str) and v.strip() for v in (*parts, category, lang)):
            raise DataFormatError(
                path,
                number,
                f"expected non-empty string fields {', '.join(map(repr, fields))}, 'product_category', 'language'",
            )
        text = "\n".join(part.strip() for part in parts)
        out.append(text, category, lang, record.get("review_id", ""))
    if not len(out):
        raise DataFormatError(path, None, "expected at least one review, got an empty file")
    return out


def load_marc_categories(
    lang: str, split: str, root: str | Path | None = None, text_field: str = "review_title"
) -> LabelledSentences:
    """MARC `{split}.{lang}.json` (transfer/MARC) with the product category as the label."""
    return read_marc_categories(data_file("transfer", "MARC", f"{split}.{lang}.json", root=root), text_field)


# ---- user files ---------------------------------------------------------------------------------------
def read_labelled_sentences(path: str | Path) -> LabelledSentences:
    """A user's .tsv or .jsonl of (text, label, lang[, id]) rows; see the module docstring for the format."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a .tsv or .jsonl file of text, label, lang rows")
    if path.suffix.lower() in (".jsonl", ".json"):
        out = _read_jsonl(path)
    elif path.suffix.lower() in (".tsv", ".txt"):
        out = _read_tsv(path)
    else:
        raise DataFormatError(path, None, "expected a .tsv or .jsonl file (text, label, lang rows)")
    if not len(out):
        raise DataFormatError(path, None, "expected at least one row of text, label, lang")
    return out


def _read_tsv(path: Path) -> LabelledSentences:
    out = LabelledSentences()
    names: tuple[str, ...] | None = None
    for number, line in iter_utf8_lines(path):
        if not line.strip():
            continue  # blank lines carry nothing; a row is never split over lines
        fields = line.split("\t")
        if names is None:
            header = tuple(f.strip().lower() for f in fields)
            if set(USER_COLUMNS) <= set(header) and set(header) <= {*USER_COLUMNS, *USER_OPTIONAL}:
                names = header
                continue
            names = USER_COLUMNS if len(fields) == 3 else (*USER_COLUMNS, "id")
        if len(fields) != len(names) or len(names) not in (3, 4):
            raise DataFormatError(
                path,
                number,
                f"expected {len(names)} tab-separated fields ({', '.join(names)}), got {len(fields)}",
            )
        row = dict(zip(names, fields))
        _check_row(path, number, row)
        out.append(row["text"], row["label"].strip(), row["lang"].strip(), row.get("id", "").strip())
    return out


def _read_jsonl(path: Path) -> LabelledSentences:
    out = LabelledSentences()
    for number, record in iter_jsonl(path):
        label = record.get("label")
        if label is None:
            label = ""
        if isinstance(label, (int, float)) and not isinstance(label, bool):
            label = str(label)
        row = {
            "text": record.get("text"),
            "label": label,
            "lang": record.get("lang"),
            "id": record.get("id", ""),
        }
        if not isinstance(row["id"], (str, int)):
            raise DataFormatError(path, number, f"expected 'id' to be a string or integer, got {row['id']!r}")
        _check_row(path, number, row)
        out.append(row["text"], row["label"].strip(), row["lang"].strip(), str(row["id"]).strip())
    return out


def _check_row(path: Path, number: int, row: dict) -> None:
    if not isinstance(row["text"], str) or not row["text"].strip():
        raise DataFormatError(path, number, f"expected a non-empty text, got {json.dumps(row['text'])}")
    if not isinstance(row["label"], str):
        raise DataFormatError(
            path, number, f"expected a string label (empty = unlabelled), got {row['label']!r}"
        )
    lang = row["lang"]
    if not isinstance(lang, str) or not lang.strip() or any(c.isspace() for c in lang.strip()):
        raise DataFormatError(path, number, f"expected a language code such as 'en', got {json.dumps(lang)}")


__all__ = [
    "LabelledSentences",
    "load_marc_categories",
    "read_labelled_sentences",
    "read_marc_categories",
]
