"""sentkit's ONNX sentence graph as OpenVINO IR (model.xml + model.bin): fp32, or static int8 by NNCF.

The graph is the fp32 ONNX export (onnx/export.py export_fp32: the transformer, pooling, Dense layers and
normalisation in one graph), converted with `openvino.convert_model` and saved with fp32 weights (OpenVINO
would compress them to fp16 by default). int8 is NNCF post-training quantization (`nncf.quantize`) calibrated
on real sentences (calibration.calibration_set), one sentence per calibration sample so no pad token enters
the activation statistics. The folder holds the same `sentkit_onnx.json` contract as an ONNX export, with
`"runtime": "openvino"`, and a README.md whose snippet needs only openvino, tokenizers and numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentkit.atomic import atomic_directory
from sentkit.cache import package_version, sha256_file
from sentkit.encoders import int8_choice
from sentkit.encoders.calibration import SentenceSet
from sentkit.encoders.export_check import export_check_record
from sentkit.encoders.onnx.contract import INPUTS, OUTPUT, graph_feeds
from sentkit.encoders.onnx.export import (
    check_export_target,
    contract_meta,
    dense_text,
    export_fp32,
    export_versions,
    torch_threads,
    write_meta,
)
from sentkit.encoders.openvino.encoder import OpenVinoEncoder, require_openvino
from sentkit.provenance import cpu_flags

MODEL_FILE = "model.xml"
WEIGHTS_FILE = "model.bin"
RUNTIME = "openvino"


@dataclass(frozen=True)
class OpenVinoInt8Options:
    """`nncf.quantize` settings; each is recorded in the export's metadata."""

    # mixed: symmetric weights, asymmetric activations (NNCF's choice for transformers); performance: both
    # symmetric (host_int8_options picks it per host kind)
    preset: str = "mixed"
    # 7-bit weights in every layer: CPUs without VNNI add pairs of u8 x s8 products in int16, which full
    # 8-bit weights can saturate; NNCF's own default ("first_layer_only") protects the first layer only
    overflow_fix: str = "enable"
    fast_bias_correction: bool = True


# host kind (int8_choice.HOST_KINDS) -> NNCF preset of the int8 export where it is not "mixed". The rule: a
# kind gets "performance" (activations symmetric too, so the int8 products need no zero-point correction) where
# it encoded faster than "mixed" at no quality cost on an idle host of that kind
# (docs/performance.md#choosing-the-int8-path); other kinds keep NNCF's transformer choice until measured.
PRESET_BY_HOST: dict[str, str] = {"amx": "performance"}


def host_int8_options(flags: Sequence[str] | None = None) -> OpenVinoInt8Options:
    """The int8 options for a CPU with `flags` (this CPU's by default): PRESET_BY_HOST's preset for its
    kind."""
    kind = int8_choice.host_kind(cpu_flags(flags))
    return OpenVinoInt8Options(preset=PRESET_BY_HOST.get(kind, "mixed"))


def openvino_versions() -> dict[str, str | int]:
    """export_versions() and the OpenVINO packages that convert and quantize the graph."""
    return {**export_versions(), "openvino": package_version("openvino"), "nncf": package_version("nncf")}


def export_openvino(
    encoder,
    out: str | Path,
    int8: bool | OpenVinoInt8Options = False,
    overwrite: bool = False,
    source: str | None = None,
    calibration: SentenceSet | None = None,
    check: SentenceSet | str | None = None,
) -> Path:
    """Write `encoder` as an OpenVINO folder at `out` (atomically), fp32 or NNCF int8 calibrated on
    `calibration`; with `check` sentences, refused unless its vectors agree with `encoder`'s (a string there
    is recorded as the reason it was not checked; export_check.py)."""
    options = (int8 if isinstance(int8, OpenVinoInt8Options) else host_int8_options()) if int8 else None
    require_openvino(int8=options is not None, export=True)
    if options is not None and calibration is None:
        raise ValueError("OpenVINO int8 needs calibration sentences (calibration.calibration_set)")
    out = check_export_target(out, overwrite)
    import openvino as ov

    with atomic_directory(out) as tmp:
        onnx_file = tmp / "fp32.onnx"
        export_fp32(encoder, onnx_file)
        model = ov.convert_model(str(onnx_file))
        quantized = None
        if options is not None:
            model = nncf_int8(model, encoder, calibration, options)
            quantized = {
                "method": "nncf quantize (static)",
                **vars(options),
                "calibration": calibration.record(),
            }
        ov.save_model(model, str(tmp / MODEL_FILE), compress_to_fp16=False)
        onnx_file.unlink()
        encoder.tokenizer.save_pretrained(tmp)
        meta = {
            "model_file": MODEL_FILE,
            "weights_file": WEIGHTS_FILE,
            "runtime": RUNTIME,
            "inputs": list(INPUTS),
            "output": OUTPUT,
            **contract_meta(encoder, source),
            "int8": quantized,
            "inference_precision": "f32",  # OpenVINO runs the fp32 parts in bf16 on bf16 CPUs unless told
            "versions": openvino_versions(),
            "sha256": sha256_file(tmp / MODEL_FILE),
            "weights_sha256": sha256_file(tmp / WEIGHTS_FILE),
        }
        write_meta(tmp, meta, readme_text)
        if check is not None:
            kind = "int8" if quantized else "fp32"
            meta["check"] = export_check_record(
                check,
                encoder,
                lambda: OpenVinoEncoder(tmp, threads=torch_threads()),
                f"{meta['source']} as {kind} OpenVINO",
            )
            write_meta(tmp, meta, readme_text)
    return out


def nncf_int8(model, encoder, calibration: SentenceSet, options: OpenVinoInt8Options):
    """`model` (an openvino.Model of the sentence graph) quantized by NNCF on `calibration`, one sentence
    per sample."""
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, OverflowFix

    samples = list(graph_feeds(encoder, calibration.sentences, batch_size=1))
    return nncf.quantize(
        model,
        nncf.Dataset(samples),
        preset=nncf.QuantizationPreset(options.preset),
        model_type=nncf.ModelType.TRANSFORMER,  # LayerNorm, Softmax and GELU inputs stay fp32
        subset_size=len(samples),
        fast_bias_correction=options.fast_bias_correction,
        advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix(options.overflow_fix)),
    )


SNIPPET = """\
import json
from pathlib import Path

import numpy as np
import openvino as ov
from tokenizers import Tokenizer

folder = Path(".")  # this folder
meta = json.loads((folder / "sentkit_onnx.json").read_text())
tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
tokenizer.enable_truncation(meta["max_length"])
tokenizer.enable_padding(pad_id=meta["pad_token_id"])
model = ov.Core().compile_model(
    str(folder / meta["model_file"]), "CPU", {"INFERENCE_PRECISION_HINT": meta["inference_precision"]}
)

sentences = ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell."]
batch = tokenizer.encode_batch([meta["prefix"] + s for s in sentences])
ids = np.array([e.ids for e in batch], dtype=np.int64)
mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
vectors = model({"input_ids": ids, "attention_mask": mask})[0]  # (3, dim) float32
print(np.round(vectors @ vectors.T, 3))
"""


def readme_text(meta: dict) -> str:
    """README.md of an OpenVINO export: what the graph computes and a snippet needing openvino + tokenizers."""
    kind = "int8 (NNCF static quantization)" if meta["int8"] else "fp32"
    prefix = (
        f'"{meta["prefix"]}" is prepended to every sentence (the model\'s contract). '
        if meta["prefix"]
        else ""
    )
    return (
        f"# {meta['source']} as OpenVINO IR ({kind})\n\n"
        f"`{meta['model_file']}` (weights in `{meta['weights_file']}`) takes `input_ids` and `attention_mask` "
        f"(int64, batch x tokens) and returns `{meta['output']}` (float32, batch x {meta['dim']}): "
        f"{meta['pooling']} pooling{''.join(dense_text(layer) for layer in meta.get('dense', []))}"
        f"{', L2-normalised' if meta['normalize'] else ''}. {prefix}"
        f"Inputs are cut at {meta['max_length']} tokens.\n\n"
        "Run it with openvino and tokenizers alone (`pip install openvino tokenizers numpy`), "
        "from this folder:\n\n```python\n" + SNIPPET + "```\n"
    )
