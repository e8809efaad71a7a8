"""One part of the searched side (consecutive rows), searched as the keys of one k-NN direction.

A direction's keys are split into parts, one per worker (one part, the whole side, in process). Each part
answers a block of queries with its own top k, best first by exact similarity then row; merging the parts'
lists in part order (exact.merge_topk keeps the earlier part on ties) gives each query's top k over the
whole side, ordered by score then row: for exact search the lists of one process, however many parts.

An approximate index is trained once, on the driver, from a sample of the whole side (approximate.
trained_index); every part adds its own rows to a copy of that trained index, so all parts quantize with one
codebook, and re-scores its own candidates exactly. Each part then returns its best k of `refine` x k
candidates of its own rows: more candidates than one index over the whole side fetches, so recall is at
least as high (it is measured either way, recall.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from sentkit.mining.approximate import DEFAULT_REFINE, TABLE_MAX_BYTES, IndexSearcher, filled
from sentkit.mining.exact import KEY_PASS_BYTES, UnitRows, exact_search

EXACT_KINDS = ("flat", "faiss-flat")


@dataclass(frozen=True)
class SearchPlan:
    """What every part of one direction does, decided once by the driver (knn_run.plan_direction)."""

    kind: str  # "flat", "faiss-flat" or a FAISS factory string (an approximate index)
    k: int  # neighbours per query: --k, at most the searched side's rows
    exact_dtype: str = "auto"
    exact_device: str = "cpu"
    refine: int = DEFAULT_REFINE
    ef_search: int | None = None
    query_block: int = 4096  # queries per index search call (bounds the re-scoring gather)

    @property
    def approximate(self) -> bool:
        return self.kind not in EXACT_KINDS


def in_memory(keys) -> UnitRows:
    """The vector set `keys` as one array of unit rows (read once, block by block)."""
    rows = np.empty((keys.n, keys.dim), dtype=np.float32)
    for start, block in keys.blocks():
        rows[start : start + len(block)] = block
    return UnitRows(rows)


class KeyPart:
    """Rows offset..offset+keys.n-1 of a side (`keys`, a vector set) and their search under `plan`;
    `trained`: the direction's trained, empty FAISS index, serialized (approximate plans)."""

    def __init__(
        self, keys, offset: int, plan: SearchPlan, trained: np.ndarray | None = None, hold_bytes: int = 0
    ) -> None:
        """`hold_bytes`: the part's float32 rows are kept in memory up to this size, or up to the in-process
        limits (KEY_PASS_BYTES for exact search, approximate.TABLE_MAX_BYTES for re-scoring) when larger;
        above it they are read back from the shards as needed."""
        self.offset, self.plan = offset, plan
        self.stats: dict[str, float] = {"search_s": 0.0, "queries": 0}
        self.searcher: IndexSearcher | None = None
        self.nprobe: int | None = None
        rows_bytes = keys.n * keys.dim * 4
        if plan.approximate:
            import faiss

            index = faiss.deserialize_index(np.asarray(trained, dtype=np.uint8))
            table, self.stats["add_s"] = filled(index, keys, max(hold_bytes, TABLE_MAX_BYTES))
            self.searcher = IndexSearcher(index, table, keys, plan.kind, plan.k, plan.refine, plan.ef_search)
            self.stats["rows_in_memory"] = table is not None
        elif rows_bytes <= max(hold_bytes, KEY_PASS_BYTES) and not isinstance(keys, UnitRows):
            start = time.perf_counter()
            keys = in_memory(keys)  # read once: every query block is searched against the same rows
            self.stats["read_s"] = round(time.perf_counter() - start, 2)
        self.keys = keys
        self.k = min(plan.k, keys.n)

    @property
    def rows(self) -> int:
        return self.keys.n

    @property
    def preassignable(self) -> bool:
        """Whether this part's index can take the lists each query probes chosen elsewhere (`coarse`)."""
        return self.searcher is not None and self.searcher.preassignable

    def _probe(self, nprobe: int | None) -> None:
        if nprobe != self.nprobe or not self.searcher.params:
            self.searcher.set_probe(nprobe, self.searcher.k * self.plan.refine)
            self.nprobe = nprobe

    def coarse(self, queries: np.ndarray, nprobe: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The lists each query probes at `nprobe` ((similarities, list ids), (b, nprobe) each): every part
        holds the same trained quantizer, so any part may rank a query once for all of them."""
        start = time.perf_counter()
        self._probe(nprobe)
        assigned = self.searcher.coarse(queries)
        self.stats["coarse_s"] = self.stats.get("coarse_s", 0.0) + time.perf_counter() - start
        return assigned

    def search(
        self, queries: np.ndarray, nprobe: int | None = None, assigned: tuple | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sims (b, k'), side rows (b, k')) of the unit rows `queries` among this part's keys, k' = min(k,
        part rows), best first by exact similarity then row; `nprobe`: an IVF index's lists probed;
        `assigned`: those lists, chosen already (`coarse`)."""
        start = time.perf_counter()
        if self.searcher is not None:
            self._probe(nprobe)
            sims, rows = self.searcher.search(queries, self.plan.query_block, assigned)
        elif self.plan.kind == "faiss-flat":
            from sentkit.mining.search import faiss_flat_search

            sims, rows = faiss_flat_search(UnitRows(queries), self.keys, self.k)
        else:
            sims, rows, info = exact_search(
                UnitRows(queries), self.keys, self.k, self.plan.exact_dtype, self.plan.exact_device
            )
            self._count_exact(info)
        self.stats["search_s"] += time.perf_counter() - start
        self.stats["queries"] += len(queries)
        return sims, rows + self.offset

    def tuning_search(self, queries: np.ndarray, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
        """The index's re-scored results at `nprobe` (what nprobe tuning tries), side rows."""
        sims, rows = self.searcher.tuning_search(queries, nprobe)
        self.nprobe = None  # the next search sets its own nprobe again
        return sims, rows + self.offset

    def exact(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k' of `queries` among this part's keys (recall checks, nprobe tuning), side rows."""
        table = self.searcher.table if self.searcher is not None else None  # the rows kept for re-scoring
        keys = UnitRows(table) if table is not None else self.keys
        sims, rows, _ = exact_search(
            UnitRows(queries), keys, self.k, self.plan.exact_dtype, self.plan.exact_device
        )
        return sims, rows + self.offset

    def record(self) -> dict:
        """What this part did: rows, seconds, counts (summed over the parts by the engine)."""
        out = {"rows": self.rows, "dim": self.keys.dim, **self.stats}
        if self.searcher is not None:
            out |= {
                "exact_fallback_queries": self.searcher.counts["exact_fallback_queries"],
                "refine_s": self.searcher.counts["refine_s"],
                "params": dict(self.searcher.params),
                "fetched_per_query": self.searcher.fetch,
            }
        return out

    def _count_exact(self, info: dict) -> None:
        for key in ("float32_rechecked_queries", "unverified_queries", "key_passes"):
            self.stats[key] = self.stats.get(key, 0) + info[key]
        for key in ("dtype", "dtype_reason", "device", "path", "candidates_per_query", "torch_threads"):
            self.stats.setdefault(key, info[key])


def half_available_memory() -> int:
    """Half the memory this machine has available now (MemAvailable; 0 where it cannot be read): what a
    mining worker lets its key part's rows take."""
    try:
        for line in open("/proc/meminfo", encoding="ascii"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 // 2
    except OSError:
        pass
    return 0
