"""Tasks on the user's own files: `family:path[+path...]` specs such as `sts:pairs.tsv` or
`retrieval:queries.tsv+corpus.tsv+qrels.tsv`, scored by the same task classes and metrics as the
built-in benchmarks. Formats are in `sentkit.datasets.user_files`; each file's sha256 and row count go
into the task's `meta["files"]` and so into the results file.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.datasets.user_files import (
    RetrievalFiles,
    read_bitext_files,
    read_classification_file,
    read_labelled_file,
    read_retrieval_files,
    read_sts_file,
    repeated_lines,
)
from sentkit.datasets.xnli import LabelledPairs
from sentkit.encoders.protocol import Encoder
from sentkit.errors import DataFormatError, DataWarning, LanguageNotCovered, MissingDataError, UnknownName
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.bitext import tatoeba_hits
from sentkit.tasks.clustering import ClusteringTask
from sentkit.tasks.knn import KNNTask
from sentkit.tasks.retrieval import (
    average_precision,
    precision_at_k,
    query_items,
    rank_by_cosine,
    reciprocal_rank,
)
from sentkit.tasks.sts import STSTask
from sentkit.tasks.task import Task
from sentkit.tasks.transfer import TransferTask

# family -> the files it takes, in order (the `+`-joined paths of a spec)
FAMILIES: dict[str, tuple[str, ...]] = {
    "sts": ("pairs.tsv",),
    "clustering": ("labelled.tsv",),
    "bitext": ("src.txt", "tgt.txt"),
    "retrieval": ("queries.tsv", "corpus.tsv", "qrels.tsv"),
    "classification": ("train.tsv", "test.tsv"),
    "knn": ("labelled.tsv",),
}


def is_user_spec(name: str) -> bool:
    """Registered task and suite names never contain `:`; a file-backed spec always does."""
    return ":" in name


def parse_spec(spec: str) -> tuple[str, list[Path]]:
    """`family:a+b` -> (family, [a, b]); a wrong family or file count raises UnknownName with the usage,
    a missing file MissingDataError."""
    family, _, rest = spec.strip().partition(":")
    family = family.strip().lower()
    if family not in FAMILIES:
        raise UnknownName(
            f"unknown task family {family!r} in {spec!r} (file-backed families: "
            + ", ".join(f"{f}:{'+'.join(files)}" for f, files in FAMILIES.items())
            + ")"
        )
    paths = [Path(p.strip()).expanduser() for p in rest.split("+")] if rest.strip() else []
    expected = FAMILIES[family]
    if len(paths) != len(expected):
        raise UnknownName(
            f"task {spec!r}: {family} takes {len(expected)} file(s) {family}:{'+'.join(expected)}, got {len(paths)}"
        )
    for path in paths:  # a typo in a path fails here, before any model loads
        if not path.is_file():
            raise MissingDataError(path, f"{family}: expected {'+'.join(expected)} as existing files")
    return family, paths


def user_task(spec: str, *, langs: Iterable[str] | None = None, data_root=None, batch_size: int = 64) -> Task:
    """Read the spec's files now (bad rows fail before any encoding) and return a ready task.

    `langs` keeps only those values of a `lang` column (a file without one is used whole); `data_root` is
    ignored: user paths are relative to the working directory.
    """
    family, paths = parse_spec(spec)
    task = _BUILDERS[family](spec, paths, langs, batch_size)
    task.meta.setdefault("family", family)
    return task


def read_user_tasks(
    names: Sequence[str], langs: Iterable[str] | None = None, batch_size: int = 64
) -> dict[str, Task]:
    """Build every file-backed task among `names` now, so a malformed file stops with `file:line: expected
    ...` before any model loads; pass the result to `evaluate(prepared=...)` to read each file once.

    A file without the asked `langs` is left out: evaluate records that task as skipped, as for built-ins.
    """
    langs = list(langs) if langs else None
    ready: dict[str, Task] = {}
    for name in names:
        if not is_user_spec(name):
            continue
        try:
            ready[name] = user_task(name, langs=langs, batch_size=batch_size)
        except LanguageNotCovered:
            continue
    return ready


def _records(*records) -> list[dict]:
    return [r.as_dict() for r in records]


def _keep_langs(groups: dict, langs: Iterable[str] | None, spec: str) -> dict:
    if langs is None or list(groups) == ["all"]:
        return groups
    return {lang: groups[lang] for lang in select_languages(spec, langs, sorted(groups))}


def _group(lang: str) -> str:
    """How an error names a group of rows: a `lang` value, or nothing for a file without that column."""
    return "" if lang == "all" else f"lang {lang!r}: "


def _sts(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    sets, record = read_sts_file(paths[0])
    sets = _keep_langs(sets, langs, spec)
    for lang, pairs in sets.items():  # Spearman is undefined on one pair or on constant gold scores
        if len(set(pairs.gold.tolist())) < 2:
            raise DataFormatError(
                paths[0],
                None,
                f"{_group(lang)}expected at least 2 pairs with different gold scores (Spearman needs them), "
                f"got {len(pairs)} pair(s) scored {pairs.gold[0]:g}",
            )
    return STSTask(
        name=spec,
        languages=tuple(sets),
        batch_size=batch_size,
        meta={"files": _records(record), "pairs": {k: len(v) for k, v in sets.items()}},
        sets=sets,
    )


def _clustering(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    groups, record = read_labelled_file(paths[0])
    groups = _keep_langs(groups, langs, spec)
    for lang, data in groups.items():  # k = number of labels: 1 or one per row scores 100 for any model
        distinct = len(set(data.labels.tolist()))
        if distinct < 2 or distinct == len(data):
            got = (
                f"only {str(data.labels[0])!r}" if distinct < 2 else f"{distinct} rows with {distinct} labels"
            )
            raise DataFormatError(
                paths[0],
                None,
                f"{_group(lang)}expected at least 2 labels and a label shared by 2 rows, got {got} "
                "(k-means with that k scores 100 whatever the model)",
            )
    return ClusteringTask(
        name=spec,
        languages=tuple(groups),
        batch_size=batch_size,
        meta={"files": _records(record)},
        subsets=tuple(groups),
        loader=lambda subset, _root: (groups[subset].texts, groups[subset].labels),
    )


@dataclass
class UserKNNTask(KNNTask):
    """Emu's kNN matrix on a user file: every ordered pair of its `lang` values (labels shared)."""

    def load(self) -> None:  # the data was read when the task was built
        return None


def _knn(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    groups, record = read_labelled_file(paths[0])
    groups = _keep_langs(groups, langs, spec)
    for lang, data in groups.items():
        if len(data) < 2:
            raise DataFormatError(
                paths[0], None, f"expected at least 2 rows for lang {lang!r} (leave-one-out)"
            )
    labels = [label for data in groups.values() for label in data.labels.tolist()]
    if len(set(labels)) < 2 or len(set(labels)) == len(labels):  # 1-NN accuracy would be 100 or 0
        got = f"only {labels[0]!r}" if len(set(labels)) < 2 else f"{len(labels)} rows with as many labels"
        raise DataFormatError(
            paths[0],
            None,
            f"expected at least 2 labels and a label shared by 2 rows, got {got} "
            "(1-NN accuracy would be fixed whatever the model)",
        )
    return UserKNNTask(
        name=spec,
        languages=tuple(groups),
        batch_size=batch_size,
        source="user",
        pairs=tuple((a, b) for a in groups for b in groups),
        meta={"files": _records(record)},
        data=dict(groups),
    )


@dataclass
class UserClassificationTask(TransferTask):
    """The transfer protocol (C by 5-fold CV on train, logistic regression) on a user's train/test files."""

    def load(self) -> None:  # the data was read when the task was built
        return None


def _classification(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    train_groups, train_record = read_classification_file(paths[0], split_by_lang=False)
    tests, test_record = read_classification_file(paths[1])
    tests = _keep_langs(tests, langs, spec)
    train = train_groups["all"]
    if len(set(train.labels.tolist())) < 2:
        raise DataFormatError(
            paths[0],
            None,
            f"expected at least 2 labels to train a classifier, got only {str(train.labels[0])!r}",
        )
    if any(isinstance(t, LabelledPairs) != isinstance(train, LabelledPairs) for t in tests.values()):
        kind = "sentence pairs" if isinstance(train, LabelledPairs) else "single texts"
        raise DataFormatError(paths[1], 1, f"expected {kind} like {paths[0].name}")
    unseen = sorted({str(v) for t in tests.values() for v in t.labels} - {str(v) for v in train.labels})
    if unseen:
        raise DataFormatError(paths[1], None, f"expected only labels seen in {paths[0].name}, got {unseen}")
    return UserClassificationTask(
        name=spec,
        languages=tuple(tests),
        batch_size=batch_size,
        dataset="user",
        seen_langs=(),
        train=train,
        tests=tests,
        meta={"files": _records(train_record, test_record)},
    )


@dataclass
class UserBitextTask(Task):
    """Tatoeba's protocol on two line-aligned files: nearest-neighbour accuracy both ways, then the mean."""

    src: list[str] = field(default_factory=list, repr=False)
    tgt: list[str] = field(default_factory=list, repr=False)

    def load(self) -> None:
        return None

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        hits = tatoeba_hits(
            encoder.encode(self.src, batch_size=self.batch_size),
            encoder.encode(self.tgt, batch_size=self.batch_size),
        )
        forward, backward = (100.0 * float(np.mean(h)) for h in hits)
        self.items = TaskItems(unit="translation pair (retrieved in each direction)")
        ids = digest_rows(self.src, self.tgt)
        for key, hit in zip(("src->tgt", "tgt->src"), hits):
            self.items.add(key, "percent", ids, stratum="pairs", hit=hit)
        self.items.aggregate("main_score", ["src->tgt", "tgt->src"])
        return {"main_score": (forward + backward) / 2, "src->tgt": forward, "tgt->src": backward}


def _bitext(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    src, tgt, records = read_bitext_files(paths[0], paths[1])
    meta: dict = {"files": _records(*records)}
    for path, lines in zip(paths, (src, tgt)):
        count, first = repeated_lines(lines)
        if first is None:
            continue
        # identical lines get identical vectors: which one is "nearest" is a tie, decided by position
        message = (
            f"{path}: {count} of {len(lines)} lines repeat an earlier line (first: line {first[1]} repeats "
            f"line {first[0]}); retrieving those lines is a tie broken by position, so the accuracy "
            "can be lower than for distinct lines"
        )
        warnings.warn(message, DataWarning, stacklevel=2)
        meta.setdefault("repeated_lines", {})[str(path)] = count
        meta.setdefault("warnings", []).append(message)
    return UserBitextTask(name=spec, languages=(), batch_size=batch_size, meta=meta, src=src, tgt=tgt)


@dataclass
class UserRetrievalTask(Task):
    """QAbot's metrics (MAP main, MRR, P@1, P@5) with every query that has a relevant document (relevance
    > 0) ranking the whole corpus; queries judged only non-relevant have no AP and are left out."""

    files: RetrievalFiles | None = field(default=None, repr=False)

    def load(self) -> None:
        return None

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        f = self.files
        judged = [(qid, text) for qid, text in zip(f.query_ids, f.queries) if _has_relevant(f, qid)]
        docs = np.asarray(encoder.encode(f.docs, batch_size=self.batch_size), dtype=np.float32)  # (n_docs, d)
        queries = np.asarray(
            encoder.encode([t for _, t in judged], batch_size=self.batch_size), dtype=np.float32
        )
        metrics: dict[str, list[float]] = {"map": [], "mrr": [], "p@1": [], "p@5": []}
        for (qid, _), vector in zip(judged, queries):
            relevant = np.asarray([f.qrels[qid].get(d, 0) > 0 for d in f.doc_ids], dtype=np.int64)
            ranked = relevant[rank_by_cosine(vector, docs)]
            metrics["map"].append(average_precision(ranked))
            metrics["mrr"].append(reciprocal_rank(ranked))
            metrics["p@1"].append(precision_at_k(ranked, 1))
            metrics["p@5"].append(precision_at_k(ranked, 5))
        scores = {name: 100.0 * float(np.mean(values)) for name, values in metrics.items()}
        qrels = [",".join(f"{d}={g}" for d, g in sorted(f.qrels[qid].items())) for qid, _ in judged]
        queries = digest_rows([qid for qid, _ in judged], [t for _, t in judged], qrels)
        self.items = query_items(metrics, digest_rows([queries, digest_rows(f.doc_ids, f.docs)]))
        return {"main_score": scores["map"], **scores}


def _has_relevant(files: RetrievalFiles, qid: str) -> bool:
    return any(value > 0 for value in files.qrels.get(qid, {}).values())


def _retrieval(spec: str, paths: list[Path], langs, batch_size: int) -> Task:
    files = read_retrieval_files(*paths)
    scored = sum(_has_relevant(files, qid) for qid in files.query_ids)
    if not scored:
        raise DataFormatError(paths[2], None, "expected at least one query with a relevant document (> 0)")
    meta = {
        "files": _records(*files.records),
        "n_queries": scored,
        # judged, but only with relevance 0: no relevant document, so no AP, MRR or P@k (left out)
        "n_queries_no_relevant": sum(qid in files.qrels for qid in files.query_ids) - scored,
        "n_queries_unjudged": sum(qid not in files.qrels for qid in files.query_ids),
    }
    return UserRetrievalTask(name=spec, languages=(), batch_size=batch_size, meta=meta, files=files)


_BUILDERS: dict[str, Callable[..., Task]] = {
    "sts": _sts,
    "clustering": _clustering,
    "bitext": _bitext,
    "retrieval": _retrieval,
    "classification": _classification,
    "knn": _knn,
}
assert set(_BUILDERS) == set(FAMILIES)
