"""The two sides of `sentkit mine`: a corpus read (then encoded in memory) or a shard folder, each without
the rows that are not mined.

Blank rows (empty or whitespace only) are not sentences: they are never paired. Rows whose vector is all zeros
(what `avg:` models give a text with no known word) are left out too: their cosine with everything is 0, so
their ratio margins would be 0/0. Row ids still count every row of a file, as `sentkit encode` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sentkit.corpus.readers import InputFile, input_files, iter_rows
from sentkit.errors import InvalidArgument
from sentkit.mining.row_subset import RowSubset, zero_rows
from sentkit.mining.vectors import ArrayVectors, ShardVectors


@dataclass
class TextSide:
    """A corpus read but not encoded: the rows that will be mined, with their ids."""

    path: str
    ids: list[str]
    texts: list[str]
    rows: int  # every row of the input, blank ones included
    blank: int


def read_text_side(path: str, input_format: str = "auto", text_field: str = "text") -> TextSide:
    """Every non-blank row of the corpus file or folder `path`, with `file:row` ids."""
    ids, texts, rows = [], [], 0
    for source in input_files(path, input_format):
        for number, text in iter_rows(source, text_field):
            rows += 1
            if text.strip():
                ids.append(source.row_id(number))
                texts.append(text)
    side = TextSide(path, ids, texts, rows, rows - len(texts))
    check_rows(path, side.rows, side.blank, 0)
    return side


def encode_text_side(side: TextSide, encoder, batch_size: int, model: dict) -> tuple[ArrayVectors, int]:
    """(the side's vectors without zero rows, how many zero rows were left out)."""
    from sentkit.encoders.protocol import checked_encode

    vectors = checked_encode(encoder, side.texts, batch_size=batch_size)  # NonFiniteVectors: nothing mined
    vectors = vectors.reshape(len(side.texts), -1)  # (n, dim)
    keep = np.flatnonzero(vectors.any(axis=1))
    zero = len(side.texts) - len(keep)
    check_rows(side.path, side.rows, side.blank, zero)
    if zero:
        vectors = vectors[keep]
        ids, texts = [side.ids[i] for i in keep], [side.texts[i] for i in keep]
        return ArrayVectors(vectors, ids, texts, model), zero
    return ArrayVectors(vectors, side.ids, side.texts, model), 0


def without_unmined_rows(folder: str, vectors: ShardVectors) -> tuple[ShardVectors | RowSubset, int, int]:
    """(the folder's rows to mine, its blank rows, its other zero-vector rows): one pass over the texts of
    its inputs and one over its shards."""
    blank = blank_shard_rows(vectors)
    zero = np.setdiff1d(zero_rows(vectors), blank)
    check_rows(folder, vectors.n, len(blank), len(zero))
    if not len(blank) and not len(zero):
        return vectors, 0, 0
    kept = np.setdiff1d(np.arange(vectors.n), np.concatenate([blank, zero]))
    return RowSubset(vectors, kept), len(blank), len(zero)


def blank_shard_rows(vectors: ShardVectors) -> np.ndarray:
    """Positions (sorted) of the shard folder's rows whose text is blank, read from the inputs it names."""
    blank_by_input: dict[int, np.ndarray] = {}
    for index, entry in enumerate(vectors.manifest.data["inputs"]):
        source = InputFile(entry["resolved"], entry["format"])
        numbers = [number for number, text in iter_rows(source, vectors.text_field) if not text.strip()]
        blank_by_input[index] = np.array(numbers, dtype=np.int64)
    found = []
    for offset, shard in zip(vectors.offsets, vectors.shards):
        numbers = blank_by_input[shard["input"]]  # 1-based rows of that input
        first = shard["first_row"]
        inside = numbers[(numbers >= first) & (numbers < first + shard["rows"])]
        found.append(int(offset) + inside - first)
    return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def check_rows(path: str, rows: int, blank: int, zero: int) -> None:
    """Refuse a side left with nothing to mine (one line naming it and why)."""
    if rows - blank - zero > 0:
        return
    if not rows:
        raise InvalidArgument(f"{path}: no rows to mine")
    why = [f"{blank} blank"] if blank else []
    why += [f"{zero} with a zero vector (no known word)"] if zero else []
    raise InvalidArgument(f"{path}: no rows to mine ({rows} rows: {', '.join(why)})")
