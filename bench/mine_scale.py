"""Bitext mining at scale with `sentkit mine`'s code: N x N sentences read from shard folders, per stage.

First the machine's bound: torch's float32 and bfloat16 matrix-product throughput (GFLOP/s) and the CPU
flags that decide bfloat16 (avx2, avx512f, avx512_vnni, avx512_bf16, AMX). Then, for each size, planted
synthetic vectors (bench/bitext_mining.py's `planted_bitext`: a shared mean and a decaying spectrum, a
fraction of x rows with a noisy translation hidden in y) are written as two shard folders the way
`sentkit encode --shard-size` writes them, then mined as `sentkit mine` does: k-NN forward and backward
(`--index`: a preset or a FAISS factory string; auto is exact up to --flat-max squared), margin scores,
max retrieval, the TSV. Each stage reports wall and CPU seconds and the peak resident memory while it
ran (sampled every 20 ms); each exact search its GFLOP/s as a fraction of the fastest dtype's measured
bound; each approximate search the recall@k that mining measured. Then, on a sample of queries, how
often exact search and the run's index have the planted translation among the k neighbours, and the F1
of the mined pairs against the planted ones. Writes bench/out/mine_scale.json.

    python -m bench.mine_scale [--sizes 100000,1000000] [--dim 384] [--threads 2] [--index auto]
    python -m bench.mine_scale --small    # 5,000 x 5,000: the script runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bitext_mining import planted_bitext
from bench.common import StageMeter, provenance, write_result
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings
from sentkit.mining.exact import UnitRows, exact_search
from sentkit.mining.exchange import both_exchanged
from sentkit.mining.gemm import matmul_gflops, native_bf16
from sentkit.mining.index_spec import parse_index
from sentkit.mining.margin import candidate_scores
from sentkit.mining.mine import Mined, write_pairs
from sentkit.mining.retrieval import select_pairs
from sentkit.mining.search import IndexConfig, is_approximate_record, search
from sentkit.mining.vectors import ShardVectors
from sentkit.provenance import cpu_flags
from sentkit.tasks.bitext import best_threshold, prf_at_threshold

OUT = Path(__file__).resolve().parent / "out" / "mine_scale.json"


class RowVectors:
    """An "encoder" for the shard writer: line `i` of the synthetic corpus is vector `i` of a table."""

    name = "planted-vectors"

    def __init__(self, table: np.ndarray) -> None:
        self.embeddings = table  # also what the folder's model fingerprint is computed from

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self.embeddings[[int(s.rsplit(" ", 1)[1]) for s in sentences]]


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


def machine_bound(dim: int) -> dict:
    """The CPU flags and torch's float32 and bfloat16 product throughput at this dim (GFLOP/s); `bound`:
    the fastest dtype's (bfloat16 counts only where the CPU has it natively)."""
    flags = cpu_flags()
    gflops = {dtype: round(matmul_gflops(dtype, dim=dim, repeats=10), 1) for dtype in ("float32", "bfloat16")}
    usable = gflops if native_bf16(flags) else {"float32": gflops["float32"]}
    fastest = max(usable, key=usable.get)
    print(f"matmul GFLOP/s: {gflops}; CPU flags: {list(flags)}", flush=True)
    return {
        "cpu_flags": list(flags),
        "matmul_gflops": gflops,
        "bound_dtype": fastest,
        "bound_gflops": usable[fastest],
    }


def of_bound(info: dict, bound: dict) -> dict:
    """An exact search's GFLOP/s as a fraction of the CPU's bound (empty for approximate searches and for
    searches on a GPU, whose rate is recorded as it is)."""
    if info["index"] != "flat" or not info["search_s"] or info.get("device") == "cuda":
        return {}
    return {"fraction_of_bound": round(info["gflop"] / info["search_s"] / bound["bound_gflops"], 3)}


def planted_sample(
    x, y, k: int, nn: np.ndarray, gold: np.ndarray, sample: int, seed: int, device: str = "cpu"
) -> dict:
    """On `sample` random queries: how often exact search and the run's neighbour lists `nn` have the
    planted translation among the k neighbours, and the run's recall@k against exact search."""
    rows = np.sort(np.random.default_rng(seed).choice(x.n, size=min(sample, x.n), replace=False))
    start = time.perf_counter()
    _, exact, _ = exact_search(UnitRows(x.take(rows)), y, k, device=device)
    exact_s = time.perf_counter() - start
    run = nn[rows]
    planted = gold[rows] >= 0
    return {
        "planted_found_exact": round(
            float(np.mean([g in e for g, e in zip(gold[rows][planted], exact[planted])])), 4
        ),
        "planted_found_run": round(
            float(np.mean([g in e for g, e in zip(gold[rows][planted], run[planted])])), 4
        ),
        "queries": len(rows),
        f"recall_at_{k}": round(float(np.mean([len(set(a) & set(b)) for a, b in zip(exact, run)])) / k, 4),
        "exact_search_s": round(exact_s, 2),
    }


def run_size(n: int, args, work: Path, bound: dict) -> dict:
    print(f"{n} x {n}, dim {args.dim}", flush=True)
    meter = StageMeter()
    with meter.stage("generate"):
        x, y, gold = planted_bitext(n, args.dim, args.paired, args.noise, args.seed)
    with meter.stage("write_shards"):
        xs = write_side(work / f"x{n}", x, "src", args.shard_size)
        ys = write_side(work / f"y{n}", y, "tgt", args.shard_size)
    del x, y
    config = IndexConfig(
        kind=args.index,
        flat_max=args.flat_max,
        nlist=args.nlist,
        nprobe=args.nprobe,
        refine=args.refine,
        exact_dtype=args.exact_dtype,
        exact_device=args.exact_device,
        recall_queries=args.recall_queries,
        seed=args.seed,
    )
    with meter.stage("knn_forward"):
        x_sims, x_nn, fwd = search(xs, ys, args.k, config)
    with meter.stage("knn_backward"):
        y_sims, y_nn, bwd = search(ys, xs, args.k, config)
    if is_approximate_record(fwd) or is_approximate_record(bwd):
        with meter.stage("exchange"):  # as sentkit mine does (its recall above: the index's own lists)
            (x_sims, x_nn), (y_sims, y_nn), gained = both_exchanged(x_sims, x_nn, y_sims, y_nn)
            fwd["from_other_direction"], bwd["from_other_direction"] = gained
    for direction, info in (("forward", fwd), ("backward", bwd)):
        info |= of_bound(info, bound)
        print(
            f"  {direction}: {info['factory']} {info.get('dtype', '')} "
            f"{info.get('fraction_of_bound', '')} {info.get('recall', '')}",
            flush=True,
        )
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
    with meter.stage("planted_sample"):
        sample = planted_sample(
            xs, ys, args.k, x_nn, gold, args.recall_queries, args.seed, fwd.get("device", "cpu")
        )
    print(
        f"  planted translation in the k-NN: exact {sample['planted_found_exact']}, this run "
        f"{sample['planted_found_run']}; recall@{args.k} {sample[f'recall_at_{args.k}']}; planted F1 {f:.2f}",
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
        "planted_sample": sample,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="sentences on each side, comma-separated")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--paired", type=float, default=0.1)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument(
        "--index", default="auto", type=parse_index, help="a preset or a FAISS factory string"
    )
    parser.add_argument(
        "--flat-max", type=int, default=None, help="auto: exact up to this squared (sentkit's)"
    )
    parser.add_argument("--exact-dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--exact-device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--nprobe", type=int, default=None)
    parser.add_argument(
        "--nlist", type=int, default=None, help="IVF lists of the ivfpq / ivf-fastscan presets"
    )
    parser.add_argument(
        "--refine", type=int, default=None, help="candidates per neighbour, re-scored exactly (preset's)"
    )
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--recall-queries", type=int, default=1000)
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
        import torch

        faiss.omp_set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.small:
        sizes, args.shard_size, args.recall_queries = [5000], 1000, 500
    bound = machine_bound(args.dim)
    work = args.work or Path(tempfile.mkdtemp(prefix="mine_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        runs = [run_size(n, args, work, bound) for n in sizes]
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "what": "sentkit.mining on planted synthetic vectors from shard folders: k-NN both ways, margin, max; "
        "the machine's matrix-product bound per dtype",
        "dim": args.dim,
        "k": args.k,
        "paired": args.paired,
        "noise": args.noise,
        "flat_max": args.flat_max,
        "threads": args.threads or os.cpu_count(),
        "gpus": faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0,
        **bound,
        "runs": runs,
        "load_average_1min": os.getloadavg()[0],
        **provenance(faiss=faiss.__version__),
    }
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
