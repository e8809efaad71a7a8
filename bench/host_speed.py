"""How fast this host is right now, on the kernels bitext mining spends its time in: a fixed, seeded probe
recorded beside a timed run, so runs made on different days (a shared host drifts by a quarter) can be
compared by what the machine did, not only by their wall time.

Three timings on seeded random vectors (the same bytes on every host): a float32 matrix product (numpy),
an exact inner-product search (FAISS IndexFlatIP) and a fast-scan PQ search (FAISS `PQ<m>x4fs`, the
codes `sentkit mine`'s IVF-PQ index scans). Each is the best of `repeats` calls after one warm-up.

    python -m bench.host_speed        # prints the probe as JSON
"""

from __future__ import annotations

import json

import numpy as np

from sentkit.mining.gemm import best_seconds
from sentkit.mining.index_spec import fastscan_pq_m


def host_speed(
    rows: int = 200_000, queries: int = 1_000, dim: int = 384, k: int = 4, repeats: int = 3, seed: int = 0
) -> dict:
    """{"sgemm_gflops", "flat_search_s", "pq_fastscan_search_s", "sizes"}: the probe's three timings."""
    import faiss

    rng = np.random.default_rng(seed)
    base = rng.standard_normal((rows, dim), dtype=np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    query = base[rng.choice(rows, queries, replace=False)] + 0.05 * rng.standard_normal(
        (queries, dim), dtype=np.float32
    )
    a = rng.standard_normal((4096, dim), dtype=np.float32)
    b = rng.standard_normal((dim, 4096), dtype=np.float32)
    sgemm_s = best_seconds(lambda: a @ b, repeats)

    flat = faiss.IndexFlatIP(dim)
    flat.add(base)
    flat_s = best_seconds(lambda: flat.search(query, k), repeats)

    pq = faiss.index_factory(
        dim, f"PQ{fastscan_pq_m(dim)}x4fs", faiss.METRIC_INNER_PRODUCT
    )  # the preset's codes
    pq.train(base[: min(rows, 20_000)])
    pq.add(base)
    pq_s = best_seconds(lambda: pq.search(query, k), repeats)
    return {
        "sgemm_gflops": round(2 * 4096 * dim * 4096 / sgemm_s / 1e9, 1),
        "flat_search_s": round(flat_s, 4),
        "pq_fastscan_search_s": round(pq_s, 4),
        "sizes": {"rows": rows, "queries": queries, "dim": dim, "k": k, "repeats": repeats, "seed": seed},
        "faiss_threads": faiss.omp_get_max_threads(),
    }


if __name__ == "__main__":
    print(json.dumps(host_speed(), indent=1))
