"""Encoding speed: sentkit's TransformerEncoder.encode vs SentenceTransformer.encode, same model and inputs.

Both run on CPU in fp32 over the STS-B test sentences (1379 pairs -> 2758 sentences) with the same
batch size and max length; after a warm-up, the two are timed in turns (interleaved, so load from
other processes hits both alike) and the best and median sentences/s are reported. Writes
bench/out/encode_speed.json.

    python bench/encode_speed.py [--model DIR] [--batch-size 64] [--repeats 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import provenance, speed_rows, write_result  # noqa: E402

from sentkit.datasets.root import data_file  # noqa: E402
from sentkit.errors import DataFormatError  # noqa: E402

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
    parser.add_argument("--limit", type=int, default=None, help="first N sentences only (quick runs)")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    model_dir = str(args.model or minilm_en_dir())
    sentences = stsb_test_sentences(args.data_root)[: args.limit]

    ours = TransformerEncoder.from_pretrained(model_dir).eval()
    theirs = SentenceTransformer(model_dir, device="cpu").eval()
    if ours.max_length != theirs.max_seq_length:
        raise SystemExit(f"max length differs: sentkit {ours.max_length} vs st {theirs.max_seq_length}")

    runners = {
        "sentkit": lambda s: ours.encode(s, batch_size=args.batch_size),
        "sentence-transformers": lambda s: theirs.encode(
            s, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=False
        ),
    }
    load_before = load_average()
    for fn in runners.values():  # warm-up: allocator, thread pool, tokenizer caches
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
                f"  repeat {rep + 1}/{args.repeats} {name:<22} {len(sentences) / secs:8.1f} sent/s",
                flush=True,
            )

    n = len(sentences)
    rows = speed_rows(seconds, cpu_seconds, n)
    max_abs_diff = float(np.abs(vectors["sentkit"] - vectors["sentence-transformers"]).max())
    result = {
        "model": model_dir,
        "data": "STS-B test (sts-test.csv), both sentences of each pair",
        "sentences": n,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "device": "cpu",
        "dtype": "float32",
        "max_length": ours.max_length,
        "repeats": args.repeats,
        "results": rows,
        "ratio_best": rows["sentkit"]["best_sent_per_s"] / rows["sentence-transformers"]["best_sent_per_s"],
        "ratio_median": rows["sentkit"]["median_sent_per_s"]
        / rows["sentence-transformers"]["median_sent_per_s"],
        "ratio_median_cpu": statistics.median(cpu_seconds["sentence-transformers"])
        / statistics.median(cpu_seconds["sentkit"]),
        "max_abs_diff_vectors": max_abs_diff,
        "load_average_1min": {"before": load_before, "after": load_average()},
        **provenance(),
    }

    print(f"\n{n} sentences, batch {args.batch_size}, {result['threads']} threads, cpu fp32")
    print(f"{'encoder':<22} {'best sent/s':>12} {'median sent/s':>14}")
    for name, row in rows.items():
        print(f"{name:<22} {row['best_sent_per_s']:12.1f} {row['median_sent_per_s']:14.1f}")
    print(
        f"ratio sentkit / sentence-transformers: best {result['ratio_best']:.3f}x, "
        f"median {result['ratio_median']:.3f}x, median CPU time {result['ratio_median_cpu']:.3f}x; max |diff| of vectors {max_abs_diff:.2e}"
    )
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
