"""The host's matrix-product throughput per arithmetic (fp32, int8, bf16) at an encoder's linear shapes.

bench/int8_speed.py divides each runner's sentences/s by the ceiling of the arithmetic it uses: the
sentences/s an encoder would reach if its weight GEMMs ran at this host's best rate for that arithmetic and
its attention products (activation x activation, fp32 in every int8 path here) at the fp32 rate.

int8 is probed two ways, and the faster counts as the ceiling: torch's `_int_mm` (s8 x s8 -> s32) and
onnxruntime's MatMulInteger (u8 x s8 -> s32: the kernel family onnxruntime's int8 graphs run, VPMADDUBSW
without VNNI, VPDPBUSD with it). bf16 is probed only where the CPU reports avx512_bf16 or amx_bf16; elsewhere
torch emulates it and the number would say nothing about the host.
"""

from __future__ import annotations

import numpy as np
import torch

from sentkit.mining.gemm import best_seconds

# the linear shapes of one encoder layer (in, out) and how many of each a layer runs
LAYER = {
    "qkvo": ("hidden", "hidden", 4),
    "ffn_in": ("hidden", "intermediate", 1),
    "ffn_out": ("intermediate", "hidden", 1),
}
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def _layer_mix(rows: int, dims: dict[str, int], time_shape, repeats: int) -> dict[str, float]:
    """G(FL)OP/s per shape and for one layer's mix (4 h x h projections, the two FFN matrices)."""
    out, total_ops, total_seconds = {}, 0.0, 0.0
    for name, (k_dim, n_dim, count) in LAYER.items():
        k, n = dims[k_dim], dims[n_dim]
        seconds = time_shape(rows, k, n, repeats)
        ops = 2.0 * rows * k * n
        out[name] = ops / seconds / 1e9
        total_ops += count * ops
        total_seconds += count * seconds
    out["layer_mix"] = total_ops / total_seconds / 1e9
    return out


def fp32_torch(rows: int, hidden: int, intermediate: int, repeats: int = 20) -> dict[str, float]:
    """torch fp32 GFLOP/s at the encoder's shapes with `rows` tokens per batch (`torch.nn.functional.linear`,
    as the encoder's layers run them)."""

    def time_shape(rows, k, n, repeats):
        x, w = torch.randn(rows, k), torch.randn(n, k)
        return best_seconds(lambda: torch.nn.functional.linear(x, w), repeats)

    return _layer_mix(rows, {"hidden": hidden, "intermediate": intermediate}, time_shape, repeats)


def int8_torch(rows: int, hidden: int, intermediate: int, repeats: int = 20) -> dict[str, float]:
    """torch._int_mm (s8 x s8 -> s32) GOP/s at the encoder's shapes with `rows` tokens per batch."""

    def time_shape(rows, k, n, repeats):
        a = torch.randint(-128, 128, (rows, k), dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
        return best_seconds(lambda: torch._int_mm(a, b), repeats)

    return _layer_mix(rows, {"hidden": hidden, "intermediate": intermediate}, time_shape, repeats)


def int8_onnxruntime(
    rows: int, hidden: int, intermediate: int, threads: int, repeats: int = 20
) -> dict[str, float]:
    """onnxruntime MatMulInteger (u8 activations x s8 weights -> s32) GOP/s at the encoder's shapes."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    def time_shape(rows, k, n, repeats):
        weights = numpy_helper.from_array(
            np.random.default_rng(0).integers(-64, 64, (k, n), dtype=np.int8), "B"
        )
        graph = helper.make_graph(
            [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])],
            "int8_gemm",
            [helper.make_tensor_value_info("A", TensorProto.UINT8, [None, k])],
            [helper.make_tensor_value_info("Y", TensorProto.INT32, [None, n])],
            [weights],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feed = {"A": np.random.default_rng(1).integers(0, 256, (rows, k), dtype=np.uint8)}
        return best_seconds(lambda: session.run(None, feed), repeats)

    return _layer_mix(rows, {"hidden": hidden, "intermediate": intermediate}, time_shape, repeats)


def bf16_torch(rows: int, hidden: int, intermediate: int, repeats: int = 20) -> dict[str, float]:
    """torch bf16 GFLOP/s at the encoder's shapes (meaningful only on CPUs with BF16_FLAGS)."""

    def time_shape(rows, k, n, repeats):
        x = torch.randn(rows, k).bfloat16()
        w = torch.randn(n, k).bfloat16()
        return best_seconds(lambda: torch.nn.functional.linear(x, w), repeats)

    return _layer_mix(rows, {"hidden": hidden, "intermediate": intermediate}, time_shape, repeats)


def probe_all(rows: int, hidden: int, intermediate: int, threads: int, flags: list[str]) -> dict[str, dict]:
    """Every probe this host can answer: {"int8_torch", "int8_onnxruntime", "bf16_torch"}; a probe that
    cannot run says why in place of its numbers."""
    out: dict[str, dict] = {}
    with torch.inference_mode():
        try:
            out["int8_torch"] = int8_torch(rows, hidden, intermediate)
        except RuntimeError as err:  # a torch build without a CPU _int_mm kernel
            out["int8_torch"] = {"skipped": f"{type(err).__name__}: {err}"}
        try:
            out["int8_onnxruntime"] = int8_onnxruntime(rows, hidden, intermediate, threads)
        except ImportError as err:
            out["int8_onnxruntime"] = {"skipped": str(err)}
        if any(flag in flags for flag in BF16_FLAGS):
            out["bf16_torch"] = bf16_torch(rows, hidden, intermediate)
        else:
            out["bf16_torch"] = {
                "skipped": f"no {' / '.join(BF16_FLAGS)} on this CPU (torch would emulate bf16)"
            }
    return out


def best_rate(probes: list[dict[str, dict]], names: tuple[str, ...]) -> float | None:
    """The highest layer_mix rate over every round's probes of the named kinds (None when none ran)."""
    rates = [p[n]["layer_mix"] for p in probes for n in names if "layer_mix" in p.get(n, {})]
    return max(rates) if rates else None


def ceiling_sent_per_s(
    weight_flops: float, attention_flops: float, weight_rate: float, fp32_rate: float
) -> float:
    """Sentences/s if the weight GEMMs ran at `weight_rate` and the attention products at `fp32_rate`
    (both in G(FL)OP/s; flops per sentence)."""
    return 1.0 / (weight_flops / (weight_rate * 1e9) + attention_flops / (fp32_rate * 1e9))
