"""Training data for contrastive objectives: NLI triplets (supervised SimCSE) and data specs -> `Dataset`.

Every builder returns a `datasets.Dataset` with the text columns of `sentkit.datasets.columns`:
anchor only (unsupervised SimCSE, dropout positives), anchor+positive (pairs) or
anchor+positive+negative (triplets), plus `lang` where it is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from datasets import Dataset
from sentkit.datasets.columns import ANCHOR, LANG, NEGATIVE, POSITIVE
from sentkit.datasets.corpus import read_corpus
from sentkit.datasets.lines import iter_jsonl, iter_utf8_lines
from sentkit.datasets.nli import (
    CONTRADICTION,
    ENTAILMENT,
    NLI_LABELS,
    NliRow,
    read_csv_records,
    read_jsnli_tsv,
    read_snli_jsonl,
    read_snli_txt,
    read_xnli,
    read_xnli_tsv,
)
from sentkit.datasets.root import data_file
from sentkit.datasets.xnli import XNLI_LANGS, XNLI_SPLITS
from sentkit.errors import ConfigError, DataFormatError, MissingDataError

# Raw domain corpora shipped in the benchmark data (JCSE's stage-one text), by short name.
CORPORA: dict[str, tuple[str, ...]] = {
    "ja-clinic": ("corpora", "ja-clinic"),
    "ja-qabot": ("corpora", "ja-qabot"),
}
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


def nli_triplets(rows: Iterable[NliRow]) -> Dataset:
    """(premise, entailment, contradiction) triplets, SimCSE's supervised data (Gao et al. 2021, sec. 4).

    Hypotheses are grouped by (lang, premise text). Every entailment hypothesis of a premise that has at
    least one contradiction becomes one triplet; the k-th entailment (file order) takes the
    (k mod m)-th of the premise's m contradictions, so a premise with 2 entailments and 1 contradiction
    gives 2 triplets sharing the negative. Neutral pairs and premises without both labels are dropped
    (SimCSE: 314k entailment pairs -> 275,601 with a hard negative, princeton-nlp/SimCSE#238).
    Triplets come out grouped by premise in order of first appearance.
    """
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for row in rows:
        if row.label not in NLI_LABELS:
            raise ValueError(f"NLI label must be one of {NLI_LABELS}, got {row.label!r}")
        group = groups.setdefault((row.lang, row.premise), {ENTAILMENT: [], CONTRADICTION: []})
        if row.label in group:
            group[row.label].append(row.hypothesis)
    columns: dict[str, list[str]] = {ANCHOR: [], POSITIVE: [], NEGATIVE: [], LANG: []}
    for (lang, premise), group in groups.items():
        negatives = group[CONTRADICTION]
        if not negatives:
            continue
        for k, positive in enumerate(group[ENTAILMENT]):
            columns[ANCHOR].append(premise)
            columns[POSITIVE].append(positive)
            columns[NEGATIVE].append(negatives[k % len(negatives)])
            columns[LANG].append(lang)
    if not columns[ANCHOR]:
        raise ValueError("no premise has both an entailment and a contradiction hypothesis: no triplets")
    return Dataset.from_dict(columns)


def xnli_triplets(
    langs: str | Iterable[str] | None = None,
    splits: Sequence[str] = ("dev",),
    data_root: str | Path | None = None,
) -> Dataset:
    """Supervised-SimCSE triplets from XNLI (830 per language from each dev set; 15 languages).

    The English NLI training sets (SNLI, MultiNLI) are not available offline here, so XNLI's dev sets
    (2490 pairs per language = 830 premises x one hypothesis per label) stand in as training data.
    Training on `splits=("test",)` leaks into the `xnli` evaluation task, which uses the test sets.
    """
    chosen = _xnli_langs(langs)
    for split in splits:
        if split not in XNLI_SPLITS:
            raise ValueError(f"XNLI split must be one of {XNLI_SPLITS}, got {split!r}")
    rows = [row for split in splits for lang in chosen for row in read_xnli(lang, split, root=data_root)]
    return nli_triplets(rows)


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
        from sentkit.training_data.jcse_stage2 import stage2_triplets  # imports this module: load lazily

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
        from sentkit.training_data.entity_pairs import is_entity_pairs_folder, read_entity_pairs

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
        records = read_csv_records(path, tuple(names))
        columns = {_TABLE_NAMES[n]: [rec[n] for _, rec in records] for n in names}
        if LANG in header:
            columns[LANG] = [rec[LANG] for _, rec in records]
        return _checked_columns(path, columns, [number for number, _ in records])
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
    return _checked_columns(path, columns, numbers)


def _checked_columns(path: Path, columns: dict[str, list[str]], numbers: list[int]) -> Dataset:
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


def _xnli_langs(langs: str | Iterable[str] | None) -> list[str]:
    if langs is None:
        return list(XNLI_LANGS)
    chosen = [
        lang.strip() for lang in (langs.split(",") if isinstance(langs, str) else langs) if lang.strip()
    ]
    unknown = [lang for lang in chosen if lang not in XNLI_LANGS]
    if unknown or not chosen:
        raise ConfigError(f"XNLI languages must be among {', '.join(XNLI_LANGS)}, got {unknown or chosen}")
    return chosen
