"""The anchor side of bench/int8_speed.py: sentence-transformers' own backends, in their own virtualenv.

sentence-transformers' ONNX backend needs optimum-onnx, which pins transformers<5, so this script runs in
the anchor venv (`python -m bench.int8_speed --build-anchor-venv DIR` makes one) and imports no sentkit. Its
OpenVINO backend needs optimum-intel, whose optimum (~=2.3) conflicts with optimum-onnx's (~=2.1), so the
OpenVINO side runs the same script in a second venv (`--build-anchor-openvino-venv DIR`).
It answers one JSON request per stdin line with one JSON line on its real stdout (library chatter goes to
stderr), so the parent can time both sides in turns while only one of them computes:

    {"cmd": "versions"}
    {"cmd": "prepare", "model_dir": D, "work_dir": W, "quantization": "avx2"}   ONNX + dynamic int8 files
    {"cmd": "prepare_openvino", "model_dir": D, "work_dir": W, "calibration": PATH.json}
                                            OpenVINO IR + static int8 (NNCF) as the sentence-transformers docs do
    {"cmd": "load", "name": N, "model_dir": D, "backend": "torch"|"onnx"|"openvino", "file_name": F,
     "dtype": "bfloat16" (optional: a torch backend's weights cast after loading)}
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
    "optimum-intel",
    "openvino",
    "nncf",
    "datasets",
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


def prepare_openvino(model_dir: str, work_dir: str, calibration: str) -> dict:
    """Export `model_dir` to OpenVINO and quantize it statically as the sentence-transformers docs do
    (`export_static_quantized_openvino_model` with the default OVQuantizationConfig), into `work_dir`.

    The docs calibrate on GLUE SST-2 train, which is not reachable offline: the same function reads the
    calibration sentences sentkit uses (`calibration`, a JSON list) from a local CSV instead, through the
    same tokenization (padded to 384 tokens) and sample count (300, or all when fewer)."""
    import csv

    from optimum.intel import OVQuantizationConfig
    from sentence_transformers import SentenceTransformer, export_static_quantized_openvino_model

    fp32, int8 = "openvino/openvino_model.xml", "openvino/openvino_model_qint8_quantized.xml"
    with open(calibration, encoding="utf-8") as fh:
        texts = json.load(fh)
    samples = min(300, len(texts))
    if not os.path.isfile(os.path.join(work_dir, int8)):
        model = SentenceTransformer(model_dir, backend="openvino", device="cpu")
        model.save_pretrained(work_dir)
        data = os.path.join(work_dir, "calibration")
        os.makedirs(data, exist_ok=True)
        with open(os.path.join(data, "train.csv"), "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["sentence"])
            writer.writerows([t] for t in texts)
        export_static_quantized_openvino_model(
            model,
            OVQuantizationConfig(num_samples=samples),
            work_dir,
            dataset_name=data,
            dataset_config_name="default",
            dataset_split="train",
            column_name="sentence",
        )
    files = sorted(os.listdir(os.path.join(work_dir, "openvino")))
    return {"openvino_files": files, "fp32_file": fp32, "int8_file": int8, "calibration_samples": samples}


def load(
    name: str,
    model_dir: str,
    backend: str,
    file_name: str | None,
    threads: int,
    models: dict,
    dtype: str | None = None,
) -> dict:
    """Load a model for `encode`; `dtype` ("bfloat16") casts a torch backend's weights after loading."""
    from sentence_transformers import SentenceTransformer

    kwargs = {}
    if backend == "onnx":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # the same thread count as the torch runs and as sentkit
        options.inter_op_num_threads = 1
        kwargs = {"file_name": file_name, "provider": "CPUExecutionProvider", "session_options": options}
    elif backend == "openvino":  # one stream on the same thread count (optimum-intel's default hint: latency)
        kwargs = {"file_name": file_name, "ov_config": {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1}}
    models[name] = SentenceTransformer(model_dir, backend=backend, device="cpu", model_kwargs=kwargs)
    if dtype is not None:
        import torch

        models[name] = models[name].to(getattr(torch, dtype))
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
            elif cmd == "prepare_openvino":
                answer = prepare_openvino(**request)
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
