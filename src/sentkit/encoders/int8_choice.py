"""Which int8 path `NAME@int8` runs on this CPU: chosen at run time from the instruction-set flags.

The int8 kernels differ by host kind: without VNNI, onnxruntime and OpenVINO multiply u8 x s8 with
VPMADDUBSW (pairs of products summed in int16); AVX-VNNI and AVX-512 VNNI do four multiply-adds per 32-bit
lane in one instruction; AMX multiplies int8 tiles. Which path is fastest at no quality cost can differ
between these, so `@int8` looks the host kind up in `INT8_PATH`, and every path stays selectable by its own
name (`@int8-dynamic`, `@int8-static`, `@openvino-int8`). The choice is recorded in the encoder's
`runtime_info`, which evaluation writes into the results file.

On AVX2 hosts `@int8` is onnxruntime dynamic int8: of the four int8 paths it was the fastest at no quality
cost, and OpenVINO's int8 was the slowest there and lost STS17 points. On AMX hosts it is OpenVINO int8
(NNCF static quantization): on 2 idle cores it was the fastest of the four paths and of every
sentence-transformers backend, and lost nothing (without openvino and nncf installed, the dynamic path runs
instead, and says why). Both measurements are listed in `MEASURED` (docs/performance.md). On the other kinds
it is onnxruntime dynamic int8 until `bench/int8_speed.py` on an idle host of that kind says otherwise.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from sentkit.provenance import cpu_info

# host kinds, most capable first: the first whose flags the CPU has all of
HOST_KINDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("amx", frozenset({"amx_int8"})),
    ("avx512_vnni", frozenset({"avx512_vnni"})),
    ("avx_vnni", frozenset({"avx_vnni"})),
    ("avx2", frozenset({"avx2"})),
    ("other", frozenset()),
)
# host kind -> the variant `@int8` runs there
INT8_PATH: dict[str, str] = {kind: "int8-dynamic" for kind, _ in HOST_KINDS} | {"amx": "openvino-int8"}
# host kind -> the measurement behind its entry (docs/results/); kinds not listed keep the dynamic path pending one
MEASURED: dict[str, str] = {
    "avx2": "fastest int8 path on an idle AVX2 host, at no quality cost (int8_speed_openvino_avx2.json: "
    "e5-small-m 244 / 223 / 126 sent/s for dynamic / static / OpenVINO int8, MiniLM 663 / 659 / 271)",
    "amx": "fastest int8 path on 2 idle cores of an AMX host, at no quality cost "
    "(int8_speed_amx_2core_one_stream.json, median sent/s: e5-small-m 1049 / 715 / 681 for OpenVINO / "
    "dynamic / static int8, STS-B +0.31, STS17 +0.15, Tatoeba deu -0.15 points; MiniLM 2173 / 1742 / 1678, "
    "STS-B +0.03); compiled as openvino_encoder.py does (int8_speed_amx_2core.json): e5-small-m 1082-1140 / "
    "654, MiniLM 2108-2462 / 1655 for OpenVINO / dynamic int8; with symmetric activations "
    "(int8_speed_amx_2core_performance_preset.json): e5-small-m 1198-1314 / 678 / 641, STS-B +0.35; MiniLM "
    "2667-2684 / 1636 / 1563, STS-B +0.03 for OpenVINO / dynamic / static int8",
}
PENDING = "onnxruntime dynamic int8 until the other paths are measured on an idle host of this kind"
NEEDS = {"openvino-int8": ("openvino", "nncf")}  # variants that need an optional package


def host_kind(flags: Sequence[str] | None) -> str:
    """The first of HOST_KINDS whose flags are all in `flags` ("other" when the flags are unknown)."""
    have = set(flags or ())
    return next(kind for kind, needed in HOST_KINDS if needed <= have)


def cpu_flags(flags: Sequence[str] | None = None) -> Sequence[str]:
    """`flags`, or this CPU's when None: the one reading every per-host-kind choice uses (tests replace
    `cpu_info` here to see one kind of host)."""
    return cpu_info()["flags"] if flags is None else flags


def choose_int8(flags: Sequence[str] | None = None) -> dict:
    """{"variant", "host_kind", "flags", "why"} for `@int8` on a CPU with `flags` (this CPU's by default).

    A variant whose package is not installed falls back to "int8-dynamic", and says so."""
    flags = cpu_flags(flags)
    kind = host_kind(flags)
    variant = INT8_PATH[kind]
    why = MEASURED.get(kind) or (PENDING if variant == "int8-dynamic" else f"set for {kind} hosts")
    missing = [m for m in NEEDS.get(variant, ()) if importlib.util.find_spec(m) is None]
    if missing:
        variant, why = "int8-dynamic", f"{INT8_PATH[kind]} needs {', '.join(missing)} (not installed)"
    return {"variant": variant, "host_kind": kind, "flags": list(flags or []), "why": why}
