"""What a results file records for reproduction: seeding that makes draws repeat, the machine, versions."""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import sentkit.provenance as provenance
from sentkit.evaluate import evaluate
from sentkit.provenance import (
    ISA_CAPS,
    cpu_info,
    machine_info,
    package_versions,
    seed_everything,
    source_revision,
)
from sentkit.tasks.task import Task


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


def test_machine_info_records_an_instruction_set_cap_and_the_kernels_torch_then_runs():
    """A run capped below its CPU (docs/seeds.md) says so: the cap's variable and torch's kernel level."""
    script = "import json; from sentkit.provenance import machine_info; print(json.dumps(machine_info()))"
    env = {k: v for k, v in os.environ.items() if k not in ISA_CAPS}

    def machine_in(extra: dict) -> dict:
        run = subprocess.run(
            [sys.executable, "-c", script], env={**env, **extra}, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    plain, capped = machine_in({}), machine_in({"ATEN_CPU_CAPABILITY": "default"})
    assert "isa_caps" not in plain
    assert plain["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert capped["isa_caps"] == {"ATEN_CPU_CAPABILITY": "default"}
    assert capped["torch_cpu_capability"] == "DEFAULT"  # no vector kernels at all: lower than any x86 host's


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


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path):
    """A one-commit git checkout with a tracked file and an ignored folder."""
    root = tmp_path / "clone"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "code.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("/results/\n")
    _git(root, "add", "code.py", ".gitignore")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return root


@needs_git
def test_source_revision_names_the_commit_and_turns_dirty_on_an_edit_or_a_new_file(checkout):
    head = _git(checkout, "rev-parse", "HEAD").strip()
    assert source_revision(checkout) == {"git_commit": head, "git_dirty": False}
    (checkout / "results").mkdir()
    (checkout / "results" / "run.json").write_text("{}")  # an ignored output keeps the tree clean
    assert source_revision(checkout)["git_dirty"] is False
    (checkout / "code.py").write_text("x = 2\n")
    assert source_revision(checkout) == {"git_commit": head, "git_dirty": True}
    _git(checkout, "checkout", "-q", "code.py")
    (checkout / "new_module.py").write_text("")  # untracked code changes what runs as well
    assert source_revision(checkout) == {"git_commit": head, "git_dirty": True}


@needs_git
def test_source_revision_is_none_outside_a_checkout_and_for_a_folder_inside_another_repository(
    tmp_path, checkout
):
    assert source_revision(tmp_path / "plain") == {"git_commit": None, "git_dirty": None}
    inner = checkout / "site-packages"
    inner.mkdir()
    # git itself would answer with the enclosing repository's commit; that is not sentkit's source
    assert _git(inner, "rev-parse", "HEAD").strip()
    assert source_revision(inner) == {"git_commit": None, "git_dirty": None}


def test_source_revision_never_fails_when_git_is_missing_or_broken(checkout, monkeypatch):
    monkeypatch.setenv("PATH", str(checkout / "no-bin-here"))  # no git on PATH
    assert source_revision(checkout) == {"git_commit": None, "git_dirty": None}
    (checkout / ".git").mkdir(exist_ok=True)
    monkeypatch.setattr(provenance, "_git", lambda root, *args: None)
    assert source_revision(checkout) == {"git_commit": None, "git_dirty": None}


class _ConstantTask(Task):
    def evaluate(self, encoder):
        return {"main_score": 50.0}


class _ZeroEncoder:
    name = "zero"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.zeros((len(sentences), 2), dtype=np.float32)


@needs_git
def test_a_results_file_records_the_source_revision_sentkit_runs_from(tmp_path, checkout, monkeypatch):
    monkeypatch.setattr(provenance, "_SOURCE_ROOT", checkout)
    (checkout / "code.py").write_text("x = 3\n")
    task = _ConstantTask(name="constant", languages=("en",))
    res = evaluate(
        _ZeroEncoder(), ["constant"], out=tmp_path / "out", prepared={task.name: task}, show_progress=False
    )
    written = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    head = _git(checkout, "rev-parse", "HEAD").strip()
    assert (res["git_commit"], res["git_dirty"]) == (head, True)
    assert (written["git_commit"], written["git_dirty"]) == (head, True)
