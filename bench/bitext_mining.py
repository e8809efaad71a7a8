"""Bitext mining at scale: sentkit's BUCC code path (`mine_pairs`, ratio margin, k = 4) on N x N sentences.

Vectors are synthetic but shaped like sentence embeddings: a shared mean direction and a decaying
spectrum (so unrelated sentences have cosines around 0.3 and some rows are hubs), with a planted
fraction of x rows whose translation is a noisy copy hidden at a random row of y (cosine around 0.8).
Mining is the exact search BUCC uses (sentkit.mining.exact.cosine_knn, the one `sentkit mine` runs),
both directions, then the one-to-one greedy selection; the F1 of the mined pairs against the planted ones
(best threshold) is the sanity check. Reports wall and process CPU seconds, peak memory (process RSS
high-water mark and numpy's peak via tracemalloc), and the same mining with FAISS's exact GPU index where
faiss has a GPU (`faiss.get_num_gpus() > 0`). Writes bench/out/bitext_mining.json.

    python -m bench.bitext_mining [--n 100000] [--dim 384] [--paired 0.1] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np

from bench.common import provenance, write_result
from sentkit.tasks.bitext import MARGIN_K, best_threshold, mine_pairs, prf_at_threshold
from sentkit.tasks.vectors import l2_normalize

OUT = Path(__file__).resolve().parent / "out" / "bitext_mining.json"
GPU_QUERY_CHUNK = 65_536  # queries per GPU search call: bounds the (chunk, k) result and FAISS's tiles


def planted_bitext(
    n: int, dim: int, paired: float, noise: float, seed: int, chunk: int = 20_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x (n, dim), y (n, dim), gold (n,)): gold[i] is the y row of x row i's translation, -1 if none.

    Rows are mean + spectrum-scaled Gaussian (eigenvalue i ~ 1/i); a translation is its source's
    latent plus Gaussian noise of `noise` times the latent's scale. Built in chunks of float32 rows so
    the generator's float64 temporaries stay small next to the 2 x n x dim float32 result.
    """
    rng = np.random.default_rng(seed)
    scale = (1.0 / np.sqrt(np.arange(1, dim + 1))).astype(np.float32)  # (dim,) std per axis
    mean = (rng.normal(size=dim) * 0.65 * scale).astype(np.float32)  # (dim,) shared direction
    n_pairs = int(round(paired * n))
    gold = np.full(n, -1, dtype=np.int64)
    gold[rng.choice(n, size=n_pairs, replace=False)] = rng.choice(n, size=n_pairs, replace=False)
    x = np.empty((n, dim), dtype=np.float32)
    y = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        x[rows] = rng.standard_normal((rows.stop - start, dim), dtype=np.float32) * scale + mean
        y[rows] = rng.standard_normal((rows.stop - start, dim), dtype=np.float32) * scale + mean
    src = np.flatnonzero(gold >= 0)
    for start in range(0, len(src), chunk):
        part = src[start : start + chunk]
        latent = x[part] - mean  # (c, dim)
        y[gold[part]] = latent + mean + noise * rng.standard_normal(latent.shape, dtype=np.float32) * scale
    return x, y, gold


def gpu_cosine_knn(queries: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`cosine_knn` on the GPU(s): the same normalisation and exact inner-product index, queries in chunks."""
    import faiss

    q, kv = l2_normalize(queries), l2_normalize(keys)
    index = faiss.index_cpu_to_all_gpus(faiss.IndexFlatIP(kv.shape[1]))
    index.add(kv)
    k = min(k, kv.shape[0])
    sims = np.empty((len(q), k), dtype=np.float32)
    idx = np.empty((len(q), k), dtype=np.int64)
    for start in range(0, len(q), GPU_QUERY_CHUNK):
        rows = slice(start, start + GPU_QUERY_CHUNK)
        sims[rows], idx[rows] = index.search(q[rows], k)  # (chunk, k) each
    return sims, idx


def rss_peak_mib() -> float:
    """This process's resident-set high-water mark (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mine_and_score(x: np.ndarray, y: np.ndarray, gold: np.ndarray, knn=None) -> dict:
    """Margin mining with `knn` (sentkit's CPU search if None), timed, with memory peaks and P/R/F1."""
    kwargs = {} if knn is None else {"knn": knn}
    rss_before = rss_peak_mib()
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    src, trg, score = mine_pairs(x, y, "margin", MARGIN_K, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    numpy_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    correct = gold[src] == trg
    n_gold = int((gold >= 0).sum())
    threshold = best_threshold(score, correct, n_gold)
    p, r, f = prf_at_threshold(score, correct, n_gold, threshold)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "rss_peak_mib": round(rss_peak_mib(), 1),
        "rss_peak_increase_mib": round(rss_peak_mib() - rss_before, 1),
        "numpy_peak_mib": round(numpy_peak, 1),
        "candidates": len(src),
        "precision": round(p, 2),
        "recall": round(r, 2),
        "f1": round(f, 2),
        "threshold": threshold,
        "pairs": (src, trg),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="sentences on each side")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--paired", type=float, default=0.1, help="fraction of x rows with a planted translation"
    )
    parser.add_argument(
        "--noise", type=float, default=1.0, help="translation noise, relative to the latent scale"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="FAISS/OpenMP threads (default: all cores)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    start = time.perf_counter()
    x, y, gold = planted_bitext(args.n, args.dim, args.paired, args.noise, args.seed)
    generate_s = time.perf_counter() - start
    m = min(1000, args.n // 2)  # mean cosines of m unrelated (x_i, y_m+i) rows and of m planted pairs
    random_cos = float(np.mean(np.sum(l2_normalize(x[:m]) * l2_normalize(y[m : 2 * m]), axis=1)))
    src = np.flatnonzero(gold >= 0)[:m]
    pair_cos = float(np.mean(np.sum(l2_normalize(x[src]) * l2_normalize(y[gold[src]]), axis=1)))
    print(
        f"{args.n} x {args.n} sentences, dim {args.dim}, {int((gold >= 0).sum())} planted pairs; "
        f"mean cosine: unrelated {random_cos:.2f}, planted {pair_cos:.2f} (generated in {generate_s:.1f} s)"
    )
    input_mib = (x.nbytes + y.nbytes) / 2**20
    runs: dict[str, dict] = {"cpu": mine_and_score(x, y, gold)}
    n_gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if n_gpus > 0:
        mine_and_score(x[:1000], y[:1000], gold[:1000], knn=gpu_cosine_knn)  # warm-up: CUDA context, cuBLAS
        runs["gpu"] = mine_and_score(x, y, gold, knn=gpu_cosine_knn)
        cpu_pairs, gpu_pairs = runs["cpu"]["pairs"], runs["gpu"]["pairs"]
        same = set(zip(*map(np.ndarray.tolist, cpu_pairs))) & set(zip(*map(np.ndarray.tolist, gpu_pairs)))
        runs["gpu"]["pairs_shared_with_cpu"] = len(same) / max(len(cpu_pairs[0]), 1)
    else:
        print("no GPU: skipped (faiss reports 0 GPUs; install faiss-gpu on a CUDA machine)")
    for run in runs.values():
        run.pop("pairs")

    print(
        f"\n{'device':<7} {'wall s':>8} {'cpu s':>8} {'RSS peak MiB':>13} {'numpy peak MiB':>15} {'P':>6} {'R':>6} {'F1':>6}"
    )
    for name, r in runs.items():
        print(
            f"{name:<7} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['rss_peak_mib']:13.0f} {r['numpy_peak_mib']:15.0f} "
            f"{r['precision']:6.2f} {r['recall']:6.2f} {r['f1']:6.2f}"
        )
    print(f"(inputs: {input_mib:.0f} MiB of float32 vectors)")
    result = {
        "what": "mine_pairs (ratio margin, k=4, max retrieval, one-to-one) on planted synthetic vectors",
        "n": args.n,
        "dim": args.dim,
        "paired": args.paired,
        "noise": args.noise,
        "seed": args.seed,
        "planted_pairs": int((gold >= 0).sum()),
        "mean_cosine_unrelated": random_cos,
        "mean_cosine_planted": pair_cos,
        "input_mib": round(input_mib, 1),
        "generate_s": round(generate_s, 2),
        "threads": args.threads or os.cpu_count(),
        "gpus": n_gpus,
        "runs": runs,
        "load_average_1min": os.getloadavg()[0],
        **provenance(faiss=faiss.__version__),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
