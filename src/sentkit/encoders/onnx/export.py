"""Export a `TransformerEncoder` to one ONNX graph: token ids + attention mask in, the sentence vector out.

The model's pooling, Dense layers and L2 normalisation run inside the graph, so onnxruntime and a tokenizer
are all a user needs. The folder holds model.onnx, the tokenizer files, `sentkit_onnx.json` (prefix, max
length, pooling, Dense layers, checksum) and a README.md whose snippet runs the model with onnxruntime +
tokenizers alone.

int8 is onnxruntime's dynamic quantization of the weight MatMuls and the embedding tables: per-channel
7-bit weights, uint8 activations quantized per batch at run time; the activation x activation attention
products stay fp32. Measured on the packaged MiniLM (AVX2, STS-B test, one pipeline; indicative, see
docs/performance.md): per-channel 7-bit 82.07 (fp32 82.03), per-channel 8-bit 81.69, per-tensor 8-bit 81.76,
per-tensor 7-bit 80.43, at the same speed. Without AVX-512 VNNI, onnxruntime's u8 x s8 kernel adds
pairs of products in int16 (VPMADDUBSW), which 8-bit weights can saturate; 7-bit weights cannot, and
per-channel scales make up the lost bit. onnxruntime's offline BERT fusion (QAttention) was slower than
the unfused graph, which onnxruntime fuses itself at load, so it is off (`fuse=True` keeps it measurable).
Weight MatMuls whose input has extreme outliers stay fp32 (int8_outliers.py: 3 of e5-small's 72, none of
MiniLM's).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentkit.atomic import atomic_directory, check_writable_dir
from sentkit.cache import package_version, sha256_file
from sentkit.encoders.attention import attention_implementation
from sentkit.encoders.calibration import SentenceSet
from sentkit.encoders.export_check import export_check_record
from sentkit.encoders.onnx.contract import CACHE_KEY_FILE, INPUTS, META_FILE, OUTPUT, require_onnx
from sentkit.encoders.onnx.encoder import OnnxEncoder
from sentkit.encoders.onnx.int8_outliers import DEFAULT_THRESHOLD, outlier_matmuls
from sentkit.encoders.onnx.static_int8 import StaticInt8Options, quantize_static_int8
from sentkit.errors import OutputPathError

MODEL_FILE = "model.onnx"
OWN_FILES = (META_FILE, CACHE_KEY_FILE, "README.md")
FORMAT_VERSION = 3  # bump when the graph or the files written change; cached exports are then redone
OPSET = 17


@dataclass(frozen=True)
class Int8Options:
    """onnxruntime dynamic quantization settings (`quantize_dynamic`); the defaults are the measured best."""

    per_channel: bool = True  # one scale per output column
    reduce_range: bool = True  # 7-bit weights: no int16 saturation on CPUs without VNNI (module docstring)
    fuse: bool = False  # onnxruntime.transformers BERT fusion (QAttention) before quantizing: slower here
    embeddings: bool = True  # quantize the embedding tables too (Gather; one scale per table)
    # keep in fp32 the weight MatMuls whose input reaches this many times its 99.9th percentile on the
    # calibration sentences (int8_outliers.py); 0 quantizes every weight MatMul
    outlier_ratio: float = DEFAULT_THRESHOLD


def sentence_graph(encoder):
    """A torch module (input_ids, attention_mask) -> the sentence vectors of `encoder`: its transformer, then
    its own pooling, Dense layers and normalisation (`TransformerEncoder.sentence_vectors`)."""
    import torch
    from torch import nn

    takes_types = "token_type_ids" in inspect.signature(encoder.model.forward).parameters

    class SentenceGraph(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            kwargs = {"token_type_ids": torch.zeros_like(input_ids)} if takes_types else {}
            hidden = self.encoder.model(
                input_ids=input_ids, attention_mask=attention_mask, **kwargs
            ).last_hidden_state  # (batch, seq, hidden)
            return self.encoder.sentence_vectors(hidden, attention_mask)  # (batch, dim)

    return SentenceGraph().eval()


def export_fp32(encoder, path: Path) -> None:
    """Trace `encoder` into `path` (TorchScript exporter: no onnxscript needed; dynamic batch and length)."""
    import torch

    graph = sentence_graph(encoder)
    sample = encoder.tokenizer(
        [encoder.prefix + "a short sentence", encoder.prefix + "and a longer sentence for the trace"],
        padding=True,
        return_tensors="pt",
    )
    args = (sample["input_ids"], sample["attention_mask"])
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    was_training = encoder.training
    encoder.eval()
    try:
        # eager attention: the SDPA graph hides the attention pattern onnxruntime fuses and adds
        # IsNaN/Where guards per layer (measured 20% slower fp32 on MiniLM)
        with attention_implementation(encoder.model, "eager"), torch.no_grad(), warnings.catch_warnings():
            # the tracer warns about every Python-level shape check in transformers; none changes the graph
            warnings.simplefilter("ignore")
            torch.onnx.export(
                graph,
                args,
                str(path),
                dynamo=False,
                input_names=list(INPUTS),
                output_names=[OUTPUT],
                dynamic_axes={**axes, OUTPUT: {0: "batch"}},
                opset_version=OPSET,
                do_constant_folding=True,
            )
    finally:
        encoder.train(was_training)


def quantize_int8(
    src: Path, dst: Path, options: Int8Options, num_heads: int, hidden: int, keep_fp32: Sequence[str] = ()
) -> None:
    """Dynamic int8 quantization of `src` into `dst` (optionally after onnxruntime's BERT fusion);
    the MatMul nodes named in `keep_fp32` stay fp32."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if options.fuse:
        from onnxruntime.transformers.optimizer import optimize_model

        fused = src.with_name("fused.onnx")
        optimize_model(
            str(src), model_type="bert", num_heads=num_heads, hidden_size=hidden, opt_level=0
        ).save_model_to_file(str(fused))
        src = fused
    with _quiet_preprocessing_hint():
        quantize_dynamic(
            str(src),
            str(dst),
            weight_type=QuantType.QInt8,
            per_channel=options.per_channel,
            reduce_range=options.reduce_range,
            op_types_to_quantize=["MatMul", "Attention"] + (["Gather"] if options.embeddings else []),
            nodes_to_exclude=list(keep_fp32),
            # onnxruntime's contrib ops (fused graphs) have no ONNX shape inference; their outputs are fp32
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


@contextlib.contextmanager
def _quiet_preprocessing_hint():
    """quantize_dynamic and quantize_static log a "consider pre-processing" hint on the root logger for every
    model; the hint (onnxruntime's shape inference and graph optimisation before quantizing) is for graphs
    whose shapes the quantizer cannot infer, and the traced sentence graph is not one."""

    def drop(record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def export_versions() -> dict[str, str | int]:
    """What an exported graph depends on: the export format and the packages that trace and quantize it."""
    return {
        "format": FORMAT_VERSION,
        **{
            name: package_version(name)
            for name in ("sentkit", "torch", "transformers", "onnx", "onnxruntime")
        },
    }


def check_export_target(out: str | Path, overwrite: bool) -> Path:
    """Fail before any work: `out` must be a writable folder that is empty or absent, or with `overwrite`
    a folder an earlier export wrote (it holds sentkit_onnx.json, and only the files it lists).

    The export replaces `out` whole (one rename), so the working folder, a folder holding it and the home
    folder are refused outright, whatever they hold.
    """
    out = Path(out)
    check_writable_dir(out)
    target = out.expanduser().resolve()
    cwd, home = Path.cwd().resolve(), Path.home().resolve()
    if target == cwd or target in cwd.parents or target == home or target in home.parents:
        what = (
            "the working folder or a folder holding it"
            if target in (cwd, *cwd.parents)
            else "the home folder"
        )
        raise OutputPathError(
            f"{out}: is {what}; an export replaces its folder whole, so give a new folder "
            f"(e.g. {out / 'onnx'})"
        )
    if not out.is_dir() or not any(out.iterdir()):
        require_onnx()
        return out
    if not overwrite:
        raise OutputPathError(f"{out}: folder exists and is not empty; pass --overwrite to replace it")
    meta = _export_meta(out)
    if meta is None:
        raise OutputPathError(
            f"{out}: not a sentkit export folder (no readable {META_FILE}); --overwrite replaces only "
            "folders sentkit exported, so give a new folder"
        )
    problem = marker_problem(out, meta)
    if problem is not None:
        raise OutputPathError(
            f"{out / META_FILE}: not the marker this sentkit writes ({problem}); --overwrite replaces only "
            "folders sentkit exported, so delete the folder yourself or give a new one"
        )
    written = set(meta["files"])  # anything else in the folder was added by hand
    foreign = sorted(p.name for p in out.iterdir() if p.name not in {*written, *OWN_FILES})
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputPathError(
            f"{out}: holds files the export did not write ({shown}); move them out before --overwrite"
        )
    require_onnx()
    return out


def _export_meta(folder: Path) -> dict | None:
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


# every key `export_onnx` writes to sentkit_onnx.json and its JSON type (`source_absolute` is optional)
MARKER_KEYS: dict[str, tuple[type, ...]] = {
    "model_file": (str,),
    "inputs": (list,),
    "output": (str,),
    "prefix": (str,),
    "do_lower_case": (bool,),
    "max_length": (int,),
    "pooling": (str,),
    "include_prompt": (bool,),
    "dense": (list,),
    "normalize": (bool,),
    "dim": (int,),
    "pad_token_id": (int,),
    "languages": (list, type(None)),
    "source": (str,),
    "int8": (dict, type(None)),
    "opset": (int,),
    "versions": (dict,),
    "sha256": (str,),
    "files": (list,),
}


# the OpenVINO export (openvino/export.py) writes the same sentence contract, with the IR's weights file and
# its runtime settings in place of the ONNX opset
OPENVINO_MARKER_KEYS: dict[str, tuple[type, ...]] = {
    **{key: types for key, types in MARKER_KEYS.items() if key != "opset"},
    "runtime": (str,),
    "weights_file": (str,),
    "inference_precision": (str,),
    "weights_sha256": (str,),
}


def marker_problem(folder: Path, meta: dict) -> str | None:
    """Why `meta` is not a marker `export_onnx` (or the OpenVINO export) wrote into `folder` (None when it
    is): every key with its type, and the files it lists present. `--overwrite` deletes the folder only on a
    full marker."""
    keys = OPENVINO_MARKER_KEYS if meta.get("runtime") == "openvino" else MARKER_KEYS
    missing = [key for key in keys if key not in meta]
    if missing:
        return (
            f"no {', '.join(missing[:3])}{f' and {len(missing) - 3} more keys' if len(missing) > 3 else ''}"
        )
    for key, types in keys.items():
        value = meta[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"{key} is {type(value).__name__}, expected {' or '.join(t.__name__ for t in types)}"
    files = meta["files"]
    if not all(isinstance(name, str) and name and Path(name).name == name for name in files):
        return "files: expected a list of file names"
    for name in (meta["model_file"], META_FILE, *([meta["weights_file"]] if "weights_file" in keys else [])):
        if name not in files:
            return f"files does not list {name}"
    absent = [name for name in files if not (folder / name).is_file()]
    if absent:
        return f"files it lists are absent: {', '.join(absent[:3])}"
    return None


def export_onnx(
    encoder,
    out: str | Path,
    int8: bool | Int8Options | StaticInt8Options = False,
    overwrite: bool = False,
    source: str | None = None,
    calibration: SentenceSet | None = None,
    check: SentenceSet | str | None = None,
) -> Path:
    """Write `encoder` as an ONNX folder at `out` (atomically); refuse a non-empty `out` unless `overwrite`.

    `int8`: True (or Int8Options) quantizes the graph dynamically, StaticInt8Options statically with
    activation ranges from the `calibration` sentences (required then); `check` sentences, when given, are
    encoded by the export and by `encoder` and the export is refused unless they agree (export_check.py);
    a string there is recorded as the reason the export was not checked.
    `source` is recorded as the model the folder came from.
    """
    out = check_export_target(out, overwrite)
    options = (int8 if isinstance(int8, Int8Options | StaticInt8Options) else Int8Options()) if int8 else None
    static = isinstance(options, StaticInt8Options)
    if static and calibration is None:
        raise ValueError("static int8 needs calibration sentences (calibration.calibration_set)")
    with atomic_directory(out) as tmp:
        fp32 = tmp / ("fp32.onnx" if options else MODEL_FILE)
        export_fp32(encoder, fp32)
        keep_fp32: dict[str, float] = {}
        quantized = None
        if options:
            cfg = encoder.model.config
            fused = not static and options.fuse
            if options.outlier_ratio > 0 and not fused:  # fused graphs rename their MatMuls
                keep_fp32 = outlier_matmuls(
                    fp32, encoder.tokenizer, encoder.prefix, encoder.max_length, options.outlier_ratio
                )
            if static:
                with _quiet_preprocessing_hint():
                    quantize_static_int8(
                        fp32, tmp / MODEL_FILE, options, encoder, calibration.sentences, list(keep_fp32)
                    )
            else:
                quantize_int8(
                    fp32, tmp / MODEL_FILE, options, cfg.num_attention_heads, cfg.hidden_size, list(keep_fp32)
                )
            for scratch in ("fp32.onnx", "fused.onnx"):
                (tmp / scratch).unlink(missing_ok=True)
            quantized = {
                "method": "onnxruntime quantize_static (QDQ)" if static else "onnxruntime quantize_dynamic",
                **vars(options),
                "fp32_matmuls": {name: round(ratio, 2) for name, ratio in keep_fp32.items()},
            }
            if static:
                quantized["calibration"] = calibration.record()
        encoder.tokenizer.save_pretrained(tmp)
        meta = {
            "model_file": MODEL_FILE,
            "inputs": list(INPUTS),
            "output": OUTPUT,
            **contract_meta(encoder, source),
            "int8": quantized,
            "opset": OPSET,
            "versions": export_versions(),
            "sha256": sha256_file(tmp / MODEL_FILE),
        }
        write_meta(tmp, meta, readme_text)
        if check is not None:
            meta["check"] = export_check_record(
                check,
                encoder,
                lambda: OnnxEncoder(tmp, threads=torch_threads()),
                f"{meta['source']} as {_kind(meta)} ONNX",
            )
            write_meta(tmp, meta, readme_text)
    return out


def contract_meta(encoder, source: str | None) -> dict:
    """What a runtime needs to reproduce `encoder`'s vectors from its graph: prefix, casing, truncation,
    pooling, Dense layers, normalisation, padding, languages, and the model the graph came from."""
    meta = {
        "prefix": encoder.prefix,
        "do_lower_case": bool(encoder.lowercase),
        "max_length": int(encoder.max_length),
        "pooling": encoder.pooling_mode,
        "include_prompt": bool(encoder.include_prompt),
        "dense": [layer.config() for layer in encoder.dense],
        "normalize": bool(encoder.normalize),
        "dim": int(encoder.dim),
        "pad_token_id": int(encoder.tokenizer.pad_token_id or 0),
        "languages": list(encoder.languages) if encoder.languages is not None else None,
        "source": source or encoder.name,
    }
    local = Path(meta["source"]).expanduser()
    if local.is_dir():  # a local model folder as given, and where it is
        meta["source_absolute"] = str(local.resolve())
    return meta


def write_meta(folder: Path, meta: dict, readme) -> None:
    """sentkit_onnx.json and README.md of an export folder being written; `meta["files"]` lists what
    --overwrite may replace later (a file found beside these was added by hand: kept, refused)."""
    meta["files"] = sorted({p.name for p in folder.iterdir()} | {META_FILE, "README.md"})
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    (folder / "README.md").write_text(readme(meta))


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


SNIPPET = """\
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

folder = Path(".")  # this folder
meta = json.loads((folder / "sentkit_onnx.json").read_text())
tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
tokenizer.enable_truncation(meta["max_length"])
tokenizer.enable_padding(pad_id=meta["pad_token_id"])
session = ort.InferenceSession(str(folder / meta["model_file"]), providers=["CPUExecutionProvider"])

sentences = ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell."]
batch = tokenizer.encode_batch([meta["prefix"] + s for s in sentences])
ids = np.array([e.ids for e in batch], dtype=np.int64)
mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
vectors = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]  # (3, dim) float32
print(np.round(vectors @ vectors.T, 3))
"""


def dense_text(layer: dict) -> str:
    activation = layer["activation_function"].rsplit(".", 1)[-1]
    return f", Dense {layer['in_features']} -> {layer['out_features']} ({activation})"


def _kind(meta: dict) -> str:
    if not meta.get("int8"):
        return "fp32"
    return (
        "int8 (static quantization)"
        if "quantize_static" in meta["int8"]["method"]
        else "int8 (dynamic quantization)"
    )


def readme_text(meta: dict) -> str:
    """README.md of an export: what the graph computes and a snippet needing onnxruntime + tokenizers only."""
    prefix = (
        f'"{meta["prefix"]}" is prepended to every sentence (the model\'s contract). '
        if meta["prefix"]
        else ""
    )
    return (
        f"# {meta['source']} as ONNX ({_kind(meta)})\n\n"
        f"`{meta['model_file']}` takes `input_ids` and `attention_mask` (int64, batch x tokens) and returns "
        f"`{meta['output']}` (float32, batch x {meta['dim']}): {meta['pooling']} pooling"
        f"{''.join(dense_text(layer) for layer in meta.get('dense', []))}"
        f"{', L2-normalised' if meta['normalize'] else ''}. {prefix}"
        f"Inputs are cut at {meta['max_length']} tokens.\n\n"
        "Run it with onnxruntime and tokenizers alone (`pip install onnxruntime tokenizers numpy`), "
        "from this folder:\n\n```python\n" + SNIPPET + "```\n"
    )
