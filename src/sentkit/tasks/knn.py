"""Leave-one-out nearest-neighbour accuracy (Emu, Hirota et al. 2020): each language-A sentence takes the
label of its cosine nearest neighbour among language-B sentences (itself excluded when A == B).

Scores form an A x B matrix (keys `A->B`, percent); main_score is its mean. MARC labels (stars) are
shared by all languages, so every ordered pair is scored. MewsC-16 categories are written in each
language's own vocabulary, so only A == A pairs are meaningful and are the default.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.datasets.labelled import LabelledTexts
from sentkit.datasets.marc import MARC_LANGS, load_marc, marc_split_for
from sentkit.datasets.mewsc16 import MEWSC16_LANGUAGES, load_mewsc16
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.mining.exact import cosine_knn
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import SUBSAMPLE_SEED, Task, holdout, subsample

KNN_SOURCES: dict[str, tuple[str, ...]] = {"mewsc16": MEWSC16_LANGUAGES, "marc": MARC_LANGS}
# Sources whose labels mean the same in every language (cross-lingual pairs are scored by default).
SHARED_LABELS = {"marc"}


def nearest_neighbours(queries: np.ndarray, keys: np.ndarray, exclude_self: bool = False) -> np.ndarray:
    """Row index in `keys` of each query's cosine nearest neighbour; with exclude_self, query i skips key i.

    Exact search (`sentkit.mining.exact.cosine_knn`, the one `sentkit mine` runs); for leave-one-out the two best are fetched and the query's own row
    is dropped, so a duplicate sentence elsewhere in the set still counts as a neighbour.
    """
    if exclude_self and len(queries) != len(keys):
        raise ValueError("exclude_self needs queries and keys to be the same rows")
    if exclude_self and len(keys) < 2:
        raise ValueError("leave-one-out needs at least 2 rows")
    _, idx = cosine_knn(queries, keys, k=2 if exclude_self else 1)  # (n, k)
    if not exclude_self:
        return idx[:, 0].astype(np.int64)
    own = idx[:, 0] == np.arange(len(queries))
    return np.where(own, idx[:, 1], idx[:, 0]).astype(np.int64)


def knn_hits(
    queries: np.ndarray,
    query_labels: np.ndarray,
    keys: np.ndarray,
    key_labels: np.ndarray,
    exclude_self: bool = False,
) -> np.ndarray:
    """Whether each query's nearest key carries the query's label: (n_queries,) bools."""
    nearest = nearest_neighbours(queries, keys, exclude_self=exclude_self)
    return np.asarray(key_labels)[nearest] == np.asarray(query_labels)


def knn_accuracy(
    queries: np.ndarray,
    query_labels: np.ndarray,
    keys: np.ndarray,
    key_labels: np.ndarray,
    exclude_self: bool = False,
) -> float:
    """Percent of queries whose nearest key carries the query's label (Emu's 1-NN protocol)."""
    return 100.0 * float(np.mean(knn_hits(queries, query_labels, keys, key_labels, exclude_self)))


def chance_accuracy(query_labels: np.ndarray, key_labels: np.ndarray, exclude_self: bool = False) -> float:
    """Percent a neighbour drawn at random would score: sum over labels of p_query(c) * p_key(c), the sum of
    squared label shares when both sides are one set; leave-one-out draws among the n - 1 other rows."""
    q_values, q_counts = np.unique(np.asarray(query_labels), return_counts=True)
    k_counts = dict(zip(*np.unique(np.asarray(key_labels), return_counts=True)))
    n_q, n_k = len(query_labels), len(key_labels)
    if exclude_self:  # same rows: my own label has one row fewer among the candidates
        return 100.0 * float(sum(c * (c - 1) for c in q_counts) / (n_q * (n_q - 1)))
    return 100.0 * float(sum(c * k_counts.get(v, 0) for v, c in zip(q_values, q_counts)) / (n_q * n_k))


def knn_accuracy_matrix(
    embeddings: dict[str, np.ndarray],
    labels: dict[str, np.ndarray],
    pairs: Iterable[tuple[str, str]],
) -> dict[str, float]:
    """`A->B` accuracy for each (A, B): A's sentences labelled by their nearest B sentence; A == B is LOO."""
    scores = {}
    for a, b in pairs:
        scores[f"{a}->{b}"] = knn_accuracy(
            embeddings[a], labels[a], embeddings[b], labels[b], exclude_self=a == b
        )
    return scores


def parse_pairs(source: str, langs: Iterable[str | tuple[str, str]] | None) -> list[tuple[str, str]]:
    """Language codes -> all ordered pairs (shared labels) or A->A only; pairs as ("A", "B") or "A->B".

    Pairs the source cannot score (an unknown language; A->B across MewsC-16's per-language categories)
    are dropped; when none is left the task is not covered (LanguageNotCovered).
    """
    known = KNN_SOURCES[source]
    shared = source in SHARED_LABELS
    available = [f"{a}->{b}" for a in known for b in known if shared or a == b]
    items = None if langs is None else ["->".join(i) if isinstance(i, tuple) else str(i) for i in langs]

    def expand(asked: list[str]) -> list[str]:
        codes = [c for c in asked if "->" not in c]
        pairs = [f"{a}->{b}" for a in codes for b in codes if shared or a == b]
        return pairs + [p for p in asked if "->" in p]

    hint = "" if shared else "category names differ by language, so only A->A pairs are scored"
    chosen = select_languages(f"knn-{source}", items, available, expand=expand, hint=hint)
    return [tuple(pair.split("->")) for pair in chosen]


@dataclass
class KNNTask(Task):
    """Leave-one-out 1-NN accuracy over language pairs; MARC reads `split` (test; ja falls back to dev)."""

    source: str = "mewsc16"
    pairs: tuple[tuple[str, str], ...] = ()
    split: str = "test"  # MARC only
    max_per_lang: int | None = None  # seeded subsample per language (None = all rows)
    seed: int = SUBSAMPLE_SEED
    holdout_of: int | None = (
        None  # keep the rows outside the `holdout_of`-row sample (then max_per_lang of them)
    )
    data: dict[str, LabelledTexts] = field(default_factory=dict, repr=False)

    def kept_rows(self, n: int) -> np.ndarray:
        """The rows kept of a language's n: the seeded sample, or the held-out rows outside one."""
        if self.holdout_of is None:
            return subsample(n, self.max_per_lang, self.seed)
        return holdout(n, self.holdout_of, self.max_per_lang, self.seed)

    def load(self) -> None:
        files = {}
        for lang in self.languages:
            if self.source == "marc":
                split = marc_split_for(lang, self.split)
                full = load_marc(lang, split, self.data_root)
                files[lang] = f"marc/{split}.{lang}"
            else:
                texts, categories = load_mewsc16(lang, self.data_root)
                full = LabelledTexts(texts, np.asarray(categories, dtype=str))
                files[lang] = f"mewsc16/{lang}"
            self.data[lang] = full.subset(self.kept_rows(len(full)))
        self.meta.update(files=files)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        start = time.perf_counter()
        if not self.data:
            self.load()
        embeddings = {
            lang: encode_unique(encoder, data.texts, self.batch_size).rows(data.texts)  # (n, dim)
            for lang, data in self.data.items()
        }
        labels = {lang: data.labels for lang, data in self.data.items()}
        # an item is a query sentence; a language's queries are drawn together for all its targets
        ids = {lang: digest_rows(data.texts, data.labels) for lang, data in self.data.items()}
        self.items = TaskItems(unit="query sentence")
        scores = {}
        for a, b in self.pairs:
            hit = knn_hits(embeddings[a], labels[a], embeddings[b], labels[b], exclude_self=a == b)
            scores[f"{a}->{b}"] = 100.0 * float(np.mean(hit))
            self.items.add(f"{a}->{b}", "percent", digest_rows([ids[a], ids[b]]), stratum=a, hit=hit)
        self.items.aggregate("main_score", scores)
        chance = {f"{a}->{b}": round(chance_accuracy(labels[a], labels[b], a == b), 2) for a, b in self.pairs}
        self.meta.update(
            chance=chance,  # what a random neighbour scores per pair: read each accuracy against it
            chance_mean=round(float(np.mean(list(chance.values()))), 2),
            n_per_lang={lang: len(data) for lang, data in self.data.items()},
            wall_seconds=round(time.perf_counter() - start, 2),
        )
        scores = {"main_score": float(np.mean(list(scores.values()))), **scores}
        return with_truncation(scores, encoder, (t for data in self.data.values() for t in data.texts))


def knn_task(
    source: str,
    *,
    langs: Iterable[str | tuple[str, str]] | None = None,
    data_root: str | Path | None = None,
    batch_size: int = 64,
    **options,
) -> KNNTask:
    """Factory for the registry: `source` is mewsc16 or marc; `langs` codes or pairs; options to KNNTask."""
    if source not in KNN_SOURCES:
        raise ValueError(f"unknown kNN source {source!r} (known: {', '.join(KNN_SOURCES)})")
    pairs = parse_pairs(source, langs)
    languages = tuple(dict.fromkeys(lang for pair in pairs for lang in pair))
    return KNNTask(
        name=options.pop("name", f"knn-{source}"),
        languages=languages,
        data_root=Path(data_root) if data_root is not None else None,
        batch_size=batch_size,
        source=source,
        pairs=tuple(pairs),
        **options,
    )
