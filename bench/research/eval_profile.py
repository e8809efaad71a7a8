"""Where evaluation time goes: each task of a suite split into data loading, encoding and scoring.

Runs the tasks as `sentkit eval` does (one run-wide cache of vectors, so tasks sharing sentences
encode them once; each task seeded with `--seed`) and times, per task: loading its files, the
encoder's calls (wall and process CPU) and everything else in `evaluate` (the scoring: k-means,
FAISS search, logistic regression, Spearman ...); clustering tasks also report their k-means seconds.
`--model random:384` stands in a seeded random vector per sentence for the model: a profile of loading
and scoring alone, in minutes even for `--suite all` (its scores are chance level, its k-means runs
need more iterations than on real vectors). Prints a table and writes bench/out/eval_profile.json
(after every task) with the machine, versions and load average.

    python -m bench.research.eval_profile [--model minilm-en] [--suite default] [--kmeans sklearn] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from sentkit.atomic import atomic_write_json
from sentkit.provenance import machine_info, package_versions, seed_everything

OUT = Path(__file__).resolve().parents[1] / "out" / "eval_profile.json"

# what `evaluate` spends its non-encoding time on, by task class
SCORING = {
    "STSTask": "cosine + Spearman",
    "AlignmentUniformityTask": "alignment / uniformity",
    "TatoebaTask": "exact FAISS 1-NN, both directions",
    "BuccTask": "FAISS k-NN + margin mining",
    "ClusteringTask": "k-means (3 seeds x n_init 10) + Hungarian",
    "KNNTask": "exact FAISS 1-NN",
    "CategoryKNNTask": "exact FAISS 1-NN",
    "TransferTask": "logistic regression",
    "QAbotTask": "cosine ranking",
}


class RandomEncoder:
    """`random:DIM`: a Gaussian vector per distinct sentence (seeded by its text), so a profile measures
    loading and scoring alone, without a model (the scores themselves are chance level)."""

    def __init__(self, dim: int) -> None:
        self.name, self.dim = f"random:{dim}", dim

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        import zlib

        rows = [np.random.default_rng(zlib.crc32(s.encode())).standard_normal(self.dim) for s in sentences]
        return np.asarray(rows, dtype=np.float32).reshape(len(sentences), self.dim)  # (n, dim)


class CpuTimedEncoder:
    """Passes `encode` through and adds up its wall and process-CPU seconds and sentences."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.wall = self.cpu = 0.0
        self.sentences = 0

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = self.inner.encode(sentences, batch_size=batch_size, show_progress=show_progress)
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu
        self.sentences += len(sentences)
        return vectors

    def __getattr__(self, item: str):  # tasks may read .dim, .truncated_texts ...
        return getattr(self.inner, item)


def profile_task(name: str, timed, counted: CpuTimedEncoder, args) -> dict:
    """Build, load and evaluate one task; its time split into load / encode / scoring (seconds)."""
    from sentkit.tasks import get_task
    from sentkit.tasks.clustering import ClusteringTask

    seed_everything(args.seed)
    kwargs = {"batch_size": args.batch_size, "data_root": args.data_root}
    if args.langs:
        kwargs["langs"] = args.langs
    wall, cpu = time.perf_counter(), time.process_time()
    task = get_task(name, **kwargs)
    if isinstance(task, ClusteringTask):
        task.kmeans = args.kmeans
    task.load()
    load_s = time.perf_counter() - wall
    timed.start_task()
    enc_wall, enc_cpu, enc_n = counted.wall, counted.cpu, counted.sentences
    start = time.perf_counter()
    scores = task.evaluate(timed)
    evaluate_s = time.perf_counter() - start
    encode_s, encode_cpu = counted.wall - enc_wall, counted.cpu - enc_cpu
    kmeans = task.meta.get("kmeans_seconds", {})
    return {
        "task": name,
        "class": type(task).__name__,
        "scoring": SCORING.get(type(task).__name__, "-"),
        "main_score": float(scores["main_score"]),
        "sentences_encoded": counted.sentences - enc_n,
        "sentences_requested": timed.requested,
        "load_s": round(load_s, 2),
        "encode_s": round(encode_s, 2),
        "encode_cpu_s": round(encode_cpu, 2),
        "scoring_s": round(evaluate_s - encode_s, 2),
        "kmeans_s": round(sum(s for per in kmeans.values() for s in per.values()), 2) if kmeans else None,
        "kmeans_seconds": kmeans or None,
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def totals(rows: list[dict], model_load_s: float, start: float, cpu: float) -> dict:
    """Column sums over the finished tasks, plus the model load and the whole run so far."""
    total = {
        key: round(sum(r[key] for r in rows), 2)
        for key in ("load_s", "encode_s", "encode_cpu_s", "scoring_s", "wall_s", "cpu_s", "sentences_encoded")
    }
    total["kmeans_s"] = round(sum(r["kmeans_s"] or 0 for r in rows), 2)
    total["model_load_s"] = round(model_load_s, 2)
    total["run_wall_s"] = round(time.perf_counter() - start, 2)
    total["run_cpu_s"] = round(time.process_time() - cpu, 2)
    return total


def print_table(model: str, suite: str, rows: list[dict], total: dict) -> None:
    print(f"\n{model} on {suite}: seconds per task (wall; CPU = process CPU over all threads)")
    print(
        f"{'task':<22} {'sent.':>6} {'load':>6} {'encode':>7} {'enc cpu':>8} {'scoring':>8} {'k-means':>8} "
        f"{'wall':>7} {'cpu':>7} {'share':>6}  scoring is"
    )
    for r in rows:
        km = f"{r['kmeans_s']:8.1f}" if r["kmeans_s"] is not None else f"{'-':>8}"
        print(
            f"{r['task']:<22} {r['sentences_encoded']:>6} {r['load_s']:6.1f} {r['encode_s']:7.1f} "
            f"{r['encode_cpu_s']:8.1f} {r['scoring_s']:8.1f} {km} {r['wall_s']:7.1f} {r['cpu_s']:7.1f} "
            f"{100 * r['wall_s'] / max(total['wall_s'], 1e-9):5.1f}%  {r['scoring']}"
        )
    print(
        f"{'total':<22} {total['sentences_encoded']:>6} {total['load_s']:6.1f} {total['encode_s']:7.1f} "
        f"{total['encode_cpu_s']:8.1f} {total['scoring_s']:8.1f} {total['kmeans_s']:8.1f} {total['wall_s']:7.1f} "
        f"{total['cpu_s']:7.1f}"
    )
    print(
        f"model load {total['model_load_s']:.1f} s; whole run {total['run_wall_s']:.1f} s wall, "
        f"{total['run_cpu_s']:.1f} s CPU"
    )


def main(argv: list[str] | None = None) -> dict:
    import torch

    from sentkit.encoders import load_encoder
    from sentkit.evaluate import _CachingEncoder
    from sentkit.tasks import resolve_tasks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-en", help="a model `sentkit eval` takes, or random:DIM")
    parser.add_argument("--suite", default="default", help="suite or comma list of tasks (`sentkit tasks`)")
    parser.add_argument("--langs", nargs="+", default=None)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--kmeans", default="sklearn", choices=["sklearn", "faiss", "sklearn+faiss"])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    names = resolve_tasks(args.suite)
    load_before = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    if args.model.startswith("random:"):
        encoder = RandomEncoder(int(args.model.removeprefix("random:")))
    else:
        encoder = load_encoder(args.model)
    model_load_s = time.perf_counter() - start
    counted = CpuTimedEncoder(encoder)
    timed = _CachingEncoder(counted)  # the run-wide cache `sentkit eval` uses
    rows, errors = [], {}

    def write(rows: list[dict], errors: dict, complete: bool) -> dict:
        """The JSON so far (after every task: a long run interrupted keeps what finished)."""
        total = totals(rows, model_load_s, start, cpu)
        result = {
            "model": args.model,
            "suite": args.suite,
            "complete": complete,
            "tasks": rows,
            "errors": errors,
            "total": total,
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "torch_threads": torch.get_num_threads(),
            "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
            "versions": package_versions(),
            "machine": machine_info(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write_json(args.out, result)
        return result

    for name in names:
        try:
            row = profile_task(name, timed, counted, args)
        except Exception as err:  # recorded, as `sentkit eval` records it; the other tasks still run
            errors[name] = f"{type(err).__name__}: {err}"
            print(f"{name}: FAILED {errors[name]}", flush=True)
            continue
        rows.append(row)
        write(rows, errors, complete=False)
        print(
            f"{name}: {row['wall_s']:.1f} s (encode {row['encode_s']:.1f}, scoring {row['scoring_s']:.1f}, "
            f"load {row['load_s']:.1f})",
            flush=True,
        )
    result = write(rows, errors, complete=True)
    print_table(args.model, args.suite, rows, result["total"])
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
