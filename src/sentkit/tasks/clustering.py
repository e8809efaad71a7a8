"""Short text clustering (EASE, Nishikawa et al. 2022): k-means on sentence vectors, scored by
accuracy after the best one-to-one matching of clusters to gold labels.

Protocol of EASE's `downstreams/text-clustering/evaluation.py`: the raw (not normalised) embeddings go
to scikit-learn `KMeans` with k = number of gold labels and its defaults of the time (scikit-learn 0.22:
k-means++, n_init=10, max_iter=300); accuracy is the Hungarian-matched accuracy (coclust's `accuracy`).
EASE runs one seed (42); we report the mean over seeds 42, 43, 44.

Confidence intervals resample texts while each seed's clusters and its cluster-to-label matching stay as
found on all texts: re-matching every resample is optimistic (the best matching fits the resample), and
on 100-text MewsC-16 samples it put the whole interval 2 to 7 points above the score itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from sentkit.datasets.mewsc16 import MEWSC16_LANGUAGES, load_mewsc16
from sentkit.datasets.short_text_clustering import load_short_text
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import Task, holdout, subsample

SEEDS: tuple[int, ...] = (42, 43, 44)
N_INIT = 10  # scikit-learn 0.22's KMeans default, the version EASE pins
FAISS_NITER = 25  # faiss.Kmeans' default; the protocol's runs stop after 14-26 Lloyd iterations here

Loader = Callable[[str, Path | None], tuple[list[str], Sequence]]


def hungarian_accuracy(gold: Sequence, pred: Sequence) -> float:
    """Percent of items whose cluster maps to their gold label under the best one-to-one mapping."""
    return 100.0 * float(np.mean(hungarian_hits(gold, pred)))


def hungarian_hits(gold: Sequence, pred: Sequence) -> np.ndarray:
    """Whether each item's cluster maps to its gold label under the best one-to-one mapping: (n,) bools."""
    gold_ids = np.unique(np.asarray(gold), return_inverse=True)[1].ravel()
    pred_ids = np.unique(np.asarray(pred), return_inverse=True)[1].ravel()
    if len(gold_ids) != len(pred_ids):
        raise ValueError(f"gold has {len(gold_ids)} items, pred has {len(pred_ids)}")
    if len(gold_ids) == 0:
        raise ValueError("cannot score an empty clustering")
    table = np.zeros((gold_ids.max() + 1, pred_ids.max() + 1), dtype=np.int64)  # (gold labels, clusters)
    np.add.at(table, (gold_ids, pred_ids), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    label_of_cluster = np.full(table.shape[1], -1)  # a cluster left unmatched maps to no label
    label_of_cluster[cols] = rows
    return label_of_cluster[pred_ids] == gold_ids


class KMeansPlusPlusSeeding:
    """scikit-learn's k-means++ seeding, draw for draw and float for float, with less repeated work.

    Passed as `KMeans(init=...)`, it is called once per `n_init` run on the same (centred float32) X with
    the fit's RandomState, as `_kmeans_plusplus` is. scikit-learn computes the candidate distances on
    float32 data in float64 chunks (`_euclidean_distances_upcast`), casting each chunk of X and
    recomputing its squared norms for each of the k*(2+log k) candidate batches of each run. Here the
    float64 copy and the chunk norms are made once per fit; the products, casts and draws are the same
    calls on the same numbers, so the centres are identical (tests compare them with
    `sklearn.cluster.kmeans_plusplus`). The many small float64 products run on one BLAS thread: a
    product's entries do not depend on the thread count, and OpenBLAS threads spinning between
    thousands of tiny calls multiplied the seeding's CPU time by 20 on a loaded 2-core machine.
    """

    def __init__(self) -> None:
        self._x: np.ndarray | None = None
        self._x64 = np.empty((0, 0))
        self._norms: dict[int, np.ndarray] = {}  # chunk size -> squared row norms, computed chunk by chunk

    def __call__(self, x: np.ndarray, n_clusters: int, random_state: np.random.RandomState) -> np.ndarray:
        if x.dtype != np.float32 or x.ndim != 2:
            raise ValueError(
                f"KMeansPlusPlusSeeding takes dense float32 (n, dim) rows, got {x.dtype} {x.shape}"
            )
        if self._x is not x:  # a new fit: KMeans centres a fresh copy of the data in every fit
            self._x, self._x64, self._norms = x, x.astype(np.float64), {}
        # the body of sklearn.cluster._kmeans._kmeans_plusplus, with unit sample weights of X's dtype
        n_samples = x.shape[0]
        weight = np.ones(n_samples, dtype=x.dtype)
        n_local_trials = 2 + int(np.log(n_clusters))
        centers = np.empty((n_clusters, x.shape[1]), dtype=x.dtype)
        center_id = random_state.choice(n_samples, p=weight / weight.sum())
        centers[0] = x[center_id]
        closest_dist_sq = self._squared_distances(np.array([center_id]))  # (1, n)
        current_pot = closest_dist_sq @ weight  # (1,)
        for c in range(1, n_clusters):
            rand_vals = random_state.uniform(size=n_local_trials) * current_pot  # (trials,)
            candidate_ids = np.searchsorted(np.cumsum(weight * closest_dist_sq), rand_vals)
            np.clip(candidate_ids, None, closest_dist_sq.size - 1, out=candidate_ids)
            distance_to_candidates = self._squared_distances(candidate_ids)  # (trials, n)
            np.minimum(closest_dist_sq, distance_to_candidates, out=distance_to_candidates)
            candidates_pot = distance_to_candidates @ weight.reshape(-1, 1)  # (trials, 1)
            best = np.argmin(candidates_pot)
            current_pot = candidates_pot[best]
            closest_dist_sq = distance_to_candidates[best]  # (n,)
            centers[c] = x[candidate_ids[best]]
        return centers

    def _squared_distances(self, ids: np.ndarray) -> np.ndarray:
        """Squared distances of rows `ids` to every row: `_euclidean_distances_upcast`, chunk for chunk."""
        from sklearn.utils import gen_batches
        from sklearn.utils.extmath import row_norms

        n_samples, n_features = self._x64.shape
        batch = _upcast_batch_size(len(ids), n_samples, n_features)
        if batch not in self._norms:  # sklearn's per-chunk norms, once per fit instead of once per call
            self._norms[batch] = np.concatenate(
                [row_norms(self._x64[s], squared=True) for s in gen_batches(n_samples, batch)]
            )
        norms = self._norms[batch]
        out = np.empty((len(ids), n_samples), dtype=np.float32)
        with _blas_controller().limit(limits=1, user_api="blas"):
            for x_slice in gen_batches(len(ids), batch):
                x_chunk = self._x64[ids[x_slice]]  # (b, dim)
                xx = row_norms(x_chunk, squared=True)[:, None]  # (b, 1)
                for y_slice in gen_batches(n_samples, batch):
                    d = -2 * (x_chunk @ self._x64[y_slice].T)  # (b, len(y_slice))
                    d += xx
                    d += norms[None, y_slice]
                    out[x_slice, y_slice] = d.astype(np.float32, copy=False)
        np.maximum(out, 0, out=out)
        return out


def _upcast_batch_size(n_x: int, n_y: int, n_features: int) -> int:
    """The chunk size `_euclidean_distances_upcast` picks for dense (n_x, d) x (n_y, d) inputs."""
    maxmem = max(((n_x + n_y) * n_features + n_x * n_y) / 10, 10 * 2**17)
    tmp = 2 * n_features
    return max(int((-tmp + math.sqrt(tmp**2 + 4 * maxmem)) / 2), 1)


@lru_cache(maxsize=1)
def _blas_controller():
    """One threadpoolctl controller (building one scans the loaded libraries: too slow per call)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def sklearn_kmeans_labels(vectors: np.ndarray, k: int, seed: int, n_init: int = N_INIT) -> np.ndarray:
    """The protocol's clustering: scikit-learn KMeans (k-means++, n_init runs, max_iter 300, tol 1e-4, Lloyd).

    float32 rows (what encoders return) take `KMeansPlusPlusSeeding`: the same labels as
    `KMeans(k, n_init=n_init, random_state=seed).fit_predict(vectors)`, in a fraction of the time.
    """
    from sklearn.cluster import KMeans

    vectors = np.asarray(vectors)
    init = KMeansPlusPlusSeeding() if vectors.dtype == np.float32 else "k-means++"
    return KMeans(n_clusters=k, init=init, n_init=n_init, random_state=seed).fit_predict(vectors)


def faiss_kmeans_labels(
    vectors: np.ndarray, k: int, seed: int, n_init: int = N_INIT, niter: int = FAISS_NITER
) -> np.ndarray:
    """FAISS k-means (not the protocol): best of `n_init` runs (nredo) of `niter` Lloyd iterations each.

    Differs from the protocol in its start (k random rows, not k-means++) and stop (a fixed number of
    iterations, no tolerance); every row is used (FAISS subsamples 256 rows per centroid by default).
    """
    try:
        import faiss
    except ImportError as err:  # pragma: no cover - faiss-cpu is a core dependency
        raise ImportError("the faiss k-means backend needs faiss: pip install faiss-cpu") from err
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    km = faiss.Kmeans(
        x.shape[1],
        k,
        niter=niter,
        nredo=n_init,
        seed=seed,
        min_points_per_centroid=1,  # only silences FAISS's "please provide more points" warning
        max_points_per_centroid=max(len(x), 1),
    )
    km.train(x)
    return km.index.search(x, 1)[1][:, 0]  # (n,) nearest centroid of each row


KMEANS_BACKENDS: dict[str, Callable[..., np.ndarray]] = {
    "sklearn": sklearn_kmeans_labels,
    "faiss": faiss_kmeans_labels,
}
KMEANS_CHOICES = ("sklearn", "faiss", "sklearn+faiss")  # a ClusteringTask's `kmeans`: one backend or both


def kmeans_accuracy(
    vectors: np.ndarray,
    labels: Sequence,
    seeds: Iterable[int] = SEEDS,
    n_init: int = N_INIT,
    backend: str = "sklearn",
) -> float:
    """Mean Hungarian accuracy of k-means (k = number of gold labels) over `seeds`.

    `backend` "sklearn" is the protocol; "faiss" is a faster k-means that is not (see faiss_kmeans_labels).
    """
    return 100.0 * float(np.mean(kmeans_hits(vectors, labels, seeds, n_init, backend)))


def kmeans_hits(
    vectors: np.ndarray,
    labels: Sequence,
    seeds: Iterable[int] = SEEDS,
    n_init: int = N_INIT,
    backend: str = "sklearn",
) -> np.ndarray:
    """(n, seeds) bools: is each item in a cluster that the seed's best matching maps to its gold label."""
    clusters = kmeans_labels(vectors, len(set(labels)), seeds, n_init, backend)  # (n, seeds)
    return np.stack([hungarian_hits(labels, column) for column in clusters.T], axis=1)


def kmeans_labels(
    vectors: np.ndarray, k: int, seeds: Iterable[int] = SEEDS, n_init: int = N_INIT, backend: str = "sklearn"
) -> np.ndarray:
    """Cluster id of each row under each seed's k-means: (n, len(seeds))."""
    if backend not in KMEANS_BACKENDS:
        raise ValueError(f"k-means backend must be one of {sorted(KMEANS_BACKENDS)}, got {backend!r}")
    return np.stack([KMEANS_BACKENDS[backend](vectors, k, seed, n_init) for seed in seeds], axis=1)


@dataclass
class ClusteringTask(Task):
    """One or more labelled sets (`subsets`: languages or a dataset name), each clustered on its own.

    `kmeans` picks the k-means: "sklearn" (the protocol), "faiss" (faster, not the protocol) or
    "sklearn+faiss" (both on the same vectors). Keys without a suffix are always the protocol's;
    FAISS scores are `<subset>_faiss` and their mean `faiss`, and main_score is FAISS's only when
    the protocol did not run (meta["kmeans"] says which). meta["kmeans_seconds"] times each backend.
    """

    subsets: tuple[str, ...] = ()
    loader: Loader | None = None
    seeds: tuple[int, ...] = SEEDS
    max_per_subset: int | None = None  # seeded subsample of each subset (None = all rows, the protocol)
    holdout_of: int | None = None  # keep the rows outside the `holdout_of`-row sample (then max_per_subset)
    kmeans: str = "sklearn"
    _data: dict[str, tuple[list[str], Sequence]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.kmeans not in KMEANS_CHOICES:
            raise ValueError(f"kmeans must be one of {', '.join(KMEANS_CHOICES)}, got {self.kmeans!r}")

    def load(self) -> None:
        for subset in self.subsets:
            if subset not in self._data:
                texts, labels = self.loader(subset, self.data_root)
                if self.holdout_of is None:
                    keep = subsample(len(texts), self.max_per_subset)
                else:
                    keep = holdout(len(texts), self.holdout_of, self.max_per_subset)
                self._data[subset] = ([texts[i] for i in keep], [labels[i] for i in keep])

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        backends = self.kmeans.split("+")
        self.meta["kmeans"] = self.kmeans
        scores: dict[str, float] = {}
        # an item is a text, a hit under each seed's clusters and cluster-to-label matching (both kept fixed)
        items = TaskItems(unit="text")
        for subset in self.subsets:
            texts, labels = self._data[subset]
            start = time.perf_counter()
            vectors = encode_unique(encoder, texts, self.batch_size).rows(texts)  # (n, dim), repeats kept
            for backend in backends:
                began = time.perf_counter()
                key = subset if backend == "sklearn" else f"{subset}_{backend}"
                hits = kmeans_hits(vectors, labels, self.seeds, backend=backend)  # (n, seeds)
                scores[key] = 100.0 * float(np.mean(hits))
                items.add(key, "percent", digest_rows(texts, labels), subset, hit=hits)
                seconds = round(time.perf_counter() - began, 2)
                self.meta.setdefault("kmeans_seconds", {}).setdefault(subset, {})[backend] = seconds
            self.meta.setdefault("seconds", {})[subset] = round(time.perf_counter() - start, 2)
        if "faiss" in backends:
            scores["faiss"] = float(np.mean([scores[f"{s}_faiss"] for s in self.subsets]))
        if "sklearn" in backends:
            scores["main_score"] = float(np.mean([scores[s] for s in self.subsets]))
        else:
            scores["main_score"] = scores["faiss"]
        if "faiss" in backends:
            items.aggregate("faiss", [f"{s}_faiss" for s in self.subsets])
        items.aggregate("main_score", [s if "sklearn" in backends else f"{s}_faiss" for s in self.subsets])
        self.items = items
        return with_truncation(scores, encoder, (t for s in self.subsets for t in self._data[s][0]))


def mewsc16(
    *,
    langs=None,
    data_root=None,
    batch_size: int = 64,
    max_per_lang: int | None = None,
    name: str = "mewsc16",
    kmeans: str = "sklearn",
    holdout_of: int | None = None,
) -> ClusteringTask:
    """MewsC-16, one k-means per language (categories are language-specific); main score = mean.

    `max_per_lang` keeps a seeded sample of each language (the rows knn-mewsc16 keeps with the same limit);
    `kmeans` is the ClusteringTask option ("sklearn" = the protocol); `holdout_of` keeps the sentences
    outside the `holdout_of`-per-language sample instead (then at most `max_per_lang` of them).
    """
    chosen = select_languages(name, langs, MEWSC16_LANGUAGES)
    return ClusteringTask(
        name=name,
        max_per_subset=max_per_lang,
        holdout_of=holdout_of,
        kmeans=kmeans,
        languages=chosen,
        data_root=Path(data_root) if data_root else None,
        batch_size=batch_size,
        subsets=chosen,
        loader=lambda lang, root: load_mewsc16(lang, root),
    )


def _english_set(name: str) -> Callable[..., ClusteringTask]:
    def factory(
        *, langs=None, data_root=None, batch_size: int = 64, kmeans: str = "sklearn"
    ) -> ClusteringTask:
        select_languages(name, langs, ("en",))
        return ClusteringTask(
            name=name,
            kmeans=kmeans,
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
