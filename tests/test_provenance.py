"""What a results file records for reproduction: seeding that makes draws repeat, the machine, versions."""

from __future__ import annotations

import os
import platform
import random

import numpy as np
import torch

from sentkit.provenance import cpu_info, machine_info, package_versions, seed_everything


def _draws() -> tuple[float, list[float], list[float]]:
    return random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist()


def test_seed_everything_repeats_python_numpy_and_torch_draws():
    seed_everything(7)
    first = _draws()
    seed_everything(7)
    assert _draws() == first  # each of the three generators is reset
    seed_everything(8)
    other = _draws()
    assert all(a != b for a, b in zip(other, first))  # and each depends on the seed
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    assert _draws() == first  # the same state as seeding each library by hand


def test_machine_info_and_versions_describe_this_process():
    info = machine_info()
    assert info["cpus"] == os.cpu_count() and info["platform"] == platform.platform()
    assert info["torch_threads"] == torch.get_num_threads()
    assert info["cuda"] == (torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    versions = package_versions()
    assert versions["numpy"] == np.__version__ and versions["torch"] == torch.__version__
    assert versions["python"] == platform.python_version()


_VNNI_HOST = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu sse2 avx avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16 sha_ni

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu sse2 avx avx2
"""


def test_cpu_info_keeps_the_flags_that_change_int8_and_bf16_numbers_from_the_first_cpu():
    info = cpu_info(_VNNI_HOST)
    assert info["model"] == "Intel(R) Xeon(R) Platinum 8481C"
    # in NUMERIC_CPU_FLAGS order, without the flags that change no kernel choice (sse2, sha_ni, plain avx)
    assert info["flags"] == [
        "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"
    ]  # fmt: skip
    assert cpu_info("processor\t: 0\nflags\t: sse2 avx avx2\n")["flags"] == ["avx2"]


def test_results_files_record_this_hosts_cpu_flags():
    flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split(":", 1)[1].split()
    recorded = machine_info()["cpu"]["flags"]
    assert set(recorded) <= set(flags) and ("avx2" in recorded) == ("avx2" in flags)
