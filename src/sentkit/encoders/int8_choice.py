"""Which int8 path `NAME@int8` runs on this CPU: chosen at run time from the instruction-set flags.

The int8 kernels differ by host kind: without VNNI, onnxruntime and OpenVINO multiply u8 x s8 with
VPMADDUBSW (pairs of products summed in int16); AVX-VNNI and AVX-512 VNNI do four multiply-adds per 32-bit
lane in one instruction; AMX multiplies int8 tiles. Which path is fastest at no quality cost can differ
between these, so `@int8` looks the host kind up in `INT8_PATH`, and every path stays selectable by its own
name (`@int8-dynamic`, `@int8-static`, `@openvino-int8`). The choice is recorded in the encoder's
`runtime_info`, which evaluation writes into the results file.

The rule: on each host kind `@int8` runs the int8 path that encoded fastest there at no quality cost, measured
on an idle host of that kind; a kind not yet measured runs onnxruntime dynamic int8. So AVX2 hosts run
onnxruntime dynamic int8 and AMX hosts OpenVINO int8 (NNCF static quantization; without openvino and nncf
installed, the dynamic path runs instead, and says why). The measurements and how to repeat them on another
kind of host: docs/performance.md#choosing-the-int8-path.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from sentkit.provenance import cpu_flags

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
# host kind -> why `@int8` runs INT8_PATH's variant there (recorded in the results file). The figures behind each
# entry are in docs/performance.md#choosing-the-int8-path, never here.
WHY: dict[str, str] = {
    "avx2": "fastest int8 path on an idle AVX2 host, at no quality cost "
    "(docs/performance.md#choosing-the-int8-path)",
    "amx": "fastest int8 path on 2 idle cores of an AMX host, at no quality cost "
    "(docs/performance.md#choosing-the-int8-path)",
}
PENDING = "onnxruntime dynamic int8 until the other paths are measured on an idle host of this kind"
NEEDS = {"openvino-int8": ("openvino", "nncf")}  # variants that need an optional package


def host_kind(flags: Sequence[str] | None) -> str:
    """The first of HOST_KINDS whose flags are all in `flags` ("other" when the flags are unknown)."""
    have = set(flags or ())
    return next(kind for kind, needed in HOST_KINDS if needed <= have)


def choose_int8(flags: Sequence[str] | None = None) -> dict:
    """{"variant", "host_kind", "flags", "why"} for `@int8` on a CPU with `flags` (this CPU's by default).

    A variant whose package is not installed falls back to "int8-dynamic", and says so."""
    flags = cpu_flags(flags)
    kind = host_kind(flags)
    variant = INT8_PATH[kind]
    why = WHY.get(kind) or (PENDING if variant == "int8-dynamic" else f"set for {kind} hosts")
    missing = [m for m in NEEDS.get(variant, ()) if importlib.util.find_spec(m) is None]
    if missing:
        variant, why = "int8-dynamic", f"{INT8_PATH[kind]} needs {', '.join(missing)} (not installed)"
    return {"variant": variant, "host_kind": kind, "flags": list(flags or []), "why": why}
