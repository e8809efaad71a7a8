"""Static int8 of an fp32 sentence graph with onnxruntime: QDQ, per-channel weights, calibrated activations.

Where dynamic quantization (export.quantize_int8) measures each activation's range on every batch at
run time, static quantization fixes one range per activation tensor from real calibration sentences
(calibration.calibration_set), so the int8 graph spends no time on range finding and onnxruntime can fuse
QuantizeLinear -> MatMul -> DequantizeLinear chains into integer kernels. Only the weight MatMuls are
quantized by default (the attention products multiply two activations); MatMuls fed by outliers stay fp32
as in the dynamic path (int8_outliers.py). Weights are 7-bit by default for the same reason as the dynamic
path: without VNNI, onnxruntime's u8 x s8 kernel adds pairs of products in int16.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentkit.encoders.onnx.contract import graph_feeds
from sentkit.encoders.onnx.int8_outliers import DEFAULT_THRESHOLD, weight_matmul_inputs


@dataclass(frozen=True)
class StaticInt8Options:
    """onnxruntime `quantize_static` settings; each is recorded in the export's metadata."""

    per_channel: bool = True  # one weight scale per output column
    reduce_range: bool = True  # 7-bit weights: no int16 saturation on CPUs without VNNI
    attention: bool = False  # also quantize the activation x activation MatMuls (scores, mixing)
    outlier_ratio: float = DEFAULT_THRESHOLD  # weight MatMuls above it stay fp32 (int8_outliers.py)
    # sentences per calibration batch: one, so no pad token's activations widen a range
    calibration_batch: int = 1


def quantize_static_int8(
    src: Path,
    dst: Path,
    options: StaticInt8Options,
    encoder,
    calibration: Sequence[str],
    keep_fp32: Sequence[str] = (),
) -> None:
    """QDQ int8 of `src` into `dst`, activation ranges from `calibration` run through `src` in fp32."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    feeds = list(graph_feeds(encoder, calibration, options.calibration_batch))
    graph = onnx.load(str(src))
    # the weight MatMuls, by name: onnxruntime's MatMulConstBOnly alone still quantizes the attention
    # products once their inputs (the Q/K/V projections' outputs) carry Q/DQ pairs
    weights = [node for node in weight_matmul_inputs(graph) if node not in set(keep_fp32)]
    matmuls = [node.name for node in graph.graph.node if node.op_type == "MatMul"]
    chosen = [n for n in matmuls if n not in set(keep_fp32)] if options.attention else weights

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter(feeds)

        def get_next(self):
            return next(self.batches, None)

    quantize_static(
        str(src),
        str(dst),
        Reader(),
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["MatMul"],
        per_channel=options.per_channel,
        reduce_range=options.reduce_range,
        activation_type=QuantType.QUInt8,  # u8 activations x s8 weights: the x86 kernels' pairing
        weight_type=QuantType.QInt8,
        nodes_to_quantize=chosen,
        nodes_to_exclude=list(keep_fp32),
        # min and max over the calibration sentences: onnxruntime's histogram methods (percentile,
        # entropy) stack every batch into one array, which sentences of different lengths cannot form
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={
            "MatMulConstBOnly": not options.attention,
            # a MatMul's output feeds the fp32 bias Add: quantizing it would only add a Q/DQ pair and its
            # rounding; left fp32, onnxruntime fuses DQ(x), DQ(w) -> MatMul into MatMulIntegerToFloat
            "OpTypesToExcludeOutputQuantization": ["MatMul"],
            # every calibration sentence's activations at once: bounded, so memory does not grow with them
            "CalibMaxIntermediateOutputs": 64,
        },
    )
    keep_residuals_fp32(dst, set(chosen))


def keep_residuals_fp32(path: Path, quantized: set[str]) -> None:
    """Feed every node but the quantized MatMuls the float tensor, not its dequantized copy.

    onnxruntime replaces all consumers of a quantized activation with its DequantizeLinear output; for a
    LayerNorm output that also feeds the residual Add, that puts the residual stream itself through 8 bits
    (on all-MiniLM-L6-v2 the mean cosine to fp32 fell below the 0.99 bar that way)."""
    import onnx

    model = onnx.load(str(path))
    producer = {out: node for node in model.graph.node for out in node.output}
    float_of = {}  # DequantizeLinear output -> the fp32 tensor its QuantizeLinear read
    for node in model.graph.node:
        source = producer.get(node.input[0]) if node.input else None
        if node.op_type == "DequantizeLinear" and source is not None and source.op_type == "QuantizeLinear":
            float_of[node.output[0]] = source.input[0]
    for node in model.graph.node:
        if node.name in quantized or node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            continue
        for i, name in enumerate(node.input):
            if name in float_of:
                node.input[i] = float_of[name]
    onnx.save(model, str(path))
