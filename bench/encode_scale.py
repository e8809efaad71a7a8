"""Corpus-scale encoding: memory against corpus size, in process against Ray, and sentence-transformers' pool.

1. Peak memory of `sentkit encode --shard-size` in process (--engine local) for each corpus size: it should
   stay flat, since one shard is held at a time.
2. Throughput on one corpus: in process with 1 thread and with all cores, Ray with 1 and 2 workers (each
   worker's torch threads: its share of the cores), and sentence-transformers' multi-process pool (2
   processes) on the same corpus, model and batch size; rows/s, peak memory of each, and the ratios Ray with 2
   workers / in process with all cores (the target: >= 0.9x on 2 cores) and sentkit / the pool. Each ratio is
   given end to end (wall time, start-up included) and after start-up (rows after the first shard over the
   time from the first shard's line to the last's), so a short corpus still shows the encoding speed.

Every run is a separate process; peak memory is the resident set of the whole process tree (the command,
Ray's workers or the pool's workers) sampled every 0.1 s, plus the command process's own high-water mark.
Corpora cycle the Tatoeba sentences of the shared data (all languages, real lengths). Wall times include
model loading and, for Ray, starting the local cluster. Writes bench/out/encode_scale.json.

    python -m bench.encode_scale [--sizes 10000,100000,1000000] [--throughput-rows 20000] [--model minilm-en]
    python -m bench.encode_scale --small    # 2,000 rows: checks that every part runs
    python -m bench.encode_scale --skip-memory --skip-st    # in process against Ray only
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench.common import child_pythonpath, provenance, write_result
from sentkit.datasets.root import data_root

OUT = Path(__file__).resolve().parent / "out" / "encode_scale.json"
SAMPLE_EVERY_S = 0.1
SHARD_LINE = re.compile(r"shard-\d+-\d+\.\w+: rows (\d+)-(\d+) of ")
RAY_TARGET = 0.9  # Ray with 2 workers / in process with all cores, on 2 cores


def tatoeba_sentences(root: Path) -> list[str]:
    """Every sentence of every Tatoeba test file under the data root (112 languages x 1000 pairs), sorted by file."""
    folder = root / "bitext" / "tatoeba"
    files = sorted(folder.glob("tatoeba.*-eng.*"))
    if not files:
        raise SystemExit(f"no Tatoeba files in {folder} (set SENTKIT_DATA)")
    return [line.rstrip("\n") for f in files for line in f.open(encoding="utf-8") if line.strip()]


def write_corpus(path: Path, rows: int, sentences: list[str]) -> Path:
    """`rows` lines cycling `sentences` (written in blocks: the corpus is never held in memory)."""
    with path.open("w", encoding="utf-8") as fh:
        for start in range(0, rows, len(sentences)):
            fh.write("\n".join(sentences[: min(len(sentences), rows - start)]) + "\n")
    return path


def measured(cmd: list[str], env: dict | None = None) -> dict:
    """Run `cmd`, sampling the resident memory of its whole process tree; wall seconds, peaks, the time
    (from the start) of each stderr line, the exit code."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(
        target=lambda: lines.extend((time.perf_counter() - start, line.rstrip("\n")) for line in proc.stderr)
    )
    reader.start()
    root = psutil.Process(proc.pid)
    peak_tree = 0
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak_tree = max(peak_tree, sum(_rss(p) for p in tree))
        except psutil.NoSuchProcess:
            pass
        time.sleep(SAMPLE_EVERY_S)
    out = proc.stdout.read()
    reader.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        err = "\n".join(line for _, line in lines)
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return {
        "wall_s": round(wall, 2),
        "peak_tree_rss_mib": round(peak_tree / 2**20, 1),
        "stdout_tail": out[-300:],
        "stderr_lines": lines,
    }


def after_start_up(lines: list[tuple[float, str]]) -> float | None:
    """Rows/s from the first shard's line to the last's (sentkit prints one line per finished shard). None
    with fewer than 4 shards: parallel workers land their first shards together, and the rate between two
    lines that close is no steady state."""
    shards = [
        (t, int(m.group(2)) - int(m.group(1)) + 1) for t, line in lines if (m := SHARD_LINE.match(line))
    ]
    if len(shards) < 4 or shards[-1][0] <= shards[0][0]:
        return None
    return round(sum(rows for _, rows in shards[1:]) / (shards[-1][0] - shards[0][0]), 1)


def _rss(process) -> int:
    try:
        return process.memory_info().rss
    except Exception:  # the process ended between listing and reading
        return 0


def sentkit_encode(
    corpus: Path, out: Path, args, engine: str, workers: int | None, threads: int | None
) -> dict:
    """One `sentkit encode --shard-size` run; Ray runs leave --threads out: each worker's share of the cores."""
    cmd = [sys.executable, "-m", "sentkit.cli", "encode", "--model", args.model, "--input", str(corpus)]
    cmd += ["--output", str(out), "--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size)]
    cmd += ["--engine", engine]
    if threads:
        cmd += ["--threads", str(threads)]
    if workers:
        cmd += ["--workers", str(workers)]
    result = measured(cmd)
    manifest = json.loads((out / "manifest.json").read_text())
    result["rows"] = manifest["rows"]
    result["rows_per_s"] = round(manifest["rows"] / result["wall_s"], 1)
    result["rows_per_s_after_start_up"] = after_start_up(result.pop("stderr_lines"))
    result["run"] = manifest["runs"][-1]
    return result


def st_pool(corpus: Path, args, processes: int) -> dict:
    """sentence-transformers' multi-process pool in a child process (this script's --st-pool mode)."""
    cmd = [
        sys.executable,
        "-m",
        "bench.encode_scale",
        "--st-pool",
        str(corpus),
        "--model-dir",
        _model_dir(args.model),
    ]
    cmd += ["--processes", str(processes), "--batch-size", str(args.batch_size)]
    result = measured(
        cmd, env={"OMP_NUM_THREADS": "1", **child_pythonpath()}
    )  # one thread per pool process, as the Ray workers
    result.pop("stderr_lines")
    child = json.loads(result["stdout_tail"].strip().splitlines()[-1])
    result |= child
    result["rows_per_s"] = round(child["rows"] / result["wall_s"], 1)
    return result


def _model_dir(name: str) -> str:
    if Path(name).is_dir():
        return name
    if name == "minilm-en":
        from sentkit.encoders.packaged import minilm_en_dir

        return str(minilm_en_dir())
    raise SystemExit(f"the sentence-transformers comparison needs minilm-en or a model folder, got {name!r}")


def st_pool_child(corpus: str, model_dir: str, processes: int, batch_size: int) -> None:
    """What a sentence-transformers user writes: read the corpus, start the pool, encode, stop the pool."""
    import resource

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    sentences = Path(corpus).read_text(encoding="utf-8").splitlines()
    model = SentenceTransformer(model_dir, device="cpu")
    pool = model.start_multi_process_pool(["cpu"] * processes)
    try:
        vectors = model.encode(sentences, pool=pool, batch_size=batch_size)
    finally:
        model.stop_multi_process_pool(pool)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"rows": len(vectors), "dim": int(vectors.shape[1]), "parent_peak_rss_mib": round(own, 1)})
    )


def _ratios(run: dict, base: dict) -> dict:
    """`run`'s speed over `base`'s, end to end and after start-up (None where a run had under 2 shards)."""
    steady, steady_base = run.get("rows_per_s_after_start_up"), base.get("rows_per_s_after_start_up")
    return {
        "end_to_end": round(run["rows_per_s"] / base["rows_per_s"], 3),
        "after_start_up": round(steady / steady_base, 3) if steady and steady_base else None,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="corpus rows for the memory runs")
    parser.add_argument("--throughput-rows", type=int, default=20_000)
    parser.add_argument("--model", default="minilm-en")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--shard-size", type=int, default=10_000)
    parser.add_argument("--small", action="store_true", help="2,000 rows everywhere, 500-row shards")
    parser.add_argument("--skip-st", action="store_true", help="leave out the sentence-transformers pool")
    parser.add_argument("--skip-ray", action="store_true", help="leave out the Ray runs")
    parser.add_argument("--skip-memory", action="store_true", help="leave out the memory-by-size runs")
    parser.add_argument(
        "--work", type=Path, default=None, help="folder for corpora and shards (default: a temp dir)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--st-pool", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.st_pool:
        st_pool_child(args.st_pool, args.model_dir, args.processes, args.batch_size)
        return {}
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.small:
        sizes, args.throughput_rows, args.shard_size = [2000], 2000, 500
    work = args.work or Path(tempfile.mkdtemp(prefix="encode_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    sentences = tatoeba_sentences(data_root())
    result: dict = {"model": args.model, "batch_size": args.batch_size, "shard_size": args.shard_size}
    try:
        result["memory_by_size"] = {}
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        for rows in [] if args.skip_memory else sizes:
            corpus = write_corpus(work / f"corpus_{rows}.txt", rows, sentences)
            run = sentkit_encode(corpus, work / f"local_{rows}", args, "local", None, cores)
            result["memory_by_size"][str(rows)] = run
            print(
                f"in process, {rows} rows: {run['wall_s']} s, peak RSS {run['peak_tree_rss_mib']} MiB",
                flush=True,
            )
            shutil.rmtree(work / f"local_{rows}")
        corpus = write_corpus(work / "throughput.txt", args.throughput_rows, sentences)
        runs = {}
        for threads in sorted({1, cores}):
            runs[f"local_{threads}_thread"] = sentkit_encode(
                corpus, work / f"t_local{threads}", args, "local", None, threads
            )
        if not args.skip_ray:
            for workers in (1, 2):
                runs[f"ray_{workers}_worker"] = sentkit_encode(
                    corpus, work / f"t_ray{workers}", args, "ray", workers, None
                )
        if not args.skip_st:
            runs["st_pool_2_processes"] = st_pool(corpus, args, 2)
        for name, run in runs.items():
            steady = run.get("rows_per_s_after_start_up")
            print(
                f"{name:<22} {run['rows_per_s']:>9.1f} rows/s  "
                f"({steady if steady is not None else '-':>7} after start-up)  "
                f"peak RSS {run['peak_tree_rss_mib']:>8.1f} MiB",
                flush=True,
            )
        result["throughput"] = {"rows": args.throughput_rows, "cores": cores, "runs": runs}
        if "ray_2_worker" in runs:
            local = runs[f"local_{cores}_thread"]
            ratio = _ratios(runs["ray_2_worker"], local)
            result["throughput"]["ray_2_workers_over_local"] = ratio | {"target": RAY_TARGET}
            result["throughput"]["ray_2_over_1"] = _ratios(runs["ray_2_worker"], runs["ray_1_worker"])
            print(
                f"Ray, 2 workers / in process, {cores} threads: {ratio['end_to_end']}x end to end, "
                f"{ratio['after_start_up']}x after start-up (target >= {RAY_TARGET}x)",
                flush=True,
            )
        if "st_pool_2_processes" in runs:
            best = max(runs[k]["rows_per_s"] for k in runs if not k.startswith("st_"))
            result["throughput"]["sentkit_best_over_st_pool"] = round(
                best / runs["st_pool_2_processes"]["rows_per_s"], 3
            )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    result["load_average_1min"] = os.getloadavg()[0]
    try:
        import ray

        result |= provenance(ray=ray.__version__)
    except ImportError:
        result |= provenance()
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
