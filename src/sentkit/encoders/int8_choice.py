"""Which int8 path `NAME@int8` runs on this CPU: chosen at run time from the instruction-set flags.

The int8 kernels differ by host kind: without VNNI, onnxruntime and OpenVINO multiply u8 x s8 with
VPMADDUBSW (pairs of products summed in int16); AVX-VNNI and AVX-512 VNNI do four multiply-adds per 32-bit
lane in one instruction; AMX multiplies int8 tiles. Which path is fastest at no quality cost can differ
between these, so `@int8` looks the host kind up in `INT8_PATH`, and every path stays selectable by its own
name (`@int8-dynamic`, `@int8-static`, `@openvino-int8`). The choice is recorded in the encoder's
`runtime_info`, which evaluation writes into the results file.

Every host kind maps to onnxruntime dynamic int8. On AVX2 hosts that is a measurement: of the four int8
paths it was the fastest at no quality cost. On an AMX host it was the faster of onnxruntime's two int8 paths
(OpenVINO was not installed there). Both are listed in `MEASURED` (docs/performance.md). On the other kinds
it is the default until `bench/int8_speed.py` on an idle host of that kind says otherwise.
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
INT8_PATH: dict[str, str] = {kind: "int8-dynamic" for kind, _ in HOST_KINDS}
# host kind -> the measurement behind its entry (docs/results/); kinds not listed keep the dynamic path pending one
MEASURED: dict[str, str] = {
    "avx2": "fastest int8 path on an idle AVX2 host, at no quality cost (int8_speed_openvino_avx2.json: "
    "e5-small-m 244 / 223 / 126 sent/s for dynamic / static / OpenVINO int8, MiniLM 663 / 659 / 271)",
    "amx": "faster of onnxruntime's two int8 paths on an AMX host, at no quality cost; OpenVINO int8 not measured "
    "there (int8_speed_amx_e5.json, int8_speed_amx_minilm.json: e5-small-m 505 / 433 sent/s for dynamic / "
    "static int8, MiniLM 1065 / 991)",
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
    if flags is None:
        flags = cpu_info()["flags"]
    kind = host_kind(flags)
    variant = INT8_PATH[kind]
    why = MEASURED.get(kind) or (PENDING if variant == "int8-dynamic" else f"set for {kind} hosts")
    missing = [m for m in NEEDS.get(variant, ()) if importlib.util.find_spec(m) is None]
    if missing:
        variant, why = "int8-dynamic", f"{INT8_PATH[kind]} needs {', '.join(missing)} (not installed)"
    return {"variant": variant, "host_kind": kind, "flags": list(flags or []), "why": why}
