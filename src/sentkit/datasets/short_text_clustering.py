"""The English short text clustering benchmarks EASE evaluates, in the files its repository ships.

Three formats: AgNews `label<TAB>text`; Biomedical, SearchSnippets, StackOverflow a text file plus a
line-aligned `{name}_label.txt`; Tweet JSON lines `{"text": ..., "cluster": int}`. Labels are integers.
"""

from __future__ import annotations

import json
from pathlib import Path

from sentkit.datasets.lines import read_aligned_lines, read_lines
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

FOLDER = ("clustering", "monolingual_benchmark")
SHORT_TEXT_SETS: tuple[str, ...] = ("agnews", "biomedical", "searchsnippets", "stackoverflow", "tweet")
_BOM = "\ufeff"


def _int_label(path: str | Path, number: int, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise DataFormatError(path, number, f"expected an integer label, got {value!r}") from None


def read_label_tab_text(path: str | Path) -> tuple[list[str], list[int]]:
    """AgNews format: `label<TAB>text` per line."""
    texts, labels = [], []
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.lstrip(_BOM).split("\t")
        if len(fields) != 2:
            raise DataFormatError(
                path, number, f"expected 2 tab-separated fields (label, text), got {len(fields)}"
            )
        labels.append(_int_label(path, number, fields[0]))
        texts.append(fields[1].strip())
    return texts, labels


def read_text_and_labels(text_path: str | Path, label_path: str | Path) -> tuple[list[str], list[int]]:
    """A text file plus a line-aligned file of integer labels (Biomedical, SearchSnippets, StackOverflow)."""
    texts, labels = read_aligned_lines(text_path, label_path)
    if texts:
        texts[0] = texts[0].lstrip(_BOM)  # searchsnippets.txt starts with a byte-order mark
    return [t.strip() for t in texts], [_int_label(label_path, n, v) for n, v in enumerate(labels, start=1)]


def read_text_cluster_jsonl(path: str | Path) -> tuple[list[str], list[int]]:
    """Tweet format: one JSON object per line with a string `text` and an integer `cluster`."""
    texts, labels = [], []
    for number, line in enumerate(read_lines(path), start=1):
        try:
            row = json.loads(line.lstrip(_BOM))
        except json.JSONDecodeError as err:
            raise DataFormatError(path, number, f"expected a JSON object ({err.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise DataFormatError(path, number, 'expected a JSON object with a string "text"')
        cluster = row.get("cluster")
        if not isinstance(cluster, int) or isinstance(cluster, bool):
            raise DataFormatError(path, number, f'expected an integer "cluster", got {cluster!r}')
        texts.append(row["text"].strip())
        labels.append(cluster)
    return texts, labels


def load_short_text(name: str, root: str | Path | None = None) -> tuple[list[str], list[int]]:
    """One of SHORT_TEXT_SETS from the data root: (texts, integer labels)."""
    if name == "agnews":
        return read_label_tab_text(data_file(*FOLDER, "agnews.txt", root=root))
    if name == "tweet":
        return read_text_cluster_jsonl(data_file(*FOLDER, "tweet.txt", root=root))
    if name in SHORT_TEXT_SETS:
        return read_text_and_labels(
            data_file(*FOLDER, f"{name}.txt", root=root), data_file(*FOLDER, f"{name}_label.txt", root=root)
        )
    raise ValueError(f"unknown short text clustering set {name!r}; available: {', '.join(SHORT_TEXT_SETS)}")
