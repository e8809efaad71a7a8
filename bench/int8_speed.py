"""int8 and fp32 encoding speed against sentence-transformers' own backends, side by side in one run.

For each model (minilm-en, e5-small-m), on the STS-B test sentences (1379 pairs -> 2758 sentences):
  sentkit torch fp32 (TransformerEncoder), sentkit onnx fp32, sentkit int8 (`NAME@onnx`, `NAME@int8`: the
  path sentkit/encoders/int8_choice.py picks for this CPU; where that is not onnxruntime's dynamic int8, that
  one too as sentkit int8-dynamic), sentkit int8-static (`NAME@int8-static`: onnxruntime static QDQ) and,
  when openvino and nncf are installed, sentkit openvino / openvino-int8; and the anchor:
  sentence-transformers 5.x with its torch, ONNX, ONNX dynamic-int8 (`export_dynamic_quantized_onnx_model`),
  OpenVINO and OpenVINO static-int8
  (`export_static_quantized_openvino_model`) backends. Every ratio is given against the fastest anchor
  backend of the run (and against the ONNX dynamic int8 one, as before). Where the CPU multiplies bfloat16
  natively (avx512_bf16, amx_bf16; `--bf16 on|off` overrides), sentkit's and sentence-transformers' torch
  backends are also timed with their weights cast to bfloat16 (`sentkit eval --precision bf16`).
sentence-transformers' ONNX backend needs optimum-onnx, which pins transformers<5, so the anchor runs in its
own virtualenv; its OpenVINO backend needs optimum-intel, whose optimum conflicts with optimum-onnx's, so the
OpenVINO anchor runs in a second one. Each side is a worker process (bench/int8_anchor_worker.py) that
answers one request at a time: the two sides are timed in turns (interleaved, alternating order) and never compute at once. The anchor's
package versions are recorded in the JSON.

Quality: STS-B Spearman of every runner (sentkit's stsb task on the timed vectors); for e5 also STS17 mean
and Tatoeba deu for sentkit torch fp32, sentkit's int8 and bf16 runners and the anchor's. The fp32 ceiling: torch GEMM
GFLOP/s measured here at the model's shapes, divided by the model's FLOPs per sentence from the real token
counts, gives the sentences/s a GEMM-bound fp32 encoder could reach; our fp32 runners print their fraction.
That probe is a burst (best of 20 short calls on one hot weight); a second, sustained ceiling replays the
model's own weight matrices as bare GEMMs on the run's real batch shapes after every round, so the fraction
of it is the share of an encode pass that is GEMM work (everything else is overhead we could remove). The
int8 (torch._int_mm, onnxruntime MatMulInteger) and bf16 GEMM rates are probed beside the fp32 one
(bench/gemm_ceilings.py), and every runner is given as a fraction of the ceiling of the arithmetic it uses.

    python -m bench.int8_speed --build-anchor-venv bench/.anchor-venv   # once: builds the anchor venv (pinned)
    python -m bench.int8_speed --build-anchor-openvino-venv bench/.anchor-openvino-venv   # once: OpenVINO side
    python -m bench.int8_speed [--models minilm-en,e5-small-m] [--threads 2] [--repeats 3]
    python -m bench.int8_speed --alternatives ctranslate2,ort-fused   # also CTranslate2 and fused onnxruntime

Writes bench/out/int8_speed.json. Takes about 6-9 minutes on 2 idle cores (exports are cached after the
first run under $SENTKIT_CACHE/onnx and bench/out/anchor-onnx).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch

from bench.common import speed_rows, write_result
from bench.encode_speed import load_average, stsb_test_sentences
from bench.gemm_ceilings import BF16_FLAGS, best_rate, ceiling_sent_per_s, fp32_torch, probe_all
from sentkit.provenance import cpu_info, machine_info, package_versions

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out" / "int8_speed.json"
WORKER = BENCH / "int8_anchor_worker.py"
DEFAULT_ANCHOR_VENV = BENCH / ".anchor-venv"
# The anchor as the issue measured it: sentence-transformers 5.x + optimum-onnx (transformers<5); the same
# onnxruntime and torch as sentkit's, so the comparison is between graphs and pipelines, not runtime builds.
ANCHOR_PINS = (
    "sentence-transformers==5.7.0",
    "optimum==2.1.0",
    "optimum-onnx==0.1.0",
    "transformers==4.57.6",
    "tokenizers==0.22.2",
    "onnx==1.23.2",
    "onnxruntime==1.31.1",
    "numpy==2.4.6",
)
ANCHOR_TORCH = "torch==2.13.0"  # installed first, as the Makefile does: the local CPU build
DEFAULT_ANCHOR_OPENVINO_VENV = BENCH / ".anchor-openvino-venv"
# The OpenVINO anchor: optimum-intel 2.2 needs optimum~=2.3, which optimum-onnx 0.1 (optimum~=2.1) excludes.
# optimum-intel also requires torchvision; pinned to torch 2.13's release so pip keeps the local CPU torch,
# then removed: PyPI's torchvision is built for PyPI's CUDA torch and fails to load beside the CPU build
# ("operator torchvision::nms does not exist"), which breaks transformers' imports; no text model uses it.
ANCHOR_OPENVINO_PINS = (
    "sentence-transformers==5.7.0",
    "optimum-intel==2.2.0",
    "optimum==2.3.0",
    "openvino==2026.4.1",
    "openvino-tokenizers==2026.4.1.0",
    "nncf==3.4.0",
    "transformers==4.57.6",
    "tokenizers==0.22.2",
    "huggingface-hub==0.36.2",
    "datasets==5.0.1",
    "numpy==2.4.6",
    "torchvision==0.28.0",
)
ANCHOR_OPENVINO_DROP = ("torchvision",)
INT8_RUNNER_WORDS = ("int8",)  # a runner whose label holds one of these uses int8 weight GEMMs
GOALS = {"int8_speed_vs_anchor_int8": 1.3, "int8_max_loss_points": 0.5, "fp32_fraction_of_ceiling": 0.85}


# ---- the anchor venv and worker -----------------------------------------------------------------------


def build_anchor_venv(folder: Path, pins=ANCHOR_PINS, drop: tuple[str, ...] = ()) -> Path:
    """Create `folder` with the pinned anchor packages (then uninstall `drop`); returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, ANCHOR_TORCH], check=True)
    subprocess.run([*pip, ANCHOR_TORCH, *pins], check=True)
    if drop:
        subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *drop], check=True)
    return python


class AnchorWorker:
    """bench/int8_anchor_worker.py in the anchor venv; `ask` sends one request and waits for its answer."""

    def __init__(self, python: Path, threads: int, log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log, "w")  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONPATH": ""}  # nothing of sentkit's environment leaks into the anchor
        self.proc = subprocess.Popen(
            [str(python), str(WORKER), str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )

    def ask(self, cmd: str, **request) -> dict:
        self.proc.stdin.write(json.dumps({"cmd": cmd, **request}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"anchor worker exited (code {self.proc.poll()}); see {self.log.name}")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise RuntimeError(f"anchor worker, {cmd}: {answer['error']} (log: {self.log.name})")
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


class AnchorEncoder:
    """One of the worker's models as a sentkit encoder (sentences and vectors travel through files)."""

    def __init__(self, worker: AnchorWorker, name: str, scratch: Path) -> None:
        self.worker, self.name, self.scratch = worker, name, scratch
        self.languages = None

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        texts, vectors = self.scratch / "sentences.json", self.scratch / "vectors.npy"
        texts.write_text(json.dumps(list(sentences), ensure_ascii=False))
        self.last = self.worker.ask(
            "encode", name=self.name, sentences=str(texts), out=str(vectors), batch_size=batch_size
        )
        return np.load(vectors)


class PrecomputedEncoder:
    """Vectors already computed (the timed pass) served to a task, so scoring costs no encoding."""

    def __init__(self, name: str, sentences: list[str], vectors: np.ndarray) -> None:
        self.name, self.languages = name, None
        self.table = dict(zip(sentences, vectors))

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return np.stack([self.table[s] for s in sentences])  # (n, dim)


# ---- the fp32 ceiling -----------------------------------------------------------------------------------


def model_shapes(encoder) -> dict[str, int]:
    cfg = encoder.model.config
    return {
        "layers": cfg.num_hidden_layers,
        "hidden": cfg.hidden_size,
        "intermediate": cfg.intermediate_size,
    }


def flops_per_sentence(token_counts: np.ndarray, layers: int, hidden: int, intermediate: int) -> float:
    """Mean multiply-add FLOPs (x2) of the encoder layers per sentence, unpadded.

    Per layer and token: Q, K, V, output projections (4 h^2) and the two FFN matrices (2 h f) as GEMMs,
    plus attention scores and mixing (2 L h for a sentence of L tokens); embeddings and pooling are noise.
    """
    return sum(flops_split(token_counts, layers, hidden, intermediate))


def flops_split(token_counts: np.ndarray, layers: int, hidden: int, intermediate: int) -> tuple[float, float]:
    """(weight GEMM FLOPs, attention-product FLOPs) per sentence, the two terms of flops_per_sentence."""
    n = token_counts.astype(np.float64)
    weights = layers * 2 * n * (4 * hidden * hidden + 2 * hidden * intermediate)
    attention = layers * 4 * n * n * hidden
    return float(weights.mean()), float(attention.mean())


def arithmetic_of(runner: str) -> str:
    """The arithmetic of a runner's weight GEMMs, from its label: int8, bf16 or fp32."""
    if any(word in runner for word in INT8_RUNNER_WORDS):
        return "int8"
    return "bf16" if "bf16" in runner else "fp32"


def wants_bf16(mode: str, flags: list[str]) -> bool:
    """Whether the bf16 torch runners (sentkit's and sentence-transformers') are timed: `mode` "on", "off",
    or "auto" (only where the CPU multiplies bfloat16 natively)."""
    if mode == "auto":
        return any(flag in flags for flag in BF16_FLAGS)
    return mode == "on"


def gemm_replay_seconds(encoder, batch_rows: list[int]) -> float:
    """Seconds the model's own weight matrices take as bare GEMMs (no bias, nothing between them) on
    the run's real batch shapes: every linear layer of the transformer once per batch of `rows` tokens.

    The sustained ceiling: the same weights, shapes and duration as an encode pass, where `fp32_torch`
    (bench/gemm_ceilings.py) is the best of 20 short calls on one hot weight (a burst the host reaches only
    at its quietest)."""
    weights = [m.weight.detach() for m in encoder.model.modules() if isinstance(m, torch.nn.Linear)]
    inputs: dict[tuple[int, int], torch.Tensor] = {}
    start = time.perf_counter()
    with torch.inference_mode():
        for rows in batch_rows:
            for w in weights:  # (out, in)
                x = inputs.get((rows, w.shape[1]))
                if x is None:
                    x = inputs[rows, w.shape[1]] = torch.randn(rows, w.shape[1])
                torch.nn.functional.linear(x, w)
    return time.perf_counter() - start


def batch_rows_of(encoder, sentences: list[str], batch_size: int) -> list[int]:
    """Tokens per batch (batch x padded width) as sentkit's encoders run `sentences`."""
    from sentkit.encoders.protocol import length_sorted_batches

    return [len(rows) * width for _, _, rows, width in length_sorted_batches(encoder, sentences, batch_size)]


# ---- timing ---------------------------------------------------------------------------------------------


def interleaved(
    runners: dict, sentences: list[str], repeats: int, batch_size: int, between_rounds=None
) -> tuple[dict, dict]:
    """Time every runner `repeats` times in turns (order alternating); returns (timings, vectors).

    `between_rounds()` runs after each round (the GEMM probe: the ceiling is sampled as the runners are)."""
    seconds = {name: [] for name in runners}
    cpu = {name: [] for name in runners}
    vectors: dict[str, np.ndarray] = {}
    for fn in runners.values():  # warm-up: thread pools, allocators, tokenizer caches
        fn(sentences[: 2 * batch_size])
    names = list(runners)
    for rep in range(repeats):
        for name in names if rep % 2 == 0 else names[::-1]:
            secs, cpu_secs, vecs = runners[name](sentences, timed=True)
            seconds[name].append(secs)
            cpu[name].append(cpu_secs)
            vectors.setdefault(name, vecs)
            print(f"  {rep + 1}/{repeats} {name:<24} {len(sentences) / secs:8.1f} sent/s", flush=True)
        if between_rounds is not None:
            between_rounds()
    return speed_rows(seconds, cpu, len(sentences)), vectors


def sentkit_runner(encoder, batch_size: int):
    def run(sentences, timed: bool = False):
        start, cpu = time.perf_counter(), time.process_time()
        vectors = encoder.encode(sentences, batch_size=batch_size)
        return (time.perf_counter() - start, time.process_time() - cpu, vectors) if timed else vectors

    return run


def anchor_runner(encoder: AnchorEncoder, batch_size: int):
    """Timed inside the worker (its own clock around model.encode), so file transfer is not counted."""

    def run(sentences, timed: bool = False):
        vectors = encoder.encode(sentences, batch_size=batch_size)
        return (encoder.last["seconds"], encoder.last["cpu_seconds"], vectors) if timed else vectors

    return run


# ---- alternative int8 runtimes (measured to choose the runtime; not part of sentkit) --------------------


def fused_int8(name: str, torch_encoder, threads: int):
    """The int8 export with onnxruntime.transformers' BERT fusion first (QAttention, fused LayerNorms)."""
    from sentkit.encoders.onnx.contract import META_FILE
    from sentkit.encoders.onnx.encoder import OnnxEncoder
    from sentkit.encoders.onnx.export import Int8Options, export_onnx, export_versions

    folder = BENCH / "out" / "ort-fused" / name
    meta = json.loads((folder / META_FILE).read_text()) if (folder / META_FILE).is_file() else {}
    if meta.get("versions") != export_versions():
        export_onnx(torch_encoder, folder, int8=Int8Options(fuse=True), overwrite=True, source=name)
    return OnnxEncoder(folder, threads=threads, name=f"{name} int8 ort-fused")


class CTranslate2Encoder:
    """CTranslate2's int8 BERT encoder with the torch encoder's tokenizer, prefix and pooling."""

    def __init__(self, torch_encoder, folder: Path, threads: int) -> None:
        import ctranslate2

        if not (folder / "model.bin").is_file():
            from ctranslate2.converters import TransformersConverter

            with tempfile.TemporaryDirectory() as saved:
                # transformers 5 no longer writes BERT's default position_embedding_type; the converter asks
                if not hasattr(torch_encoder.model.config, "position_embedding_type"):
                    torch_encoder.model.config.position_embedding_type = "absolute"
                torch_encoder.model.save_pretrained(saved)
                torch_encoder.tokenizer.save_pretrained(saved)
                TransformersConverter(saved).convert(str(folder), quantization="int8", force=True)
        self.source = torch_encoder
        self.name = f"{torch_encoder.name} ctranslate2"
        self.model = ctranslate2.Encoder(
            str(folder), device="cpu", compute_type="int8", intra_threads=threads
        )

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        enc = self.source
        ids = enc.tokenizer([enc.prefix + s for s in sentences], truncation=True, max_length=enc.max_length)[
            "input_ids"
        ]
        lengths = np.array([len(row) for row in ids])
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(sentences), enc.dim), dtype=np.float32)
        for start in range(0, len(ids), batch_size):
            idx = order[start : start + batch_size]
            hidden = np.asarray(
                self.model.forward_batch([ids[i] for i in idx]).last_hidden_state
            )  # (b, L, h)
            if enc.pooling == "mean":
                mask = np.arange(hidden.shape[1])[None, :] < lengths[idx][:, None]  # (b, L)
                pooled = (hidden * mask[:, :, None]).sum(1) / lengths[idx][:, None]  # (b, h)
            else:
                pooled = hidden[:, 0]  # (b, h)
            if enc.normalize:
                pooled = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled
        return out


# ---- one model ------------------------------------------------------------------------------------------


def model_dir_of(name: str) -> Path:
    """The sentence-transformers folder the anchor loads for a sentkit short name."""
    if name == "minilm-en":
        from sentkit.encoders.packaged import minilm_en_dir

        return minilm_en_dir()
    if name == "e5-small-m":
        from sentkit.cache import cache_root
        from sentkit.encoders.e5_q4 import CACHE_NAME

        return anchor_readable(cache_root() / CACHE_NAME, BENCH / "out" / "anchor-models" / name)
    return Path(name)


def anchor_readable(folder: Path, copy: Path) -> Path:
    """`folder` as transformers 4 reads it: links to every file, and a tokenizer_config.json naming
    PreTrainedTokenizerFast (transformers 5 saves the e5 port's tokenizer as "TokenizersBackend", a class
    transformers 4 lacks; both load tokenizer.json verbatim, so the token ids are the same)."""
    config = json.loads((folder / "tokenizer_config.json").read_text())
    if config.get("tokenizer_class") != "TokenizersBackend":
        return folder
    copy.mkdir(parents=True, exist_ok=True)
    for item in folder.iterdir():
        link = copy / item.name
        if item.name != "tokenizer_config.json" and not link.is_symlink():
            link.symlink_to(item.resolve())
    config.pop("backend", None)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (copy / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return copy


def sentkit_exports(name: str, threads: int, skipped: dict[str, str]) -> dict:
    """sentkit's export runners for `name`: every variant this environment can build (a missing optional
    package is recorded in `skipped`, not raised)."""
    from sentkit.encoders.export_cache import cached_export

    exports = {
        "sentkit onnx fp32": cached_export(name, "onnx", threads=threads),
        "sentkit int8": cached_export(name, "int8", threads=threads),
        "sentkit int8-static": cached_export(name, "int8-static", threads=threads),
    }
    if exports["sentkit int8"].runtime_info.get("variant") != "int8-dynamic":
        # `@int8` runs another path on this host: onnxruntime's dynamic int8 is still timed, by its own name
        exports["sentkit int8-dynamic"] = cached_export(name, "int8-dynamic", threads=threads)
    for label, variant in (("sentkit openvino fp32", "openvino"), ("sentkit openvino-int8", "openvino-int8")):
        try:
            exports[label] = cached_export(name, variant, threads=threads)
        except ImportError as err:
            skipped[label] = str(err)
    return exports


def bench_model(name: str, args, sentences: list[str], workers: dict, scratch: Path) -> dict:
    from sentkit.encoders import load_encoder
    from sentkit.encoders.calibration import calibration_set
    from sentkit.tasks import get_task

    print(f"\n== {name}", flush=True)
    torch_encoder = load_encoder(name).eval()
    skipped: dict[str, str] = {}
    exports = sentkit_exports(name, args.threads, skipped)
    int8 = exports["sentkit int8"]
    runners = {"sentkit torch fp32": sentkit_runner(torch_encoder, args.batch_size)}
    flags = cpu_info()["flags"] or []
    bf16 = wants_bf16(args.bf16, flags)
    if bf16:  # `sentkit eval --precision bf16`: the same torch model, its weights cast to bfloat16
        from sentkit.corpus.engine_local import cast_encoder

        bf16_encoder = cast_encoder(load_encoder(name).eval(), "bf16", "cpu")
        runners["sentkit torch bf16"] = sentkit_runner(bf16_encoder, args.batch_size)
    runners.update({label: sentkit_runner(encoder, args.batch_size) for label, encoder in exports.items()})
    alternatives = [a for a in args.alternatives.split(",") if a]
    if "ort-fused" in alternatives:  # onnxruntime's offline BERT fusion (QAttention) before quantizing
        runners["int8 ort-fused"] = sentkit_runner(
            fused_int8(name, torch_encoder, args.threads), args.batch_size
        )
    if "ctranslate2" in alternatives and importlib.util.find_spec("ctranslate2") is None:
        skipped["int8 ctranslate2"] = "not installed (pip install ctranslate2==4.8.5)"
    elif "ctranslate2" in alternatives:
        try:
            ct2 = CTranslate2Encoder(torch_encoder, BENCH / "out" / "ctranslate2" / name, args.threads)
            runners["int8 ctranslate2"] = sentkit_runner(ct2, args.batch_size)
        except Exception as err:  # an alternative the converter cannot take is a result, not a crash
            skipped["int8 ctranslate2"] = f"{type(err).__name__}: {err}"
    for runner_name, why in skipped.items():
        print(f"  no {runner_name} row: {why}")
    anchor: dict[str, AnchorEncoder] = {}
    prepared = None
    worker = workers.get("onnx")
    model_dir = str(model_dir_of(name))
    if worker is not None:
        work = BENCH / "out" / "anchor-onnx" / f"{name}-{args.anchor_quantization}"
        start = time.perf_counter()
        prepared = worker.ask(
            "prepare", model_dir=model_dir, work_dir=str(work), quantization=args.anchor_quantization
        )
        prepared["seconds"] = round(time.perf_counter() - start, 1)
        for label, backend, file_name, folder in (
            ("st torch", "torch", None, model_dir),
            ("st onnx", "onnx", "onnx/model.onnx", str(work)),
            ("st onnx-int8", "onnx", prepared["int8_file"], str(work)),
        ):
            worker.ask("load", name=label, model_dir=folder, backend=backend, file_name=file_name)
            anchor[label] = AnchorEncoder(worker, label, scratch)
            runners[label] = anchor_runner(anchor[label], args.batch_size)
    torch_worker = worker if worker is not None else workers.get("openvino")
    if bf16 and torch_worker is not None:  # sentence-transformers' torch backend, cast the same way
        label = "st torch bf16"
        torch_worker.ask(
            "load", name=label, model_dir=model_dir, backend="torch", file_name=None, dtype="bfloat16"
        )
        anchor[label] = AnchorEncoder(torch_worker, label, scratch)
        runners[label] = anchor_runner(anchor[label], args.batch_size)
    prepared_openvino = None
    ov_worker = workers.get("openvino")
    if ov_worker is not None:
        # calibrated on the same real sentences as sentkit's static int8 (the docs' GLUE SST-2 is not offline)
        calibration = scratch / "calibration.json"
        calibration.write_text(json.dumps(list(calibration_set(torch_encoder.languages).sentences)))
        work = BENCH / "out" / "anchor-openvino" / name
        start = time.perf_counter()
        prepared_openvino = ov_worker.ask(
            "prepare_openvino", model_dir=model_dir, work_dir=str(work), calibration=str(calibration)
        )
        prepared_openvino["seconds"] = round(time.perf_counter() - start, 1)
        labels = [
            ("st openvino", prepared_openvino["fp32_file"]),
            ("st openvino-int8", prepared_openvino["int8_file"]),
        ]
        if worker is None:  # the torch backend from this venv's sentence-transformers instead
            ov_worker.ask("load", name="st torch", model_dir=model_dir, backend="torch", file_name=None)
            anchor["st torch"] = AnchorEncoder(ov_worker, "st torch", scratch)
            runners["st torch"] = anchor_runner(anchor["st torch"], args.batch_size)
        for label, file_name in labels:
            ov_worker.ask("load", name=label, model_dir=str(work), backend="openvino", file_name=file_name)
            anchor[label] = AnchorEncoder(ov_worker, label, scratch)
            runners[label] = anchor_runner(anchor[label], args.batch_size)

    # the fp32 ceiling from the real token counts of the timed sentences (prefix included, as encoded);
    # GEMM speed is probed after every round and the best probe kept, as the runners' best round is
    texts = [torch_encoder.prefix + s for s in sentences]
    ids = torch_encoder.tokenizer(texts, truncation=True, max_length=torch_encoder.max_length)["input_ids"]
    tokens = np.array([len(row) for row in ids])
    shapes = model_shapes(torch_encoder)
    flops = flops_per_sentence(tokens, **shapes)
    rows = args.batch_size * int(round(tokens.mean()))
    probes = [fp32_torch(rows, shapes["hidden"], shapes["intermediate"])]
    other_probes = [probe_all(rows, shapes["hidden"], shapes["intermediate"], args.threads, flags)]
    replay_rows = batch_rows_of(torch_encoder, sentences, args.batch_size)
    replays: list[float] = []

    def probe() -> None:
        probes.append(fp32_torch(rows, shapes["hidden"], shapes["intermediate"]))
        other_probes.append(probe_all(rows, shapes["hidden"], shapes["intermediate"], args.threads, flags))
        replays.append(gemm_replay_seconds(torch_encoder, replay_rows))

    timings, vectors = interleaved(runners, sentences, args.repeats, args.batch_size, probe)

    everything = stsb_test_sentences(args.data_root)
    if len(sentences) < len(everything):  # --limit: time a part, score on the whole test set
        vectors = {runner_name: run(everything) for runner_name, run in runners.items()}
    stsb = get_task("stsb", data_root=args.data_root, batch_size=args.batch_size)
    quality: dict[str, dict[str, float]] = {}
    for runner_name, vecs in vectors.items():
        scored = PrecomputedEncoder(runner_name, everything, vecs)
        quality[runner_name] = {"stsb": stsb.evaluate(scored)["main_score"]}
    reference = vectors["sentkit torch fp32"]
    cosine = {}
    for runner_name, vecs in vectors.items():
        cos = _cosines(vecs, reference)  # (n,)
        cosine[runner_name] = {"min": float(cos.min()), "mean": float(cos.mean())}

    if name == "e5-small-m" and not args.no_extra_quality:
        extra = {"sentkit torch fp32": torch_encoder}
        if bf16:
            extra["sentkit torch bf16"] = bf16_encoder
        extra.update({label: e for label, e in exports.items() if "int8" in label})
        extra.update({label: e for label, e in anchor.items() if "int8" in label or "bf16" in label})
        tasks = {
            "sts17": get_task("sts17", data_root=args.data_root, batch_size=args.batch_size),
            "tatoeba-deu": get_task(
                "tatoeba", langs=["deu"], data_root=args.data_root, batch_size=args.batch_size
            ),
        }
        for runner_name, encoder in extra.items():
            for task_name, task in tasks.items():
                print(f"  {task_name} {runner_name}", flush=True)
                quality[runner_name][task_name] = task.evaluate(encoder)["main_score"]

    gemm = max(probes, key=lambda probe: probe["layer_mix"])
    gemm["probes_layer_mix"] = [round(probe["layer_mix"], 1) for probe in probes]
    ceiling = gemm["layer_mix"] * 1e9 / flops
    fp32_runners = ("sentkit torch fp32", "sentkit onnx fp32")
    fractions = {r: timings[r]["best_sent_per_s"] / ceiling for r in fp32_runners}
    sustained = len(sentences) / min(replays)  # sent/s if the bare GEMMs were all an encode did
    sustained_fractions = {r: timings[r]["best_sent_per_s"] / sustained for r in fp32_runners}
    weight_flops, attention_flops = flops_split(tokens, **shapes)
    rates = {
        "fp32": gemm["layer_mix"],
        "int8": best_rate(other_probes, ("int8_torch", "int8_onnxruntime")),
        "bf16": best_rate(other_probes, ("bf16_torch",)),
    }
    ceilings = {
        arith: ceiling_sent_per_s(weight_flops, attention_flops, rate, rates["fp32"])
        for arith, rate in rates.items()
        if rate is not None
    }
    arithmetic = {r: arithmetic_of(r) for r in timings}
    of_ceiling = {
        r: timings[r]["best_sent_per_s"] / ceilings[arithmetic[r]]
        for r in timings
        if arithmetic[r] in ceilings
    }
    result = {
        "model": name,
        "timings": timings,
        "quality": quality,
        "cosine_to_sentkit_torch_fp32": cosine,
        "tokens_per_sentence": {"mean": float(tokens.mean()), "max": int(tokens.max())},
        "shapes": shapes,
        "flops_per_sentence": flops,
        "gemm_gflops": gemm,
        "fp32_ceiling_sent_per_s": ceiling,
        "fp32_fraction_of_ceiling": fractions,
        "gemm_replay": {
            "seconds": [round(x, 3) for x in replays],
            "gflops": flops * len(sentences) / min(replays) / 1e9,
            "ceiling_sent_per_s": sustained,
            "padded_tokens": int(sum(replay_rows)),
        },
        "fp32_fraction_of_sustained_ceiling": sustained_fractions,
        "anchor_prepare": prepared,
        "anchor_prepare_openvino": prepared_openvino,
        "skipped": skipped,
        "int8_export": int8.meta,
        "int8_choice": int8.runtime_info.get("int8_choice"),
        "exports": {label: e.runtime_info for label, e in exports.items()},
        "gemm_probes": other_probes,
        "gemm_rates_gops": rates,
        "ceiling_sent_per_s": ceilings,
        "arithmetic": arithmetic,
        "fraction_of_ceiling": of_ceiling,
    }
    result.update(vs_fastest_anchor(timings))
    if "st onnx-int8" in timings:
        base = timings["st onnx-int8"]["best_sent_per_s"]
        result["speed_vs_anchor_int8"] = {r: t["best_sent_per_s"] / base for r, t in timings.items()}
        median = timings["st onnx-int8"]["median_sent_per_s"]
        result["median_speed_vs_anchor_int8"] = {
            r: t["median_sent_per_s"] / median for r, t in timings.items()
        }
    return result


def vs_fastest_anchor(timings: dict) -> dict:
    """Every runner's best and median sentences/s over those of the fastest anchor backend ("st ..."), each
    statistic against the anchor that is fastest by it; {} when no anchor ran."""
    anchors = {r: t for r, t in timings.items() if r.startswith("st ")}
    if not anchors:
        return {}
    fastest = max(anchors, key=lambda r: anchors[r]["best_sent_per_s"])
    fastest_median = max(anchors, key=lambda r: anchors[r]["median_sent_per_s"])
    return {
        "fastest_anchor": {"best": fastest, "median": fastest_median},
        "speed_vs_fastest_anchor": {
            r: t["best_sent_per_s"] / anchors[fastest]["best_sent_per_s"] for r, t in timings.items()
        },
        "median_speed_vs_fastest_anchor": {
            r: t["median_sent_per_s"] / anchors[fastest_median]["median_sent_per_s"]
            for r, t in timings.items()
        },
        # round by round (the rounds interleave the runners, so a round's pair ran minutes apart at most):
        # the spread a claim near a target has to clear
        "round_speed_vs_fastest_anchor": {
            r: _round_ratios(anchors[fastest_median].get("seconds", []), t.get("seconds", []))
            for r, t in timings.items()
        },
    }


def _round_ratios(anchor_seconds: list[float], seconds: list[float]) -> dict:
    """Per round, the anchor's seconds over the runner's (its speed ratio), with their min and max."""
    each = [a / b for a, b in zip(anchor_seconds, seconds)]
    return {"each": each, "min": min(each, default=None), "max": max(each, default=None)}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))  # (n,)


def print_model(res: dict) -> None:
    ref = res["quality"]["sentkit torch fp32"]
    ratios = res.get("speed_vs_fastest_anchor", {})
    medians = res.get("median_speed_vs_fastest_anchor", {})
    rounds = res.get("round_speed_vs_fastest_anchor", {})
    fastest = res.get("fastest_anchor", {}).get("best", "-")
    print(
        f"\n{res['model']}: {res['tokens_per_sentence']['mean']:.1f} tokens/sentence; fastest anchor {fastest}"
    )
    extra = [k for k in ref if k != "stsb"]
    head = (
        f"{'runner':<24} {'best sent/s':>11} {'median':>8} {'vs fastest st (best/median) [rounds]':>40} "
        f"{'of ceiling':>12} {'STS-B':>7} {'dSTS-B':>7}"
    )
    print(head + "".join(f" {k:>12}" for k in extra))
    for runner, t in res["timings"].items():
        q = res["quality"][runner]
        ratio = f"{ratios[runner]:.2f}x / {medians[runner]:.2f}x" if runner in ratios else "-"
        spread = rounds.get(runner, {})
        if spread.get("min") is not None:
            ratio += f" [{spread['min']:.2f}-{spread['max']:.2f}]"
        share = res["fraction_of_ceiling"].get(runner)
        share = f"{share:.2f} {res['arithmetic'][runner]}" if share is not None else "-"
        line = (
            f"{runner:<24} {t['best_sent_per_s']:11.1f} {t['median_sent_per_s']:8.1f} {ratio:>40} "
            f"{share:>12} {q['stsb']:7.2f} {q['stsb'] - ref['stsb']:+7.2f}"
        )
        line += "".join(f" {q[k]:12.2f}" if k in q else f" {'':>12}" for k in extra)
        print(line)
    gemm = res["gemm_gflops"]["layer_mix"]
    print(
        f"fp32 ceiling: GEMM {gemm:.1f} GFLOP/s / {res['flops_per_sentence'] / 1e9:.3f} GFLOP per sentence = "
        f"{res['fp32_ceiling_sent_per_s']:.1f} sent/s; "
        + ", ".join(f"{r} {f:.2f}" for r, f in res["fp32_fraction_of_ceiling"].items())
    )
    replay = res["gemm_replay"]
    print(
        f"sustained fp32 ceiling: the model's GEMMs alone on the run's batches, {replay['gflops']:.1f} "
        f"GFLOP/s = {replay['ceiling_sent_per_s']:.1f} sent/s; "
        + ", ".join(f"{r} {f:.2f}" for r, f in res["fp32_fraction_of_sustained_ceiling"].items())
    )
    rates = ", ".join(f"{a} {r:.1f}" for a, r in res["gemm_rates_gops"].items() if r is not None)
    ceilings = ", ".join(f"{a} {c:.1f}" for a, c in res["ceiling_sent_per_s"].items())
    print(f"GEMM rates (G(FL)OP/s, layer mix): {rates}; ceilings (sent/s): {ceilings}")
    for runner, why in res["skipped"].items():
        print(f"no {runner} row: {why}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm-en,e5-small-m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="first N sentences only (quick runs)")
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--anchor-python", type=Path, default=DEFAULT_ANCHOR_VENV / "bin" / "python")
    parser.add_argument(
        "--build-anchor-venv", type=Path, default=None, help="build the anchor venv here first"
    )
    parser.add_argument(
        "--anchor-openvino-python", type=Path, default=DEFAULT_ANCHOR_OPENVINO_VENV / "bin" / "python"
    )
    parser.add_argument(
        "--build-anchor-openvino-venv",
        type=Path,
        default=None,
        help="build the OpenVINO anchor venv here first",
    )
    parser.add_argument(
        "--anchors", default="onnx,openvino", help="anchor sides to run: onnx, openvino (comma list)"
    )
    parser.add_argument("--no-anchor", action="store_true", help="sentkit runners only")
    parser.add_argument(
        "--anchor-quantization",
        default=None,
        choices=["arm64", "avx2", "avx512", "avx512_vnni"],
        help="export_dynamic_quantized_onnx_model config (default: avx512_vnni if the CPU has it, else avx2)",
    )
    parser.add_argument("--no-extra-quality", action="store_true", help="skip e5's STS17 and Tatoeba deu")
    parser.add_argument(
        "--bf16",
        default="auto",
        choices=["auto", "on", "off"],
        help="time sentkit's and sentence-transformers' torch backends in bfloat16 too (auto: where the CPU "
        "has avx512_bf16 or amx_bf16; elsewhere bfloat16 is emulated and slow)",
    )
    parser.add_argument(
        "--alternatives",
        default="",
        help="extra int8 runtimes to time beside sentkit's: ctranslate2, ort-fused (comma list)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    flags = cpu_info()["flags"] or []
    if args.anchor_quantization is None:
        args.anchor_quantization = "avx512_vnni" if "avx512_vnni" in flags else "avx2"

    torch.set_num_threads(args.threads)
    if args.build_anchor_venv is not None:
        args.anchor_python = build_anchor_venv(args.build_anchor_venv)
    if args.build_anchor_openvino_venv is not None:
        args.anchor_openvino_python = build_anchor_venv(
            args.build_anchor_openvino_venv, ANCHOR_OPENVINO_PINS, ANCHOR_OPENVINO_DROP
        )
    sides = [] if args.no_anchor else [a for a in args.anchors.split(",") if a]
    pythons = {"onnx": args.anchor_python, "openvino": args.anchor_openvino_python}
    builds = {"onnx": "--build-anchor-venv", "openvino": "--build-anchor-openvino-venv"}
    for side in sides:
        if side not in pythons:
            raise SystemExit(f"--anchors {args.anchors}: expected onnx and/or openvino, got {side!r}")
        if not pythons[side].is_file():
            raise SystemExit(
                f"{pythons[side]}: no {side} anchor venv; build it with `python -m bench.int8_speed "
                f"{builds[side]} DIR` (then pass its python), or leave it out with --anchors / --no-anchor"
            )
    workers = {
        side: AnchorWorker(pythons[side], args.threads, args.out.with_name(f"int8_anchor_worker_{side}.log"))
        for side in sides
    }
    sentences = stsb_test_sentences(args.data_root)[: args.limit]
    load_before = load_average()
    results = {}
    try:
        anchor_versions = {side: worker.ask("versions") for side, worker in workers.items()}
        with tempfile.TemporaryDirectory() as scratch:
            for name in args.models.split(","):
                results[name] = bench_model(name, args, sentences, workers, Path(scratch))
    finally:
        for worker in workers.values():
            worker.close()

    out = {
        "data": "STS-B test (sts-test.csv), both sentences of each pair",
        "sentences": len(sentences),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "repeats": args.repeats,
        "anchor_quantization": args.anchor_quantization if "onnx" in workers else None,
        "goals": GOALS,
        "models": results,
        "versions": {"sentkit_env": package_versions(), "anchor_envs": anchor_versions},
        "machine": machine_info(),
        "load_average_1min": {"before": load_before, "after": load_average()},
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    print(f"\n{len(sentences)} sentences, batch {args.batch_size}, {args.threads} threads")
    for res in results.values():
        print_model(res)
    return write_result(args.out, out)


if __name__ == "__main__":
    main()
