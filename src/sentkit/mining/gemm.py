"""The machine's matrix-product speed: CPU flags that make bfloat16 native, and measured GFLOP/s per dtype.

Exact search is one large matrix product, so its bound is what torch's matmul reaches here. bfloat16 halves
the bytes and, on CPUs with avx512_bf16 or AMX, roughly doubles the FLOP/s; elsewhere torch emulates it and
it is several times slower than float32, so it is chosen only where the flags say it is native and a short
measurement confirms it is faster.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

from sentkit.provenance import cpu_flags

BF16_MIN_SPEEDUP = 1.2  # bfloat16 candidates cost a float32 re-score: take them only when clearly faster


def native_bf16(flags: Sequence[str]) -> bool:
    """Whether a CPU with `flags` multiplies bfloat16 natively (avx512_bf16, or AMX tiles with bfloat16)."""
    return bool({"avx512_bf16", "amx_bf16"} & set(flags))


def best_seconds(run: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` timed calls of `run`, after one untimed warm-up call: the rate a product
    reaches when nothing else on the host gets in its way (the one GEMM timer; the benchmarks' probes
    use it too)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_gflops(dtype: str, rows: int = 2048, cols: int = 8192, dim: int = 384, repeats: int = 3) -> float:
    """torch's (rows, dim) x (dim, cols) product in `dtype` ("float32" or "bfloat16"), GFLOP/s: the best of
    `repeats` products into one output (`best_seconds`)."""
    import torch

    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(rows, dim, generator=gen).to(torch_dtype)
    b = torch.randn(cols, dim, generator=gen).to(torch_dtype)
    out = torch.mm(a, b.T)  # written again by every product: no allocation or page faults in the timing
    seconds = best_seconds(lambda: torch.mm(a, b.T, out=out), repeats)
    return 2 * rows * cols * dim / seconds / 1e9


@functools.cache
def exact_dtype_choice(device: str = "cpu") -> tuple[str, str]:
    """("float32" | "bfloat16", why) for products on `device` ("cpu" or "cuda"). CPU: bfloat16 where the
    CPU has it natively and its product measures at least BF16_MIN_SPEEDUP x float32's (measured once per
    process, about a second). GPU: bfloat16 where the GPU supports it (tensor cores from Ampere on)."""
    if device == "cuda":
        import torch

        if torch.cuda.is_bf16_supported():
            return "bfloat16", f"{torch.cuda.get_device_name()} multiplies bfloat16 natively"
        return "float32", f"{torch.cuda.get_device_name()} does not support bfloat16"
    flags = cpu_flags()
    if not native_bf16(flags):
        return "float32", "the CPU lists neither avx512_bf16 nor amx_bf16"
    fp32, bf16 = matmul_gflops("float32"), matmul_gflops("bfloat16")
    speeds = f"float32 {fp32:.0f}, bfloat16 {bf16:.0f} GFLOP/s"
    if bf16 >= BF16_MIN_SPEEDUP * fp32:
        return "bfloat16", f"native bfloat16 measured faster ({speeds})"
    return "float32", f"native bfloat16 measured under {BF16_MIN_SPEEDUP}x float32 ({speeds})"
