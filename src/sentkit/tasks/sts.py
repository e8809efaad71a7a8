"""Semantic textual similarity: Spearman x100 between cosine(u, v) and the gold score (SentEval protocol).

Multi-file sets follow SentEval/SimCSE's "all" setting: each STS12-16 year pools its subsets before ranking,
so the breakdown has one Spearman per year and `main_score` is their plain average (SimCSE Table 1 style).
STS17's breakdown is one Spearman per language pair and `main_score` their average. Single-set tasks
(STS-B, JSTS, JSICK, JAC-STS) report that set's Spearman under its language code.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from sentkit.datasets.jsts import read_jsts
from sentkit.datasets.root import data_file
from sentkit.datasets.senteval_sts import SUBSETS, read_sts_year_all
from sentkit.datasets.sick import read_sick
from sentkit.datasets.sts17 import DEFAULT_PAIRS, PAIR_FILES, WMT_PAIR, read_sts17
from sentkit.datasets.sts_pairs import STSPairs
from sentkit.datasets.stsb import read_stsb
from sentkit.encoders.protocol import Encoder
from sentkit.errors import DataWarning, MissingDataError
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.sts_checks import data_warnings, similarity_warning
from sentkit.tasks.task import Task
from sentkit.tasks.vectors import paired_cosine

STS_EN_ENV = "SENTKIT_STS_EN"


def cosine_spearman(a: np.ndarray, b: np.ndarray, gold: np.ndarray) -> float:
    """Spearman x100 between paired cosine similarities and gold scores."""
    rho = spearmanr(paired_cosine(a, b), gold).statistic
    return float(rho * 100.0)


@dataclass
class STSTask(Task):
    """Encodes every distinct sentence of all its sets once, then scores each set.

    `read(data_root)` returns breakdown key -> pairs; `main_score` is the mean over keys. Degenerate sets
    (nearly constant gold scores or similarities, mostly repeated pairs: sts_checks.py) are warned about
    (DataWarning) and listed in `meta["warnings"]`, which the results file keeps.
    """

    read: Callable[[Path | None], dict[str, STSPairs]] | None = None
    sets: dict[str, STSPairs] = field(default_factory=dict, repr=False)
    _data_notes: list[str] | None = field(default=None, init=False, repr=False)

    def load(self) -> None:
        if not self.sets:
            if self.read is None:
                raise ValueError(f"task {self.name!r} has no reader")
            self.sets = self.read(self.data_root)
            self.meta["pairs"] = {key: len(pairs) for key, pairs in self.sets.items()}
        if self._data_notes is None:  # the data's own warnings, once
            self._data_notes = [
                note for key, pairs in self.sets.items() for note in data_warnings(key, pairs)
            ]
            self._warn(self._data_notes)

    def _warn(self, notes: list[str]) -> None:
        for note in notes:
            warnings.warn(f"task {self.name}: {note}", DataWarning, stacklevel=3)
        every = list(dict.fromkeys([*(self._data_notes or []), *notes]))  # this evaluation's
        if every:
            self.meta["warnings"] = every
        else:
            self.meta.pop("warnings", None)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        texts = [s for p in self.sets.values() for s in (*p.sent1, *p.sent2)]
        encoded = encode_unique(encoder, texts, self.batch_size)
        scores = {}
        self.items = TaskItems(unit="sentence pair")
        notes = []
        for key, pairs in self.sets.items():
            a, b = encoded.rows(pairs.sent1), encoded.rows(pairs.sent2)  # (n_pairs, dim) each
            scores[key] = cosine_spearman(a, b, pairs.gold)
            ids = digest_rows(pairs.sent1, pairs.sent2, pairs.gold)
            similarities = paired_cosine(a, b)  # (n_pairs,)
            self.items.add(key, "spearman", ids, pred=similarities, gold=pairs.gold)
            notes += filter(None, [similarity_warning(key, similarities)])
        self.items.aggregate("main_score", self.sets)
        self._warn(notes)
        return with_truncation(
            {"main_score": float(np.mean(list(scores.values()))), **scores}, encoder, texts
        )


def _root(data_root: str | Path | None) -> Path | None:
    return Path(data_root) if data_root is not None else None


def _single(
    name: str, lang: str, reader: Callable[[Path | None], STSPairs], langs, data_root, batch_size, **meta
) -> STSTask:
    select_languages(name, langs, (lang,))
    return STSTask(
        name=name,
        languages=(lang,),
        data_root=_root(data_root),
        batch_size=batch_size,
        meta=dict(meta),
        read=lambda root: {lang: reader(root)},
    )


def stsb(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """STS Benchmark test split (1379 pairs)."""
    return _single(
        "stsb",
        "en",
        lambda r: read_stsb(data_file("sts", "STSBenchmark", "sts-test.csv", root=r)),
        langs,
        data_root,
        batch_size,
        split="test",
    )


def stsb_dev(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """STS Benchmark dev split (1500 pairs), for model selection."""
    return _single(
        "stsb-dev",
        "en",
        lambda r: read_stsb(data_file("sts", "STSBenchmark", "sts-dev.csv", root=r)),
        langs,
        data_root,
        batch_size,
        split="dev",
    )


def select_pairs(
    langs: Iterable[str] | None, known: Iterable[str], default: Iterable[str], task: str = "sts17"
) -> tuple[str, ...]:
    """Pairs to run: None -> default; "de-en" and "en-de" both name en-de; plain codes ("en", "de") select
    the known pairs whose languages are all among them."""
    known = tuple(known)

    def expand(asked: list[str]) -> list[str]:
        codes = {s for s in asked if "-" not in s}
        pairs = []
        for item in asked:
            src, _, tgt = item.partition("-")
            pairs += [p for p in known if "-" in item and p in (item, f"{tgt}-{src}")]
        return pairs + [p for p in known if p != WMT_PAIR and codes and set(p.split("-")) <= codes]

    return select_languages(task, langs, known, default=tuple(default), expand=expand)


def sts17(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """STS17 + extended cross-lingual pairs, 250 each; default the 10 pairs of DEFAULT_PAIRS."""
    pairs = select_pairs(langs, (*PAIR_FILES, WMT_PAIR), DEFAULT_PAIRS)

    def read(root: Path | None) -> dict[str, STSPairs]:
        folder = data_file("sts", "STS17-test", root=root)
        return {pair: read_sts17(folder, pair) for pair in pairs}

    return STSTask(
        name="sts17",
        languages=pairs,
        data_root=_root(data_root),
        batch_size=batch_size,
        meta={"aggregate": "mean over pairs"},
        read=read,
    )


def _years_task(
    name: str, lang: str, folder_of: Callable[[Path | None, str], Path], langs, data_root, batch_size
):
    select_languages(name, langs, (lang,))

    def read(root: Path | None) -> dict[str, STSPairs]:
        return {year: read_sts_year_all(folder_of(root, year), year, lang) for year in SUBSETS}

    return STSTask(
        name=name,
        languages=(lang,),
        data_root=_root(data_root),
        batch_size=batch_size,
        meta={"aggregate": "mean over years; each year pools its subsets (SentEval 'all')"},
        read=read,
    )


def sts12_16(*, langs=None, data_root=None, batch_size: int = 64, path: str | Path | None = None) -> STSTask:
    """English STS12-16 in SentEval layout (STS12-en-test/ ... STS16-en-test/) from `path` or $SENTKIT_STS_EN;
    not redistributable here, so the user supplies it (SentEval's get_transfer_data.bash makes it)."""
    given = path if path is not None else os.environ.get(STS_EN_ENV)
    hint = (
        f"English STS12-16 is not shipped: pass path=<folder holding STS12-en-test ... STS16-en-test> "
        f"or set {STS_EN_ENV} (SentEval's data/downstream/STS folder)"
    )

    def folder_of(_root: Path | None, year: str) -> Path:
        if given is None:
            raise MissingDataError(f"${STS_EN_ENV}", hint)
        folder = Path(given).expanduser() / f"{year}-en-test"
        if not folder.is_dir():
            raise MissingDataError(folder, hint)
        return folder

    return _years_task("sts12-16", "en", folder_of, langs, data_root, batch_size)


def ja_sts12_16(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """Machine-translated Japanese STS12-16 (JCSE's SentEval copy)."""
    return _years_task(
        "ja-sts12-16",
        "ja",
        lambda r, year: data_file("sts-ja", f"{year}-ja-test", root=r),
        langs,
        data_root,
        batch_size,
    )


def jsts(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """JSTS (JGLUE) on JSTS-dev.csv, 1457 pairs: JGLUE's public validation split, the held-out set JMTEB
    also scores. The 5000-pair JSTS-train.csv is a training sample and JSTS-test.csv is a byte copy of it."""
    return _single(
        "jsts",
        "ja",
        lambda r: read_jsts(data_file("sts-ja", "JSTS", "JSTS-dev.csv", root=r), dataset="JSTS.dev"),
        langs,
        data_root,
        batch_size,
        split="dev (JGLUE validation; no public test)",
    )


def jsick(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """JSICK relatedness test split (4927 pairs)."""
    return _single(
        "jsick",
        "ja",
        lambda r: read_sick(
            data_file("sts-ja", "JSICK", "SICK_test_annotated.txt", root=r), "ja", "JSICK.test"
        ),
        langs,
        data_root,
        batch_size,
        split="test",
    )


def jacsts_dev(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """JAC-STS clinical STS dev split (184 pairs): model selection while adapting to the clinical domain."""
    return _single(
        "jacsts-dev",
        "ja",
        lambda r: read_jsts(data_file("sts-ja", "JAC-STS", "JAC-sts-dev.csv", root=r), dataset="JACSTS.dev"),
        langs,
        data_root,
        batch_size,
        split="dev",
    )


def jacsts(*, langs=None, data_root=None, batch_size: int = 64) -> STSTask:
    """JAC-STS clinical STS test split (3482 pairs, integer scores 0-5)."""
    return _single(
        "jacsts",
        "ja",
        lambda r: read_jsts(
            data_file("sts-ja", "JAC-STS", "JAC-sts-test.csv", root=r), dataset="JACSTS.test"
        ),
        langs,
        data_root,
        batch_size,
        split="test",
    )
