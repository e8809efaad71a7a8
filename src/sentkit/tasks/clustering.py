"""Short text clustering (EASE, Nishikawa et al. 2022): k-means on sentence vectors, scored by
accuracy after the best one-to-one matching of clusters to gold labels.

Protocol of EASE's `downstreams/text-clustering/evaluation.py`: the raw (not normalised) embeddings go
to scikit-learn `KMeans` with k = number of gold labels and its defaults of the time (scikit-learn 0.22:
k-means++, n_init=10, max_iter=300); accuracy is the Hungarian-matched accuracy (coclust's `accuracy`).
EASE runs one seed (42); we report the mean over seeds 42, 43, 44.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from sentkit.datasets.mewsc16 import MEWSC16_LANGUAGES, load_mewsc16
from sentkit.datasets.short_text_clustering import load_short_text
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import Task, subsample

SEEDS: tuple[int, ...] = (42, 43, 44)
N_INIT = 10  # scikit-learn 0.22's KMeans default, the version EASE pins

Loader = Callable[[str, Path | None], tuple[list[str], Sequence]]


def hungarian_accuracy(gold: Sequence, pred: Sequence) -> float:
    """Percent of items whose cluster maps to their gold label under the best one-to-one mapping."""
    gold_ids = np.unique(np.asarray(gold), return_inverse=True)[1].ravel()
    pred_ids = np.unique(np.asarray(pred), return_inverse=True)[1].ravel()
    if len(gold_ids) != len(pred_ids):
        raise ValueError(f"gold has {len(gold_ids)} items, pred has {len(pred_ids)}")
    if len(gold_ids) == 0:
        raise ValueError("cannot score an empty clustering")
    table = np.zeros((gold_ids.max() + 1, pred_ids.max() + 1), dtype=np.int64)  # (gold labels, clusters)
    np.add.at(table, (gold_ids, pred_ids), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return 100.0 * table[rows, cols].sum() / len(gold_ids)


def kmeans_accuracy(
    vectors: np.ndarray, labels: Sequence, seeds: Iterable[int] = SEEDS, n_init: int = N_INIT
) -> float:
    """Mean Hungarian accuracy of k-means (k = number of gold labels) over `seeds`."""
    from sklearn.cluster import KMeans

    k = len(set(labels))
    scores = []
    for seed in seeds:
        pred = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(vectors)
        scores.append(hungarian_accuracy(labels, pred))
    return float(np.mean(scores))


@dataclass
class ClusteringTask(Task):
    """One or more labelled sets (`subsets`: languages or a dataset name), each clustered on its own."""

    subsets: tuple[str, ...] = ()
    loader: Loader | None = None
    seeds: tuple[int, ...] = SEEDS
    max_per_subset: int | None = None  # seeded subsample of each subset (None = all rows, the protocol)
    _data: dict[str, tuple[list[str], Sequence]] = field(default_factory=dict, repr=False)

    def load(self) -> None:
        for subset in self.subsets:
            if subset not in self._data:
                texts, labels = self.loader(subset, self.data_root)
                keep = subsample(len(texts), self.max_per_subset)
                self._data[subset] = ([texts[i] for i in keep], [labels[i] for i in keep])

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        scores: dict[str, float] = {}
        for subset in self.subsets:
            texts, labels = self._data[subset]
            start = time.perf_counter()
            vectors = encode_unique(encoder, texts, self.batch_size).rows(texts)  # (n, dim), repeats kept
            scores[subset] = kmeans_accuracy(vectors, labels, self.seeds)
            self.meta.setdefault("seconds", {})[subset] = round(time.perf_counter() - start, 2)
        scores["main_score"] = float(np.mean([scores[s] for s in self.subsets]))
        return with_truncation(scores, encoder, (t for s in self.subsets for t in self._data[s][0]))


def mewsc16(
    *,
    langs=None,
    data_root=None,
    batch_size: int = 64,
    max_per_lang: int | None = None,
    name: str = "mewsc16",
) -> ClusteringTask:
    """MewsC-16, one k-means per language (categories are language-specific); main score = mean.

    `max_per_lang` keeps a seeded sample of each language (the rows knn-mewsc16 keeps with the same limit).
    """
    chosen = select_languages(name, langs, MEWSC16_LANGUAGES)
    return ClusteringTask(
        name=name,
        max_per_subset=max_per_lang,
        languages=chosen,
        data_root=Path(data_root) if data_root else None,
        batch_size=batch_size,
        subsets=chosen,
        loader=lambda lang, root: load_mewsc16(lang, root),
    )


def _english_set(name: str) -> Callable[..., ClusteringTask]:
    def factory(*, langs=None, data_root=None, batch_size: int = 64) -> ClusteringTask:
        select_languages(name, langs, ("en",))
        return ClusteringTask(
            name=name,
            languages=("en",),
            data_root=Path(data_root) if data_root else None,
            batch_size=batch_size,
            subsets=(name,),
            loader=lambda subset, root: load_short_text(subset, root),
        )

    factory.__name__ = name
    factory.__doc__ = f"English short text clustering on {name} (EASE's STC benchmark)."
    return factory


agnews = _english_set("agnews")
biomedical = _english_set("biomedical")
searchsnippets = _english_set("searchsnippets")
stackoverflow = _english_set("stackoverflow")
tweet = _english_set("tweet")
