"""Bitext mining at scale with `sentkit mine`'s code: N x N sentences read from shard folders, per stage.

For each size, planted synthetic vectors (bench/bitext_mining.py's `planted_bitext`: a shared mean and a
decaying spectrum, a fraction of x rows with a noisy translation hidden in y) are written as two shard
folders the way `sentkit encode --shard-size` writes them, then mined as `sentkit mine` does: k-NN
forward and backward (exact flat up to --flat-max keys, IVF-PQ above), margin scores, max retrieval,
the TSV. Each stage reports wall and CPU seconds and the peak resident memory while it ran (sampled
every 20 ms). Then recall@k of IVF-PQ against exact search on a sample of queries, and the F1 of the
mined pairs against the planted ones. Writes bench/out/mine_scale.json.

    python bench/mine_scale.py [--sizes 100000,1000000] [--dim 384] [--threads 2] [--flat-max 250000]
    python bench/mine_scale.py --small    # 5,000 x 5,000 and an IVF-PQ recall check: the script runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import provenance, write_result  # noqa: E402
from bitext_mining import planted_bitext  # noqa: E402

from sentkit.corpus.encode_run import EncodeRequest, encode_corpus  # noqa: E402
from sentkit.corpus.shards import ShardSettings  # noqa: E402
from sentkit.mining.margin import candidate_scores  # noqa: E402
from sentkit.mining.mine import Mined, write_pairs  # noqa: E402
from sentkit.mining.retrieval import select_pairs  # noqa: E402
from sentkit.mining.search import IndexConfig, flat_search, ivfpq_search, search  # noqa: E402
from sentkit.mining.vectors import ArrayVectors, ShardVectors  # noqa: E402
from sentkit.tasks.bitext import best_threshold, prf_at_threshold  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "mine_scale.json"


class RowVectors:
    """An "encoder" for the shard writer: line `i` of the synthetic corpus is vector `i` of a table."""

    name = "planted-vectors"

    def __init__(self, table: np.ndarray) -> None:
        self.embeddings = table  # also what the folder's model fingerprint is computed from

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self.embeddings[[int(s.rsplit(" ", 1)[1]) for s in sentences]]


class StageMeter:
    """Wall and CPU seconds and the peak RSS (sampled every 20 ms) of named stages."""

    def __init__(self) -> None:
        self.stages: dict[str, dict] = {}

    @contextmanager
    def stage(self, name: str):
        peak, running = [_rss_mib()], [True]

        def sample():
            while running[0]:
                peak[0] = max(peak[0], _rss_mib())
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            running[0] = False
            sampler.join()
            self.stages[name] = {
                "wall_s": round(time.perf_counter() - wall, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
                "peak_rss_mib": round(max(peak[0], _rss_mib()), 1),
            }
            print(f"  {name:<16} {self.stages[name]}", flush=True)


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def write_side(folder: Path, vectors: np.ndarray, prefix: str, shard_size: int) -> ShardVectors:
    """A shard folder of `vectors` written by sentkit's encode path (texts "prefix i")."""
    corpus = folder.with_suffix(".txt")
    with corpus.open("w") as fh:
        for start in range(0, len(vectors), 100_000):
            fh.write("".join(f"{prefix} {i}\n" for i in range(start, min(start + 100_000, len(vectors)))))
    settings = ShardSettings(shard_size=shard_size, batch_size=shard_size)
    request = EncodeRequest(str(corpus), str(folder), "planted", settings, engine="local")
    encode_corpus(request, load_model=lambda name: RowVectors(vectors), log=lambda line: None)
    return ShardVectors(folder)


def recall_at_k(
    x, y, k: int, config: IndexConfig, sample: int, seed: int, ivf_nn: np.ndarray | None, gold: np.ndarray
) -> dict:
    """Recall@k of IVF-PQ against exact search for `sample` random queries (IVF-PQ built here unless the
    mining run already used it: then its neighbour lists `ivf_nn` are compared), and how often each search
    has a sampled query's planted translation among its k neighbours. Rows without a translation have
    near-tied unrelated neighbours, which no approximate index ranks exactly: recall@k is pessimistic there."""
    rows = np.sort(np.random.default_rng(seed).choice(x.n, size=min(sample, x.n), replace=False))
    queries = ArrayVectors(x.take(rows), [""] * len(rows), [""] * len(rows))
    start = time.perf_counter()
    _, exact = flat_search(queries, y, k)
    exact_s = time.perf_counter() - start
    info = {}
    if ivf_nn is None:
        _, ivf_rows, info = ivfpq_search(queries, y, k, config)
    else:
        ivf_rows = ivf_nn[rows]
    hits = [len(set(a) & set(b)) for a, b in zip(exact, ivf_rows)]
    planted = gold[rows] >= 0
    return {
        "planted_found_exact": round(
            float(np.mean([g in e for g, e in zip(gold[rows][planted], exact[planted])])), 4
        ),
        "planted_found_ivfpq": round(
            float(np.mean([g in e for g, e in zip(gold[rows][planted], ivf_rows[planted])])), 4
        ),
        "queries": len(rows),
        f"recall_at_{k}": round(float(np.mean(hits)) / k, 4),
        "recall_at_1": round(float(np.mean(exact[:, 0] == ivf_rows[:, 0])), 4),
        "exact_search_s": round(exact_s, 2),
        "ivfpq": {key: v for key, v in info.items() if key != "metric"},
    }


def run_size(n: int, args, work: Path) -> dict:
    print(f"{n} x {n}, dim {args.dim}", flush=True)
    meter = StageMeter()
    with meter.stage("generate"):
        x, y, gold = planted_bitext(n, args.dim, args.paired, args.noise, args.seed)
    with meter.stage("write_shards"):
        xs = write_side(work / f"x{n}", x, "src", args.shard_size)
        ys = write_side(work / f"y{n}", y, "tgt", args.shard_size)
    del x, y
    config = IndexConfig(kind=args.index, flat_max=args.flat_max, nprobe=args.nprobe, refine=args.refine)
    with meter.stage("knn_forward"):
        x_sims, x_nn, fwd = search(xs, ys, args.k, config)
    with meter.stage("knn_backward"):
        y_sims, y_nn, bwd = search(ys, xs, args.k, config)
    neighbours = (x_sims, x_nn, y_sims, y_nn)
    with meter.stage("margin"):
        x_scores, y_scores = candidate_scores(neighbours, "margin")
    with meter.stage("retrieve_max"):
        src, tgt, score = select_pairs(neighbours, x_scores, y_scores, "max")
    mined = Mined(src, tgt, score, len(src), {})
    with meter.stage("write_tsv"):
        write_pairs(work / f"pairs{n}.tsv", mined, xs, ys)
    correct = gold[src] == tgt
    n_gold = int((gold >= 0).sum())
    p, r, f = prf_at_threshold(score, correct, n_gold, best_threshold(score, correct, n_gold))
    with meter.stage("recall_sample"):
        ivf_nn = x_nn if fwd["index"] == "ivfpq" else None
        recall = recall_at_k(xs, ys, args.k, config, args.recall_queries, args.seed, ivf_nn, gold)
    print(
        f"  recall@{args.k} IVF-PQ vs exact: {recall[f'recall_at_{args.k}']}; planted translation in the k-NN: "
        f"exact {recall['planted_found_exact']}, IVF-PQ {recall['planted_found_ivfpq']}; planted F1 {f:.2f}",
        flush=True,
    )
    return {
        "n": n,
        "stages": meter.stages,
        "index": {"forward": fwd, "backward": bwd},
        "pairs": len(src),
        "planted_pairs": n_gold,
        "precision": round(p, 2),
        "recall": round(r, 2),
        "f1": round(f, 2),
        "recall_ivfpq_vs_exact": recall,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="sentences on each side, comma-separated")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--paired", type=float, default=0.1)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--index", default="auto", choices=["auto", "flat", "ivfpq"])
    parser.add_argument("--flat-max", type=int, default=250_000)
    parser.add_argument("--nprobe", type=int, default=32)
    parser.add_argument(
        "--refine", type=int, default=4, help="IVF-PQ candidates per neighbour, re-scored exactly"
    )
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--recall-queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="FAISS/OpenMP threads (default: all cores)")
    parser.add_argument("--small", action="store_true", help="5,000 x 5,000, 1,000-row shards")
    parser.add_argument(
        "--work", type=Path, default=None, help="folder for the shard folders (default: a temp dir)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.small:
        sizes, args.shard_size, args.recall_queries = [5000], 1000, 500
    work = args.work or Path(tempfile.mkdtemp(prefix="mine_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        runs = [run_size(n, args, work) for n in sizes]
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "what": "sentkit.mining on planted synthetic vectors from shard folders: k-NN both ways, margin, max",
        "dim": args.dim,
        "k": args.k,
        "paired": args.paired,
        "noise": args.noise,
        "flat_max": args.flat_max,
        "threads": args.threads or os.cpu_count(),
        "gpus": faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0,
        "runs": runs,
        "load_average_1min": os.getloadavg()[0],
        **provenance(faiss=faiss.__version__),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
