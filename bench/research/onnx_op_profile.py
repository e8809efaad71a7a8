"""Where an exported graph spends its time: onnxruntime's profiler, kernel time summed per operator type.

    python -m bench.research.onnx_op_profile [--models e5-small-m,minilm-en] [--variant onnx|int8] [--sentences 1000]

Runs `NAME@variant` (exported into the cache on first use) on the first N STS-B test sentences with the
encoder's own batching, then prints each operator type's share of the summed kernel time and the MatMul
kernels' GFLOP/s (weight and attention products, from the real token counts). Writes
bench/out/onnx_op_profile.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from bench.common import provenance, write_result
from bench.encode_speed import stsb_test_sentences
from bench.int8_speed import flops_per_sentence, model_shapes

OUT = Path(__file__).resolve().parents[1] / "out" / "onnx_op_profile.json"


def kernel_time_by_op(profile_file: str) -> dict[str, float]:
    """{operator type: summed kernel microseconds} from an onnxruntime profile (Chrome trace JSON)."""
    events = json.loads(Path(profile_file).read_text())
    by_op: collections.Counter = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"]
    return dict(by_op.most_common())


def profile_model(name: str, variant: str, sentences: list[str], threads: int, batch_size: int) -> dict:
    import onnxruntime as ort

    from sentkit.encoders import load_encoder

    encoder = load_encoder(f"{name}@{variant}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as scratch:
        options.profile_file_prefix = str(Path(scratch) / "profile")
        encoder.session = ort.InferenceSession(
            str(encoder.folder / encoder.meta["model_file"]), options, providers=["CPUExecutionProvider"]
        )
        encoder.encode(sentences, batch_size=batch_size)
        by_op = kernel_time_by_op(encoder.session.end_profiling())
    total = sum(by_op.values())
    torch_encoder = load_encoder(name)
    ids = torch_encoder.tokenizer([torch_encoder.prefix + s for s in sentences], truncation=True)["input_ids"]
    flops = flops_per_sentence(np.array([len(row) for row in ids]), **model_shapes(torch_encoder))
    matmul_us = sum(us for op, us in by_op.items() if "MatMul" in op)
    return {
        "model": f"{name}@{variant}",
        "sentences": len(sentences),
        "kernel_seconds": total / 1e6,
        "share": {op: us / total for op, us in by_op.items()},
        "matmul_gflops": flops * len(sentences) / (matmul_us / 1e6) / 1e9 if matmul_us else None,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="e5-small-m,minilm-en")
    parser.add_argument("--variant", default="onnx", choices=["onnx", "int8"])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sentences = stsb_test_sentences(args.data_root)[: args.sentences]
    rows = []
    for name in args.models.split(","):
        row = profile_model(name, args.variant, sentences, args.threads, args.batch_size)
        rows.append(row)
        gflops = f"{row['matmul_gflops']:.0f}" if row["matmul_gflops"] else "-"
        print(
            f"\n{row['model']}: {row['kernel_seconds']:.2f} s of kernels; MatMul kernels at {gflops} GFLOP/s"
        )
        for op, share in list(row["share"].items())[:10]:
            print(f"  {op:<28} {100 * share:5.1f}%")
    result = {"variant": args.variant, "threads": args.threads, "models": rows, **provenance()}
    return write_result(args.out, result)


if __name__ == "__main__":
    main()
