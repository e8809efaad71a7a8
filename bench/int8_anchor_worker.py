"""The anchor side of bench/int8_speed.py: sentence-transformers' own backends, in their own virtualenv.

sentence-transformers' ONNX backend needs optimum-onnx, which pins transformers<5, so this script runs in
the anchor venv (`python bench/int8_speed.py --build-anchor-venv DIR` makes one) and imports no sentkit.
It answers one JSON request per stdin line with one JSON line on its real stdout (library chatter goes to
stderr), so the parent can time both sides in turns while only one of them computes:

    {"cmd": "versions"}
    {"cmd": "prepare", "model_dir": D, "work_dir": W, "quantization": "avx2"}   ONNX + dynamic int8 files
    {"cmd": "load", "name": N, "model_dir": D, "backend": "torch"|"onnx", "file_name": F}
    {"cmd": "encode", "name": N, "sentences": PATH.json, "out": PATH.npy, "batch_size": 64}
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import metadata

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PACKAGES = (
    "sentence-transformers",
    "transformers",
    "optimum",
    "optimum-onnx",
    "onnx",
    "onnxruntime",
    "torch",
    "tokenizers",
    "numpy",
)


def versions() -> dict:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def prepare(model_dir: str, work_dir: str, quantization: str) -> dict:
    """Export `model_dir` to ONNX and quantize it as the sentence-transformers docs do, into `work_dir`."""
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder = os.path.join(work_dir, "onnx")

    def quantized() -> list[str]:  # model_<qint8|quint8>_<config>.onnx, named by the weights' dtype
        names = os.listdir(folder) if os.path.isdir(folder) else []
        return sorted(n for n in names if n.startswith("model_") and n.endswith(f"_{quantization}.onnx"))

    if not quantized():
        model = SentenceTransformer(model_dir, backend="onnx", device="cpu")
        model.save_pretrained(work_dir)
        export_dynamic_quantized_onnx_model(model, quantization, work_dir)
    return {"onnx_files": sorted(os.listdir(folder)), "int8_file": f"onnx/{quantized()[0]}"}


def load(name: str, model_dir: str, backend: str, file_name: str | None, threads: int, models: dict) -> dict:
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer

    kwargs = {}
    if backend == "onnx":
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # the same thread count as the torch runs and as sentkit
        options.inter_op_num_threads = 1
        kwargs = {"file_name": file_name, "provider": "CPUExecutionProvider", "session_options": options}
    models[name] = SentenceTransformer(model_dir, backend=backend, device="cpu", model_kwargs=kwargs)
    return {"max_seq_length": models[name].max_seq_length, "prompt": models[name].default_prompt_name}


def encode(name: str, sentences: str, out: str | None, batch_size: int, models: dict) -> dict:
    import numpy as np

    with open(sentences, encoding="utf-8") as fh:
        texts = json.load(fh)
    start, cpu = time.perf_counter(), time.process_time()
    vectors = models[name].encode(
        texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
    )
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    if out:
        np.save(out, vectors.astype(np.float32))
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "sentences": len(texts)}


def main() -> None:
    import torch

    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # keep the reply channel to JSON lines only
    models: dict = {}
    for line in sys.stdin:
        request = json.loads(line)
        cmd = request.pop("cmd")
        try:
            if cmd == "versions":
                answer = versions()
            elif cmd == "prepare":
                answer = prepare(**request)
            elif cmd == "load":
                answer = load(threads=threads, models=models, **request)
            elif cmd == "encode":
                answer = encode(models=models, **request)
            else:
                raise ValueError(f"unknown command {cmd!r}")
            reply.write(json.dumps({"ok": True, **answer}) + "\n")
        except Exception as err:  # reported to the parent, which stops with it
            reply.write(json.dumps({"ok": False, "error": f"{type(err).__name__}: {err}"}) + "\n")


if __name__ == "__main__":
    main()
