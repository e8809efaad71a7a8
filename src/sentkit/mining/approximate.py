"""Approximate cosine k-NN with one FAISS index (any factory string), every result re-scored exactly.

The index is trained on a seeded sample of the keys and holds all of them. Each query fetches `refine` x k
candidates, which are re-scored with the exact similarity (exact.exact_scores: the float32 vectors, not
the index's compressed codes) and cut to the best k, so margins and their k-NN means use exact
similarities. Queries left with fewer than k candidates (too few keys in the probed lists) are searched
exactly. An IVF index given a recall target instead of an nprobe has its nprobe chosen first on sampled
queries (nprobe_tuning.py). Recall against exact search is measured by the caller (recall.py).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sentkit.errors import InvalidArgument
from sentkit.mining.exact import UnitRows, exact_scores, exact_search, product_error
from sentkit.mining.index_spec import faiss_message, ivf_lists, uses_hnsw
from sentkit.mining.nprobe_tuning import tune_nprobe

DEFAULT_NPROBE = (
    128  # stopes (NLLB's mining) probes 128 lists; FAISS's own default of 1 loses most neighbours
)
DEFAULT_EF_SEARCH = 128  # HNSW candidate list per query (FAISS's default of 16 is for k = 1)
TRAIN_PER_LIST = 50  # training rows per inverted list (FAISS's k-means warns below 39)
TRAIN_MIN = 65_536  # rows for PQ / OPQ training (256 centroids x 256 rows, what FAISS samples to)
TRAIN_MAX = 2_000_000  # cap: more lists than TRAIN_MAX / 39 get fewer rows each (FAISS then warns)
REFINE_ROWS = 256  # queries whose candidates are ranked and re-scored at once
RESCORE_EXTRA = 4  # candidates beyond k re-scored in float64 after the float32 ranking
DEFAULT_REFINE = 4  # candidates per wanted neighbour re-scored exactly, for factory strings and ivfpq
# float32 keys kept in memory for re-scoring (1M x 384 is 1.5 GB); above, rows are read back per block: the cap
# keeps a 1M x 1M run's peak within a few GiB (measured in docs/mining.md, "Time and memory")
TABLE_MAX_BYTES = 2 << 30


def train_size(n: int, factory: str, asked: int | None = None) -> int:
    """Rows sampled to train the index: `asked`, else 50 per IVF list, at least 65,536, at most
    2,000,000 and at most n."""
    if asked:
        return min(n, asked)
    return min(n, TRAIN_MAX, max(TRAIN_MIN, TRAIN_PER_LIST * (ivf_lists(factory) or 0)))


def trained_index(keys, factory: str, train_rows: int | None = None, seed: int = 0):
    """(index, training rows, seconds): the FAISS index of `factory` (inner product) for the vector set `keys`,
    seeded (`_seed`) and trained on a seeded sample of train_size rows, holding no key yet (a key part adds
    its own rows: key_part.py)."""
    import faiss

    start = time.perf_counter()
    index = faiss.index_factory(keys.dim, factory, faiss.METRIC_INNER_PRODUCT)
    _seed(index, seed)
    lists = ivf_lists(factory)
    if lists and keys.n < lists:
        raise InvalidArgument(
            f"--index {factory}: {lists} lists need at least {lists} rows to train (FAISS asks for 39 per "
            f"list); the searched side has {keys.n}: use fewer lists or --index flat"
        )
    sample = 0
    if not index.is_trained:
        sample = train_size(keys.n, factory, train_rows)
        rows = np.sort(np.random.default_rng(seed).choice(keys.n, size=sample, replace=False))
        try:
            index.train(keys.take(rows))
        except RuntimeError as err:
            raise InvalidArgument(
                f"--index {factory}: training on {sample} rows failed ({faiss_message(err)})"
            ) from None
    return index, sample, round(time.perf_counter() - start, 2)


def filled(index, keys, table_max_bytes: int = TABLE_MAX_BYTES) -> tuple[np.ndarray | None, float]:
    """(table, seconds): every row of the vector set `keys` added to the trained `index`, in row order;
    `table` is the keys' float32 rows in memory for re-scoring (None above `table_max_bytes`)."""
    start = time.perf_counter()
    table = np.empty((keys.n, keys.dim), np.float32) if keys.n * keys.dim * 4 <= table_max_bytes else None
    for key_start, block in keys.blocks():
        index.add(block)
        if table is not None:
            table[key_start : key_start + len(block)] = block
    return table, round(time.perf_counter() - start, 2)


def built_index(keys, factory: str, train_rows: int | None = None, seed: int = 0):
    """(index, table, training rows, {"train_s", "add_s"}): trained_index, then every key added (filled)."""
    index, sample, train_s = trained_index(keys, factory, train_rows, seed)
    table, add_s = filled(index, keys)
    return index, table, sample, {"train_s": train_s, "add_s": add_s}


class IndexSearcher:
    """A filled index over the vector set `keys` and what its results need: each query's `refine` x k
    candidates re-scored exactly (rescored_topk) and queries left short of k candidates searched exactly."""

    def __init__(self, index, table, keys, factory: str, k: int, refine: int, ef_search: int | None = None):
        self.index, self.table, self.keys, self.factory = index, table, keys, factory
        self.k = min(k, keys.n)
        self.refine, self.ef_search = refine, ef_search
        self.fetch = min(keys.n, max(self.k, refine * self.k))
        self.params: dict = {}
        self.counts = {"exact_fallback_queries": 0, "search_s": 0.0, "refine_s": 0.0}
        import faiss

        # an IVF index searched as it is (no rotation in front): its lists may be chosen elsewhere (coarse)
        ivf = faiss.try_extract_index_ivf(index)
        self.ivf = faiss.downcast_index(ivf) if ivf is not None and ivf.this == index.this else None

    @property
    def preassignable(self) -> bool:
        """Whether the lists a query probes can be chosen once (`coarse`) and handed to `search`."""
        return self.ivf is not None

    def coarse(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centroid similarities (b, nprobe), list ids (b, nprobe)): the lists each query probes at the nprobe
        last set, as the index's own search chooses them."""
        return self.ivf.quantizer.search(np.ascontiguousarray(queries), self.ivf.nprobe)

    def rows_of(self, cand: np.ndarray) -> np.ndarray:
        """The float32 rows (..., d) of key rows `cand` (row 0 where -1)."""
        safe = np.maximum(cand, 0)
        if self.table is not None:
            return self.table[safe]
        return self.keys.take(safe.ravel()).reshape(*safe.shape, -1)

    def products(self, q_rows: np.ndarray, cand: np.ndarray) -> np.ndarray | None:
        """The candidates' float32 products, read in place from the keys in memory (None: not in memory)."""
        return candidate_products(q_rows, self.table, cand) if self.table is not None else None

    def rescored(self, q_rows: np.ndarray, cand: np.ndarray, approx=None) -> tuple[np.ndarray, np.ndarray]:
        """The k best of each query's candidates (key rows, -1: none) by exact similarity; `approx`: their
        products where already computed."""
        approx = self.products(q_rows, cand) if approx is None else approx
        return rescored_topk(q_rows, cand, self.k, self.rows_of, approx)

    def set_probe(self, nprobe: int | None, fetch: int | None = None) -> dict:
        """nprobe and efSearch for the next searches (search_params); returns them."""
        self.params = search_params(self.index, self.factory, nprobe, self.ef_search, fetch or self.fetch)
        return self.params

    def tuning_search(self, block: np.ndarray, probe: int) -> tuple[np.ndarray, np.ndarray]:
        """The re-scored results of `block` at nprobe `probe` (what nprobe tuning tries)."""
        self.set_probe(probe)
        return self.rescored(block, self.index.search(block, self.fetch)[1])

    def search(
        self, queries: np.ndarray, query_block: int = 4096, assigned: tuple | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sims (b, k), rows (b, k)) of the unit rows `queries` at the nprobe last set, best first by exact
        similarity then key row; `assigned`: the lists to probe (`coarse` of these queries), else chosen here."""
        import faiss

        start = time.perf_counter()
        best_s = np.empty((len(queries), self.k), dtype=np.float32)
        best_i = np.empty((len(queries), self.k), dtype=np.int64)
        refine_s = 0.0

        def refine_rows(at: int, q_rows: np.ndarray, c_rows: np.ndarray, approx) -> None:
            best_s[at : at + len(q_rows)], best_i[at : at + len(q_rows)] = self.rescored(
                q_rows, c_rows, approx
            )

        # the candidates' products run on FAISS's OpenMP threads; the selections, gathers and float64 sums
        # after them release the GIL: with the keys in memory, one thread per core
        workers = max(1, faiss.omp_get_max_threads()) if self.table is not None else 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for q_start in range(0, len(queries), query_block):
                q_block = queries[q_start : q_start + query_block]
                if assigned is None:
                    _, cand = self.index.search(q_block, self.fetch)  # (b, fetch) key rows, -1: lists ran out
                else:
                    rows = slice(q_start, q_start + query_block)
                    _, cand = self.ivf.search_preassigned(
                        q_block, self.fetch, assigned[1][rows], assigned[0][rows]
                    )
                refine_start = time.perf_counter()
                approx = self.products(q_block, cand)  # (b, fetch), or None
                jobs = [
                    (q_start + a, q_block[a : a + REFINE_ROWS], cand[a : a + REFINE_ROWS])
                    + (None if approx is None else approx[a : a + REFINE_ROWS],)
                    for a in range(0, len(q_block), REFINE_ROWS)
                ]
                list(pool.map(lambda job: refine_rows(*job), jobs))
                refine_s += time.perf_counter() - refine_start
        short = np.flatnonzero((best_i < 0).any(axis=1))
        if len(short):  # rare: an exact search for the queries whose probed lists held fewer than k keys
            best_s[short], best_i[short], _ = exact_search(
                UnitRows(queries[short]), self.keys, self.k, "float32"
            )
        self.counts["exact_fallback_queries"] += len(short)
        self.counts["search_s"] += time.perf_counter() - start
        self.counts["refine_s"] += refine_s  # of search_s: gathering and re-scoring the candidates
        return best_s, best_i


def approximate_search(
    queries,
    keys,
    k: int,
    factory: str,
    nprobe: int | None = None,
    ef_search: int | None = None,
    refine: int = DEFAULT_REFINE,
    train_rows: int | None = None,
    seed: int = 0,
    query_block: int = 4096,
    recall_target: float | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """(sims (nq, k'), rows (nq, k'), info), k' = min(k, keys.n), best first by exact similarity."""
    index, table, sample, timings = built_index(keys, factory, train_rows, seed)
    searcher = IndexSearcher(index, table, keys, factory, k, refine, ef_search)
    lists = ivf_lists(factory)
    tuning = None
    if lists and recall_target:  # nprobe not fixed by the user: chosen for the target on sampled queries
        start_probe = min(nprobe or DEFAULT_NPROBE, lists)
        nprobe, tuning = tune_nprobe(
            start_probe, lists, recall_target, queries, keys, searcher.k, searcher.tuning_search, seed=seed
        )
        timings["tune_s"] = tuning["seconds"]
    params = searcher.set_probe(nprobe, searcher.k * refine)
    best_s = np.empty((queries.n, searcher.k), dtype=np.float32)
    best_i = np.empty((queries.n, searcher.k), dtype=np.int64)
    for q_start, q_block in queries.blocks():
        rows = slice(q_start, q_start + len(q_block))
        best_s[rows], best_i[rows] = searcher.search(q_block, query_block)
    timings["search_s"] = round(searcher.counts["search_s"], 2)
    timings["refine_s"] = round(searcher.counts["refine_s"], 2)
    info = {"index": "approximate", "factory": factory, "metric": "inner product", "keys": keys.n}
    info |= {"nlist": lists, **params, "train_size": sample, "fetched_per_query": searcher.fetch}
    info |= {"refine": refine, "exact_fallback_queries": searcher.counts["exact_fallback_queries"]}
    info |= {"seed": seed, **timings}
    if tuning is not None:
        info["nprobe_tuning"] = tuning
    return best_s, best_i, info


def candidate_products(queries: np.ndarray, table: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """(b, c) float32 products of each query (b, d) with its candidates' rows of `table` (n, d), key rows
    `cand` (b, c) (-1: none, -inf out). FAISS reads each candidate row in place, on every OpenMP thread;
    gathering the rows into a (b, c, d) array first is slower (docs/lab/mining-indexes.md)."""
    import faiss

    q = np.ascontiguousarray(queries, dtype=np.float32)
    ids = np.ascontiguousarray(np.maximum(cand, 0), dtype=np.int64)
    out = np.empty(cand.shape, dtype=np.float32)
    faiss.fvec_inner_products_by_idx(
        faiss.swig_ptr(out),
        faiss.swig_ptr(q),
        faiss.swig_ptr(table),
        faiss.swig_ptr(ids),
        table.shape[1],
        len(q),
        cand.shape[1],
    )
    out[cand < 0] = -np.inf
    return out


def rescored_topk(queries: np.ndarray, cand: np.ndarray, k: int, rows_of, approx: np.ndarray | None = None):
    """(sims (b, k), rows (b, k)): the k best candidates by exact similarity (exact_scores), then key row;
    `cand` (b, c) are the candidates' key rows (-1: none), `rows_of(key rows)` returns their float32 rows
    (any row where a key row is -1), and `approx` their float32 products where already computed
    (candidate_products; else they are computed from the gathered rows).

    The same result as re-scoring every candidate exactly, for a fraction of the cost: float32 products rank
    the candidates, only the best k + RESCORE_EXTRA are re-scored in float64, and a query whose k-th exact
    similarity does not exceed every other candidate's product by the products' error bound (whatever the
    order of their sums) has all its candidates re-scored (a candidate left out could otherwise tie or beat
    it)."""
    b, c = cand.shape
    if approx is None:
        approx = np.einsum("rd,rcd->rc", queries, rows_of(cand))  # (b, c) float32 products
        approx[cand < 0] = -np.inf
    keep = min(c, k + RESCORE_EXTRA)
    if keep < c:
        top = np.argpartition(-approx, keep - 1, axis=1)[:, :keep]  # (b, keep), unordered
        rest = np.ones((b, c), dtype=bool)
        np.put_along_axis(rest, top, False, axis=1)
        beyond = np.where(rest, approx, -np.inf).max(axis=1)  # (b,) best product left out
    else:
        top, beyond = np.broadcast_to(np.arange(c), (b, c)), np.full(b, -np.inf, dtype=np.float32)
    cand_top = np.take_along_axis(cand, top, axis=1)
    exact = exact_scores(queries, rows_of(cand_top))  # (b, keep)
    exact[cand_top < 0] = -np.inf
    order = np.lexsort((cand_top, -exact), axis=1)[:, :k]  # (b, k) by exact score, then key row
    sims, rows = np.take_along_axis(exact, order, axis=1), np.take_along_axis(cand_top, order, axis=1)
    unsure = ~(sims[:, -1] > beyond + product_error("float32", queries.shape[1]))
    unsure &= np.isfinite(beyond)
    if unsure.any():  # near-ties with a candidate left out: re-score all of this query's candidates
        full = exact_scores(queries[unsure], rows_of(cand[unsure]))  # (u, c)
        full[cand[unsure] < 0] = -np.inf
        order = np.lexsort((cand[unsure], -full), axis=1)[:, :k]
        sims[unsure] = np.take_along_axis(full, order, axis=1)
        rows[unsure] = np.take_along_axis(cand[unsure], order, axis=1)
    return sims, rows


def _seed(index, seed: int) -> None:
    """Seed the k-means of the coarse quantizer and the product quantizer (the same keys, the same index);
    polysemous training (Hamming pre-filtering, not searched here) is skipped: it dominated build time."""
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is None:
        return
    ivf = faiss.downcast_index(ivf)
    ivf.cp.seed = seed
    if hasattr(ivf, "pq"):
        ivf.pq.cp.seed = seed
    if hasattr(ivf, "do_polysemous_training"):
        ivf.do_polysemous_training = False


def search_params(index, factory: str, nprobe: int | None, ef_search: int | None, fetch: int) -> dict:
    """Set nprobe (IVF; at most the list count) and efSearch: an HNSW index's at least the candidates
    fetched; an HNSW coarse quantizer's (IVFn_HNSWm) at least nprobe, since it only names the lists to
    probe (the candidates come from the lists)."""
    import faiss

    space, params = faiss.ParameterSpace(), {}
    lists = ivf_lists(factory)
    if lists:
        params["nprobe"] = min(nprobe or DEFAULT_NPROBE, lists)
        space.set_index_parameter(index, "nprobe", params["nprobe"])
    if uses_hnsw(factory):
        name, floor = ("quantizer_efSearch", params["nprobe"]) if lists else ("efSearch", fetch)
        params["ef_search"] = max(ef_search or DEFAULT_EF_SEARCH, floor)
        space.set_index_parameter(index, name, params["ef_search"])
    return params
