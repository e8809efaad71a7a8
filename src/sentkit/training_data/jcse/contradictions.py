"""JCSE stage-one data: (anchor, positive = anchor, negative = generated contradiction) rows (JCSE sec. 3.3).

The positive is the anchor text itself, so `simcse-sup` encodes it under a second dropout mask (the
unsupervised-SimCSE positive) while the contradiction is the anchor's hard negative (JCSE eq. 5).
A generator is any object with `name` and `generate(masked, k, seed) -> list[list[str]]`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

from datasets import Dataset
from sentkit.atomic import atomic_write_bytes
from sentkit.datasets.columns import ANCHOR, GROUP, NEGATIVE, POSITIVE
from sentkit.datasets.lines import iter_jsonl
from sentkit.errors import DataFormatError
from sentkit.training_data.jcse.chunk_masking import mask_noun_chunks
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence

K_CONTRADICTIONS = 4  # JCSE: the base models train on the top-4 generated contradictions per sentence


class ContradictionGenerator(Protocol):
    name: str

    def generate(self, masked: Sequence, k: int = K_CONTRADICTIONS, seed: int = 0) -> list[list[str]]: ...


def contradiction_rows(
    corpus: Sequence[ParsedSentence],
    generator: ContradictionGenerator,
    k: int = K_CONTRADICTIONS,
    seed: int = 0,
    max_chunks: int | None = None,
) -> Dataset:
    """One row per (anchor, contradiction): anchor, positive (= anchor), negative, and `group` numbering the
    anchor sentence, so its k rows are not each other's in-batch negatives (sentkit.objectives.negatives;
    JCSE's code contrasts them, which with a large corpus rarely happens in one batch). Sentences without
    noun chunks, or for which the generator found nothing, give no row."""
    masked = [m for m in (mask_noun_chunks(s, max_chunks) for s in corpus) if m is not None]
    generated = generator.generate(masked, k=k, seed=seed)
    columns: dict[str, list] = {ANCHOR: [], POSITIVE: [], NEGATIVE: [], GROUP: []}
    for group, (sentence, negatives) in enumerate(zip(masked, generated, strict=True)):
        for negative in negatives:
            columns[ANCHOR].append(sentence.anchor)
            columns[POSITIVE].append(sentence.anchor)
            columns[NEGATIVE].append(negative)
            columns[GROUP].append(group)
    if not columns[ANCHOR]:
        raise ValueError(
            f"generator {generator.name!r} produced no contradiction for {len(masked)} sentences"
        )
    return Dataset.from_dict(columns)


def write_rows(dataset: Dataset, path: str | Path) -> Path:
    """Write rows as .jsonl (one object a line) or .csv (header anchor,positive,negative[,group]), atomically;
    both read back through `sentkit.training_data.specs.load_training_data`."""
    path = Path(path)
    names = list(dataset.column_names)
    rows = dataset.to_dict()
    if path.suffix.lower() == ".jsonl":
        lines = (json.dumps({n: rows[n][i] for n in names}, ensure_ascii=False) for i in range(len(dataset)))
        data = "".join(line + "\n" for line in lines)
    elif path.suffix.lower() == ".csv":
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer)
        writer.writerow(names)
        writer.writerows(zip(*(rows[n] for n in names), strict=True))
        data = buffer.getvalue()
    else:
        raise ValueError(f"{path}: expected a .jsonl or .csv output file")
    atomic_write_bytes(path, data.encode("utf-8"))
    return path


def save_parsed(corpus: Sequence[ParsedSentence], path: str | Path) -> Path:
    """Cache a parsed corpus as JSON lines (parsing is the slow step: ~20-50 ms a sentence with GiNZA)."""
    lines = (json.dumps(asdict(s), ensure_ascii=False) + "\n" for s in corpus)
    atomic_write_bytes(path, "".join(lines).encode("utf-8"))
    return Path(path)


def load_parsed(path: str | Path) -> list[ParsedSentence]:
    """Read a corpus written by `save_parsed`."""
    out = []
    for number, obj in iter_jsonl(path):
        try:
            chunks = tuple(NounChunk(**c) for c in obj["chunks"])
            out.append(ParsedSentence(obj["text"], int(obj["n_tokens"]), chunks))
        except (KeyError, TypeError) as err:
            raise DataFormatError(
                path,
                number,
                f"expected a parsed sentence (text, n_tokens, chunks[start,end,text,kind]): {err}",
            ) from None
    return out
