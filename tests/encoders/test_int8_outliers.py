"""The outlier rule of the int8 export: max|x| / p99.9|x| of each weight MatMul's input, checked against the
torch model's own activations, and the MatMuls above the threshold left in fp32 in the quantized graph."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import torch  # noqa: E402

from conftest import make_tiny_encoder  # noqa: E402
from sentkit.encoders.onnx.contract import META_FILE  # noqa: E402
from sentkit.encoders.onnx.export import Int8Options, export_fp32, export_onnx  # noqa: E402
from sentkit.encoders.onnx.int8_outliers import (  # noqa: E402
    CALIBRATION_SENTENCES,
    input_outlier_ratios,
    outlier_matmuls,
    weight_matmul_inputs,
)


@pytest.fixture
def tiny(tmp_path):
    encoder = make_tiny_encoder(pooling="mean").eval()
    path = tmp_path / "fp32.onnx"
    export_fp32(encoder, path)
    return encoder, path


def torch_ratios(encoder) -> dict[str, float]:
    """The same statistic from forward hooks on the torch model's Linear layers (real tokens only)."""
    batch = encoder.tokenizer(
        list(CALIBRATION_SENTENCES),
        truncation=True,
        max_length=encoder.max_length,
        padding=True,
        return_tensors="pt",
    )
    real = batch["attention_mask"].bool()
    seen: dict[str, np.ndarray] = {}
    hooks = [
        module.register_forward_hook(
            lambda m, inp, out, name=name: seen.__setitem__(name, inp[0][real].abs())
        )
        for name, module in encoder.model.named_modules()
        if isinstance(module, torch.nn.Linear)
    ]
    with torch.no_grad():
        encoder.model(**batch)
    for hook in hooks:
        hook.remove()
    return {name: float(x.max() / np.quantile(x.numpy().ravel(), 0.999)) for name, x in seen.items()}


def test_ratios_match_the_torch_activations(tiny):
    encoder, path = tiny
    got = input_outlier_ratios(path, encoder.tokenizer, encoder.prefix, encoder.max_length)
    want = torch_ratios(encoder)
    assert len(got) == len(want) == len(weight_matmul_inputs(onnx.load(str(path))))
    # ONNX names the node after the module path: encoder.layer.0.output.dense -> /model/encoder/layer.0/output/dense
    for name, ratio in want.items():
        node = "/model/" + re.sub(r"\.(?!\d)", "/", name) + "/MatMul"
        assert got[node] == pytest.approx(ratio, rel=1e-3), node
    assert all(r >= 1 for r in got.values())


def test_matmuls_above_the_threshold_stay_fp32_in_the_int8_graph(tiny, tmp_path):
    encoder, path = tiny
    ratios = input_outlier_ratios(path, encoder.tokenizer, encoder.prefix, encoder.max_length)
    threshold = float(np.median(list(ratios.values())))
    kept = outlier_matmuls(path, encoder.tokenizer, encoder.prefix, encoder.max_length, threshold)
    assert set(kept) == {n for n, r in ratios.items() if r > threshold} and 0 < len(kept) < len(ratios)
    assert list(kept.values()) == sorted(kept.values(), reverse=True)

    folder = export_onnx(encoder, tmp_path / "int8", int8=Int8Options(outlier_ratio=threshold))
    meta = json.loads((folder / META_FILE).read_text())["int8"]
    assert set(meta["fp32_matmuls"]) == set(kept)
    graph = onnx.load(str(folder / "model.onnx")).graph
    fp32_left = {node.name for node in graph.node if node.op_type == "MatMul"}
    assert set(kept) <= fp32_left  # kept as plain fp32 MatMuls ...
    others = set(ratios) - set(kept)
    assert not others & fp32_left  # ... and every other weight MatMul was quantized

    none = export_onnx(encoder, tmp_path / "int8-all", int8=Int8Options(outlier_ratio=0))
    assert json.loads((none / META_FILE).read_text())["int8"]["fp32_matmuls"] == {}
