"""Zero-shot cross-lingual transfer (MSE-AMR, Cai et al. 2022, Sec. 4.2): a logistic regression trained on
frozen English embeddings, tested on every language; per-language accuracy plus seen/all averages.

The English train sets are not available offline, so the classifier is trained on the English DEV split
with C picked by 5-fold stratified cross-validation on it (SentEval's grid 2^-2..2^4), then tested on each
language's TEST split. Pair tasks (XNLI, PAWS-X, QAM) use features [u, v, |u-v|, u*v] (InferSent;
MSE-AMR's SentEval code uses only [|u-v|, u*v]); their CV folds keep pairs that share a first sentence
together (an XNLI premise has one hypothesis per label, so a split premise would leak its label mix).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
from threadpoolctl import threadpool_limits

from sentkit.datasets.labelled import LabelledPairs, LabelledTexts
from sentkit.datasets.marc import MARC_LANGS, load_marc, marc_split_for
from sentkit.datasets.pawsx import PAWSX_LANGS, load_pawsx
from sentkit.datasets.qam import QAM_LANGS, load_qam
from sentkit.datasets.xnli import XNLI_LANGS, load_xnli
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import EncodedTexts, encode_unique, with_truncation
from sentkit.tasks.task import SUBSAMPLE_SEED, Task, subsample

C_GRID: tuple[float, ...] = tuple(2.0**k for k in range(-2, 5))  # SentEval's logistic-regression grid
TRAIN_LANG = "en"

Loader = Callable[[str, str, "str | Path | None"], "LabelledPairs | LabelledTexts"]
TRANSFER_DATASETS: dict[str, tuple[Loader, tuple[str, ...]]] = {
    "xnli": (load_xnli, XNLI_LANGS),
    "pawsx": (load_pawsx, PAWSX_LANGS),
    "qam": (load_qam, QAM_LANGS),
    "marc": (load_marc, MARC_LANGS),
}


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """InferSent pair features [u, v, |u-v|, u*v]: (n, d) x (n, d) -> (n, 4d)."""
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)


def select_c_by_cv(
    features: np.ndarray,
    labels: np.ndarray,
    c_grid: Sequence[float] = C_GRID,
    folds: int = 5,
    seed: int = 1111,
    groups: np.ndarray | None = None,
) -> tuple[float, float]:
    """The C with the best mean k-fold stratified CV accuracy (ties: the smaller C) and that accuracy (%).

    With `groups` (e.g. the XNLI premise, shared by three hypotheses) a group never spans two folds, so
    a held-out pair's premise was not seen in training. Each fold warm-starts along the ascending grid.
    """
    if groups is None:
        splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(features, labels)
    else:
        splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
        splits = splitter.split(features, labels, groups)
    grid = sorted(c_grid)
    scores = np.zeros((folds, len(grid)))
    with threadpool_limits(limits=1):  # tiny BLAS calls: extra threads only contend (5x slower on 2 cores)
        for fold, (train, held) in enumerate(splits):
            clf = LogisticRegression(max_iter=2000, random_state=seed, warm_start=True)
            for j, c in enumerate(grid):
                clf.set_params(C=c).fit(features[train], labels[train])
                scores[fold, j] = clf.score(features[held], labels[held])
    mean = 100.0 * scores.mean(axis=0)
    best = int(np.argmax(mean))
    return grid[best], float(mean[best])


def fit_logistic(features: np.ndarray, labels: np.ndarray, c: float, seed: int = 1111) -> LogisticRegression:
    """Multinomial logistic regression with L2 strength 1/C (scikit-learn, lbfgs)."""
    with threadpool_limits(limits=1):
        return LogisticRegression(C=c, max_iter=2000, random_state=seed).fit(features, labels)


def seen_all_averages(accuracy: dict[str, float], seen: Iterable[str]) -> dict[str, float]:
    """MSE-AMR's two averages: over the languages the encoder was trained on ("seen") and over all."""
    seen = set(seen)
    out = {"all": float(np.mean(list(accuracy.values())))}
    seen_scores = [acc for lang, acc in accuracy.items() if lang.split("(")[0] in seen]
    if seen_scores:
        out["seen"] = float(np.mean(seen_scores))
    return out


@dataclass
class TransferTask(Task):
    """Train on English dev, test on each language's test split (MARC ja: dev, reported as `ja(dev)`).

    `seen` averages the languages the encoder declares (`encoder.languages`) or `seen_langs` if given;
    with neither it is left out. meta records the list used (`seen_languages`) and where it came from.
    """

    dataset: str = "xnli"
    seen_langs: tuple[str, ...] | None = None  # None: encoder.languages; an encoder without one: no "seen"
    max_per_lang: int | None = None  # seeded subsample of each test set (None = all rows)
    max_train: int | None = None  # seeded subsample of the English training set (None = all rows)
    seed: int = SUBSAMPLE_SEED
    c_grid: tuple[float, ...] = C_GRID
    folds: int = 5
    train: LabelledPairs | LabelledTexts | None = field(default=None, repr=False)
    tests: dict[str, LabelledPairs | LabelledTexts] = field(default_factory=dict, repr=False)

    def load(self) -> None:
        loader, _ = TRANSFER_DATASETS[self.dataset]
        train = loader(TRAIN_LANG, "dev", self.data_root)
        self.train = train.subset(subsample(len(train), self.max_train, self.seed))
        self.tests, splits = {}, {}
        for lang in self.languages:
            split = marc_split_for(lang, "test") if self.dataset == "marc" else "test"
            data = loader(lang, split, self.data_root)
            key = lang if split == "test" else f"{lang}({split})"
            self.tests[key] = data.subset(subsample(len(data), self.max_per_lang, self.seed))
            splits[key] = f"{self.dataset}/{split}.{lang}"
        self.meta.update(train=f"{self.dataset}/dev.{TRAIN_LANG}", tests=splits)

    def _features(self, data: LabelledPairs | LabelledTexts, encoded: EncodedTexts) -> np.ndarray:
        if isinstance(data, LabelledPairs):
            return pair_features(encoded.rows(data.first), encoded.rows(data.second))  # (n, 4d)
        return encoded.rows(data.texts)  # (n, d)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        start = time.perf_counter()
        if self.train is None:
            self.load()
        sets = [self.train, *self.tests.values()]
        texts: list[str] = []
        for data in sets:
            texts.extend(data.first + data.second if isinstance(data, LabelledPairs) else data.texts)
        vectors = encode_unique(encoder, texts, self.batch_size)
        encoded = time.perf_counter()

        x_train = self._features(self.train, vectors)
        groups = None
        if isinstance(self.train, LabelledPairs):  # keep pairs sharing a first sentence in one fold
            groups = np.unique(np.asarray(self.train.first), return_inverse=True)[1]
        c, cv_acc = select_c_by_cv(x_train, self.train.labels, self.c_grid, self.folds, self.seed, groups)
        clf = fit_logistic(x_train, self.train.labels, c, self.seed)
        # an item is a test row (hit: predicted label == gold); the classifier stays as trained
        self.items = TaskItems(unit="test row", extra_sha256=_rows_digest(self.train))
        accuracy = {}
        for key, data in self.tests.items():
            hit = clf.predict(self._features(data, vectors)) == data.labels
            accuracy[key] = 100.0 * float(np.mean(hit))
            self.items.add(key, "percent", _rows_digest(data), hit=hit)

        if self.seen_langs is not None:
            seen, source = tuple(self.seen_langs), "seen_langs argument"
        elif getattr(encoder, "languages", None) is not None:
            seen, source = tuple(encoder.languages), f"{encoder.name}.languages"
        else:
            seen, source = None, f"{encoder.name} declares no training languages: no 'seen' average"
        averages = seen_all_averages(accuracy, seen or ())
        self.items.aggregate("main_score", accuracy)
        self.items.aggregate("all", accuracy)
        seen_keys = [key for key in accuracy if key.split("(")[0] in set(seen or ())]
        if seen_keys:
            self.items.aggregate("seen", seen_keys)
        self.meta.update(
            C=c,
            cv_accuracy=cv_acc,
            n_train=len(self.train),
            n_test={key: len(data) for key, data in self.tests.items()},
            n_sentences_encoded=len(vectors.texts),
            seen_languages=list(seen) if seen is not None else None,
            seen_source=source,
            encode_seconds=round(encoded - start, 2),
            wall_seconds=round(time.perf_counter() - start, 2),
        )
        return with_truncation({"main_score": averages["all"], **averages, **accuracy}, encoder, texts)


def _rows_digest(data: LabelledPairs | LabelledTexts) -> str:
    if isinstance(data, LabelledPairs):
        return digest_rows(data.first, data.second, data.labels)
    return digest_rows(data.texts, data.labels)


def transfer_task(
    dataset: str,
    *,
    langs: Iterable[str] | None = None,
    data_root: str | Path | None = None,
    batch_size: int = 64,
    name: str | None = None,
    **options,
) -> TransferTask:
    """Factory for the registry: `dataset` is one of xnli, pawsx, qam, marc; options go to TransferTask."""
    if dataset not in TRANSFER_DATASETS:
        raise ValueError(f"unknown transfer dataset {dataset!r} (known: {', '.join(TRANSFER_DATASETS)})")
    _, default_langs = TRANSFER_DATASETS[dataset]
    languages = select_languages(name or dataset, langs, default_langs)
    return TransferTask(
        name=name or dataset,
        languages=languages,
        data_root=Path(data_root) if data_root is not None else None,
        batch_size=batch_size,
        dataset=dataset,
        **options,
    )
