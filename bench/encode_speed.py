"""Encoding speed: sentkit's TransformerEncoder.encode vs SentenceTransformer.encode, same model and inputs.

Both run over the STS-B test sentences (1379 pairs -> 2758 sentences) with the same batch size and max
length, on the CPU (default) or a GPU (`--device cuda`), at each precision asked for (`--precisions`:
fp32, fp16, bf16; the module is cast, inputs stay token ids, vectors come back as float32). After a
warm-up the runners are timed in turns (interleaved, so load from other processes hits them alike) and
the best and median sentences/s are reported, with each runner's STS-B test Spearman and its smallest
cosine to sentkit's fp32 vectors. Writes bench/out/encode_speed.json.

    python -m bench.encode_speed [--model DIR] [--batch-size 64] [--repeats 5] [--threads 2]
    python -m bench.encode_speed --device cuda --precisions fp32,fp16,bf16 --batch-size 256
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from bench.common import provenance, speed_rows, write_result
from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

OUT = Path(__file__).resolve().parent / "out" / "encode_speed.json"


def stsb_test_sentences(root: str | None = None) -> list[str]:
    """Both sentences of every STS-B test pair (columns 6 and 7 of sts-test.csv), in file order."""
    path = data_file("sts", "STSBenchmark", "sts-test.csv", root=root)
    sentences: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 7:
                raise DataFormatError(path, line_no, f"at least 7 tab-separated fields, got {len(fields)}")
            sentences += [fields[5], fields[6]]
    return sentences


PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def stsb_test_gold(root: str | None = None) -> np.ndarray:
    """The gold score of every STS-B test pair (column 5 of sts-test.csv), in file order."""
    path = data_file("sts", "STSBenchmark", "sts-test.csv", root=root)
    with open(path, encoding="utf-8") as f:
        return np.array([float(line.split("\t")[4]) for line in f], dtype=np.float64)


def stsb_spearman(vectors: np.ndarray, gold: np.ndarray) -> float:
    """Spearman (x100) of the pairs' cosines (rows 2i and 2i+1) against the gold scores."""
    from scipy.stats import spearmanr

    a, b = vectors[0::2], vectors[1::2]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(100 * spearmanr(cos, gold[: len(cos)]).statistic)


def runner_name(side: str, precision: str) -> str:
    """ "sentkit" / "sentence-transformers" at fp32 (the keys earlier results use), "<side> <precision>" else."""
    return side if precision == "fp32" else f"{side} {precision}"


def synchronized(fn, device: str):
    """`fn`, then wait for the GPU's queued work, so a timing covers it."""

    def run(sentences):
        out = fn(sentences)
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    return run


def timed(fn, sentences: list[str]) -> tuple[float, float, np.ndarray]:
    """Wall seconds, process CPU seconds (less sensitive to other processes on a shared machine), vectors."""
    start, cpu = time.perf_counter(), time.process_time()
    vectors = fn(sentences)
    return time.perf_counter() - start, time.process_time() - cpu, vectors


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def main(argv: list[str] | None = None) -> dict:
    from sentence_transformers import SentenceTransformer

    from sentkit.encoders.packaged import minilm_en_dir
    from sentkit.encoders.transformer import TransformerEncoder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default=None, help="sentence-transformers directory (default: packaged MiniLM)"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--precisions", default="fp32", help="comma list of fp32, fp16, bf16 (fp16 needs --device cuda)"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N sentences only (quick runs)")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown or not precisions:
        raise SystemExit(f"--precisions: expected fp32, fp16 or bf16, got {args.precisions!r}")
    if "fp16" in precisions and args.device == "cpu":
        raise SystemExit("--precisions fp16 needs --device cuda (CPU float16 kernels are not what users run)")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU")

    torch.set_num_threads(args.threads)
    model_dir = str(args.model or minilm_en_dir())
    sentences = stsb_test_sentences(args.data_root)[: args.limit]
    gold = stsb_test_gold(args.data_root)

    runners = {}
    max_length = None
    for precision in precisions:
        dtype = PRECISIONS[precision]
        ours = TransformerEncoder.from_pretrained(model_dir).eval().to(args.device, dtype)
        theirs = SentenceTransformer(model_dir, device=args.device).eval().to(dtype)
        if ours.max_length != theirs.max_seq_length:
            raise SystemExit(f"max length differs: sentkit {ours.max_length} vs st {theirs.max_seq_length}")
        max_length = ours.max_length
        runners[runner_name("sentkit", precision)] = synchronized(
            lambda s, enc=ours: enc.encode(s, batch_size=args.batch_size), args.device
        )
        runners[runner_name("sentence-transformers", precision)] = synchronized(
            lambda s, enc=theirs: enc.encode(
                s, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=False
            ).astype(np.float32),
            args.device,
        )
    load_before = load_average()
    for fn in runners.values():  # warm-up: allocator, thread pool, tokenizer caches, CUDA kernels
        fn(sentences[: 2 * args.batch_size])

    seconds: dict[str, list[float]] = {name: [] for name in runners}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in runners}
    vectors: dict[str, np.ndarray] = {}
    names = list(runners)
    for rep in range(args.repeats):
        # alternate who goes first so neither always runs right after the other
        for name in names if rep % 2 == 0 else names[::-1]:
            secs, cpu, vectors[name] = timed(runners[name], sentences)
            seconds[name].append(secs)
            cpu_seconds[name].append(cpu)
            print(
                f"  repeat {rep + 1}/{args.repeats} {name:<28} {len(sentences) / secs:8.1f} sent/s",
                flush=True,
            )

    n = len(sentences)
    rows = speed_rows(seconds, cpu_seconds, n)
    reference = vectors[names[0]]  # sentkit at the first precision asked for (fp32 by default)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    for name, row in rows.items():
        unit = vectors[name] / np.linalg.norm(vectors[name], axis=1, keepdims=True)
        row["stsb_spearman"] = stsb_spearman(vectors[name], gold) if n % 2 == 0 else None
        row["min_cosine_to_reference"] = float((unit * reference).sum(1).min())
    pairs = {
        precision: rows[runner_name("sentkit", precision)]["median_sent_per_s"]
        / rows[runner_name("sentence-transformers", precision)]["median_sent_per_s"]
        for precision in precisions
    }
    fastest_st = max(
        (name for name in rows if name.startswith("sentence-transformers")),
        key=lambda name: rows[name]["median_sent_per_s"],
    )
    result = {
        "model": model_dir,
        "data": "STS-B test (sts-test.csv), both sentences of each pair",
        "sentences": n,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "precisions": precisions,
        "dtype": "float32" if precisions == ["fp32"] else ",".join(precisions),
        "max_length": max_length,
        "repeats": args.repeats,
        "reference": names[0],
        "results": rows,
        "ratio_median_per_precision": pairs,
        "fastest_sentence_transformers": fastest_st,
        "ratio_median_vs_fastest_sentence_transformers": {
            name: row["median_sent_per_s"] / rows[fastest_st]["median_sent_per_s"]
            for name, row in rows.items()
            if name.startswith("sentkit")
        },
        "load_average_1min": {"before": load_before, "after": load_average()},
        **provenance(),
    }
    if "fp32" in precisions:  # the keys of the CPU fp32 comparison, kept as before
        ours, theirs = rows["sentkit"], rows["sentence-transformers"]
        result["ratio_best"] = ours["best_sent_per_s"] / theirs["best_sent_per_s"]
        result["ratio_median"] = ours["median_sent_per_s"] / theirs["median_sent_per_s"]
        result["ratio_median_cpu"] = statistics.median(
            cpu_seconds["sentence-transformers"]
        ) / statistics.median(cpu_seconds["sentkit"])
        result["max_abs_diff_vectors"] = float(
            np.abs(vectors["sentkit"] - vectors["sentence-transformers"]).max()
        )

    where = result["gpu"] or f"cpu, {result['threads']} threads"
    print(f"\n{n} sentences, batch {args.batch_size}, {where}")
    print(f"{'encoder':<28} {'best sent/s':>12} {'median sent/s':>14} {'STS-B':>7} {'min cos':>8}")
    for name, row in rows.items():
        spearman = row["stsb_spearman"]
        print(
            f"{name:<28} {row['best_sent_per_s']:12.1f} {row['median_sent_per_s']:14.1f} "
            f"{spearman if spearman is not None else float('nan'):7.2f} {row['min_cosine_to_reference']:8.4f}"
        )
    for precision, ratio in pairs.items():
        print(f"sentkit / sentence-transformers at {precision}: {ratio:.3f}x (median)")
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
