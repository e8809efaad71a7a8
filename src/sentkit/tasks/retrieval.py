"""QAbot retrieval (JCSE, Chen et al. 2023): rank each query's candidates by cosine; MAP, MRR, P@1, P@5.

As in JCSE's QAbot_task_eva, only the candidates' question text is embedded (not the answer), the query
is the whole question.txt, and every metric is averaged over the 20 queries (x100 here).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.datasets.qabot import QAbotQuery, load_qabot
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import Task
from sentkit.tasks.vectors import l2_normalize


def rank_by_cosine(query: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Candidate indices, most cosine-similar first (ties keep file order): (d,), (n, d) -> (n,)."""
    dtype = np.result_type(query, candidates, np.float32)
    q = l2_normalize(np.asarray(query)[None, :], dtype)[0]  # (d,)
    c = l2_normalize(candidates, dtype)  # (n, d)
    return np.argsort(-(c @ q), kind="stable")


def average_precision(relevant: Iterable[int]) -> float:
    """Mean of precision@rank over the ranks of relevant items, for a full ranking (0 if none relevant)."""
    hits = np.flatnonzero(np.asarray(list(relevant)))  # 0-based ranks of relevant items
    if len(hits) == 0:
        return 0.0
    return float(np.mean(np.arange(1, len(hits) + 1) / (hits + 1)))


def reciprocal_rank(relevant: Iterable[int]) -> float:
    """1 / rank of the first relevant item (0 if none relevant)."""
    hits = np.flatnonzero(np.asarray(list(relevant)))
    return 0.0 if len(hits) == 0 else 1.0 / (hits[0] + 1)


def precision_at_k(relevant: Iterable[int], k: int) -> float:
    """Share of relevant items among the top k (k capped at the list length, as JCSE does)."""
    relevant = np.asarray(list(relevant))
    k = min(k, len(relevant))
    return float(np.sum(relevant[:k] != 0)) / k


def query_items(metrics: dict[str, list[float]], ids_sha256: str) -> TaskItems:
    """Per-query values of each metric (x100), drawn together; main_score is MAP."""
    items = TaskItems(unit="query")
    for name, values in metrics.items():
        items.add(name, "mean", ids_sha256, stratum="queries", value=100.0 * np.asarray(values))
    items.aggregate("main_score", ["map"])
    return items


@dataclass
class QAbotTask(Task):
    """MAP (main), MRR, P@1 and P@5 in percent over the QAbot queries."""

    queries: list[QAbotQuery] = field(default_factory=list, repr=False)

    def load(self) -> None:
        self.queries = load_qabot(self.data_root)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        start = time.perf_counter()
        if not self.queries:
            self.load()
        # the pools overlap almost entirely (1142 distinct questions), so each text is encoded once
        texts = [q.query for q in self.queries] + [s for q in self.queries for s in q.questions]
        encoded = encode_unique(encoder, texts, self.batch_size)
        metrics: dict[str, list[float]] = {"map": [], "mrr": [], "p@1": [], "p@5": []}
        for q in self.queries:
            candidates = encoded.rows(q.questions)  # (n_candidates, d)
            relevant = q.labels[rank_by_cosine(encoded.rows([q.query])[0], candidates)]
            metrics["map"].append(average_precision(relevant))
            metrics["mrr"].append(reciprocal_rank(relevant))
            metrics["p@1"].append(precision_at_k(relevant, 1))
            metrics["p@5"].append(precision_at_k(relevant, 5))
        scores = {name: 100.0 * float(np.mean(values)) for name, values in metrics.items()}
        ids = digest_rows(
            [q.query for q in self.queries],
            ["\x1d".join(q.questions) for q in self.queries],
            [",".join(map(str, q.labels.tolist())) for q in self.queries],
        )
        self.items = query_items(metrics, ids)
        self.meta.update(
            n_queries=len(self.queries),
            n_texts_encoded=len(encoded.texts),
            embedded="query = question.txt, candidates = the question column (JCSE)",
            wall_seconds=round(time.perf_counter() - start, 2),
        )
        return with_truncation({"main_score": scores["map"], **scores}, encoder, texts)


def qabot_task(
    *,
    langs: Iterable[str] | None = None,
    data_root: str | Path | None = None,
    batch_size: int = 64,
) -> QAbotTask:
    """Factory for the registry: QAbot is Japanese only (`langs` may be None or ["ja"])."""
    select_languages("qabot", langs, ("ja",))
    return QAbotTask(
        name="qabot",
        languages=("ja",),
        data_root=Path(data_root) if data_root is not None else None,
        batch_size=batch_size,
    )
