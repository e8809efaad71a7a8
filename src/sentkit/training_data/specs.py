"""Training-data specs -> a `Dataset`: the one place that knows every named training set and file form.

A spec names built-in data (`xnli[:LANGS]`, `jsick[:SPLITS]`, a corpus name) or a path. Builders live
beside this module: NLI triplets in `triplets`, JCSE's stage-two data in `jcse.stage2`, EASE's built
folders in `ease.entity_pairs`; this dispatcher imports them, never the other way round.

Every builder returns a `datasets.Dataset` with the text columns of `sentkit.datasets.columns`:
anchor only (unsupervised SimCSE, dropout positives), anchor+positive (pairs) or
anchor+positive+negative (triplets), plus `lang` where it is known.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from datasets import Dataset
from sentkit.datasets.columns import ANCHOR, GROUP, LANG, NEGATIVE, POSITIVE
from sentkit.datasets.corpus import CORPORA, read_corpus
from sentkit.datasets.lines import iter_jsonl, iter_utf8_lines
from sentkit.datasets.nli import (
    NLI_LABELS,
    read_csv_records,
    read_jsnli_tsv,
    read_snli_jsonl,
    read_snli_txt,
    read_xnli_tsv,
)
from sentkit.datasets.root import data_file
from sentkit.errors import ConfigError, DataFormatError, MissingDataError
from sentkit.training_data.jcse.stage2 import stage2_triplets
from sentkit.training_data.triplets import nli_triplets, xnli_triplets

# Column names a triplet table may use: SimCSE's csv names or ours.
_TABLE_NAMES = {
    "sent0": ANCHOR,
    "sent1": POSITIVE,
    "hard_neg": NEGATIVE,
    ANCHOR: ANCHOR,
    POSITIVE: POSITIVE,
    NEGATIVE: NEGATIVE,
}
_XNLI_SPEC = re.compile(r"xnli(?:-(?P<split>dev|test))?(?::(?P<langs>.+))?")
_SPEC_FORMS = (
    "xnli[:LANGS] (XNLI dev triplets, LANGS comma-separated), xnli-dev[:LANGS], xnli-test[:LANGS], "
    "jsick[:SPLITS] (JSICK NLI triplets, JCSE stage 2), "
    f"a corpus name ({', '.join(CORPORA)}), or an existing path: a .txt corpus (one text a line), "
    "a folder of .txt files, a folder built by `sentkit build ease`, an SNLI/MNLI .txt or .jsonl, a .csv/.tsv with header sent0,sent1[,hard_neg] "
    "or anchor[,positive[,negative]], a JSNLI/XNLI .tsv, or a .jsonl with anchor[/positive/negative] keys"
)


def load_training_data(
    spec: str | Path,
    max_rows: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    dedupe: bool = True,
    data_root: str | Path | None = None,
) -> Dataset:
    """Resolve a data spec (see `_SPEC_FORMS`) into a training `Dataset`; optionally shuffle (seeded) and cap.

    Corpora (.txt, folders, corpus names) give an anchor column only: blank lines dropped and, when
    `dedupe`, repeated texts kept once (a duplicate in a batch would be its own false negative).
    With `shuffle`, `max_rows` keeps a seeded random sample; without it, the first rows.
    """
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows must be a positive number of rows, got {max_rows}")
    text = str(spec).strip()
    match = _XNLI_SPEC.fullmatch(text)
    if match:
        dataset = xnli_triplets(match["langs"], (match["split"] or "dev",), data_root=data_root)
    elif text == "jsick" or text.startswith("jsick:"):
        dataset = stage2_triplets(text, data_root=data_root)
    elif text in CORPORA:
        folder = data_file(*CORPORA[text], root=data_root)
        dataset = Dataset.from_dict({ANCHOR: read_corpus(folder, dedupe=dedupe)})
    else:
        dataset = _from_path(Path(text).expanduser(), text, dedupe)
    if not shuffle and (max_rows is None or max_rows >= len(dataset)):
        return dataset
    order = np.random.default_rng(seed).permutation(len(dataset)) if shuffle else np.arange(len(dataset))
    # rebuilt from columns rather than Dataset.shuffle, whose index mapping slows every later read
    columns = dataset.to_dict()
    keep = order[:max_rows]
    return Dataset.from_dict({name: [values[i] for i in keep] for name, values in columns.items()})


def _from_path(path: Path, spec: str, dedupe: bool) -> Dataset:
    if not path.exists():
        if path.suffix or "/" in spec or "\\" in spec:
            raise MissingDataError(path, f"training data spec {spec!r} names no existing file or folder")
        raise ConfigError(f"data: unknown training data spec {spec!r}; expected {_SPEC_FORMS}")
    if path.is_dir():
        from sentkit.training_data.ease.entity_pairs import is_entity_pairs_folder, read_entity_pairs

        if is_entity_pairs_folder(path):  # written by `sentkit build ease`
            return read_entity_pairs(path)
        return Dataset.from_dict({ANCHOR: read_corpus(path, dedupe=dedupe)})
    suffix = path.suffix.lower()
    if suffix == ".txt":
        if _first_line(path).startswith("gold_label\t"):
            return nli_triplets(read_snli_txt(path))
        return Dataset.from_dict({ANCHOR: read_corpus(path, dedupe=dedupe)})
    if suffix == ".jsonl":
        return _from_jsonl(path)
    if suffix in (".csv", ".tsv"):
        return _from_table(path)
    raise ConfigError(f"data: {path}: unknown training data file type {suffix!r}; expected {_SPEC_FORMS}")


def _from_table(path: Path) -> Dataset:
    header = _first_line(path).split("\t" if path.suffix.lower() == ".tsv" else ",")
    header = [h.strip().strip('"') for h in header]
    if "sent0" in header or ANCHOR in header:
        scheme = ("sent0", "sent1", "hard_neg") if "sent0" in header else (ANCHOR, POSITIVE, NEGATIVE)
        names = [n for n in scheme if n in header]
        if scheme[2] in names and scheme[1] not in names:
            raise DataFormatError(path, 1, f"expected a {scheme[1]!r} column beside {scheme[2]!r}")
        extra = tuple(c for c in (LANG, GROUP) if c in header)
        records = read_csv_records(path, tuple(names) + extra)
        columns = {_TABLE_NAMES[n]: [rec[n] for _, rec in records] for n in names}
        if LANG in header:
            columns[LANG] = [rec[LANG] for _, rec in records]
        numbers = [number for number, _ in records]
        if GROUP in header:
            columns[GROUP] = _group_ids(path, numbers, [rec[GROUP] for _, rec in records])
        return _checked_columns(path, columns, numbers)
    if path.suffix.lower() == ".tsv" and len(header) == 3:
        if header[0] in NLI_LABELS or header[0] == "-":
            return nli_triplets(read_jsnli_tsv(path))
        if header[2] in NLI_LABELS:
            lang = re.fullmatch(r"(?:dev|test)-([a-z]{2,3})\.tsv", path.name)
            return nli_triplets(read_xnli_tsv(path, lang[1] if lang else "und"))
    raise DataFormatError(
        path,
        1,
        "expected a header row sent0,sent1[,hard_neg] or anchor[,positive[,negative]] "
        "(or a JSNLI/XNLI label-premise-hypothesis .tsv)",
    )


def _from_jsonl(path: Path) -> Dataset:
    numbers: list[int] = []
    objects: list[dict] = []
    for number, obj in iter_jsonl(path):
        if not objects and "sentence1" in obj and "gold_label" in obj:
            return nli_triplets(read_snli_jsonl(path))
        numbers.append(number)
        objects.append(obj)
    if not objects:
        raise DataFormatError(
            path, None, "expected JSON lines with anchor[/positive/negative] keys, got none"
        )
    names = [n for n in (ANCHOR, POSITIVE, NEGATIVE, LANG) if n in objects[0]]
    groups = _group_ids(path, numbers, [obj.get(GROUP) for obj in objects]) if GROUP in objects[0] else None
    if ANCHOR not in names:
        raise DataFormatError(
            path, numbers[0], "expected SNLI/MNLI keys (sentence1, sentence2, gold_label) or an 'anchor' key"
        )
    columns: dict[str, list[str]] = {n: [] for n in names}
    for number, obj in zip(numbers, objects, strict=True):
        for n in names:
            value = obj.get(n)
            if not isinstance(value, str):
                raise DataFormatError(
                    path, number, f"expected a string {n!r} as on line {numbers[0]}, got {value!r}"
                )
            columns[n].append(value)
    if groups is not None:
        columns[GROUP] = groups
    return _checked_columns(path, columns, numbers)


def _group_ids(path: Path, numbers: list[int], values: list) -> list[int]:
    """The optional `group` column as integers (rows of one group are not each other's in-batch negatives;
    a negative id = in no group); a value that is not an integer is refused with its line."""
    ids = []
    for number, value in zip(numbers, values, strict=True):
        if isinstance(value, int) and not isinstance(value, bool):
            ids.append(value)
        elif isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
            ids.append(int(value))
        else:
            raise DataFormatError(
                path, number, f"expected an integer {GROUP!r} (a negative one = no group), got {value!r}"
            )
    return ids


def _checked_columns(path: Path, columns: dict[str, list], numbers: list[int]) -> Dataset:
    """A Dataset from text columns; every text must be non-empty (an empty anchor trains on nothing)."""
    if not numbers:
        raise DataFormatError(path, None, "expected at least one data row after the header, got none")
    for name in (n for n in (ANCHOR, POSITIVE, NEGATIVE) if n in columns):
        for number, value in zip(numbers, columns[name], strict=True):
            if not value.strip():
                raise DataFormatError(path, number, f"expected a non-empty {name!r} text")
    return Dataset.from_dict(columns)


def _first_line(path: Path) -> str:
    for _, line in iter_utf8_lines(path):
        return line
    raise DataFormatError(path, None, "expected at least one line, got an empty file")
