"""Atomic writes leave either the old content or the new one."""

from __future__ import annotations

import pytest

from sentkit.atomic import atomic_directory, atomic_write_json, atomic_write_text


def test_failed_directory_write_keeps_previous(tmp_path):
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        (tmp / "weights").write_text("v1")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "weights").write_text("half")
        raise RuntimeError("killed mid-write")
    assert (target / "weights").read_text() == "v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_directory_replaced_whole(tmp_path):
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        (tmp / "old-only").write_text("x")
    with atomic_directory(target) as tmp:
        (tmp / "weights").write_text("v2")
    assert sorted(p.name for p in target.iterdir()) == ["weights"]


def test_json_and_text(tmp_path):
    import numpy as np

    atomic_write_json(tmp_path / "r.json", {"score": np.float32(1.5)})
    assert (tmp_path / "r.json").read_text().strip() == '{\n  "score": 1.5\n}'
    atomic_write_text(tmp_path / "a/b.txt", "hi")
    assert (tmp_path / "a/b.txt").read_text() == "hi"


@pytest.fixture
def umask():
    """Set a umask for one test and restore the previous one."""
    import os

    previous = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(previous)


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_written_files_and_folders_follow_the_umask(tmp_path, umask, mask, file_mode, dir_mode):
    """mkstemp/mkdtemp make 0600/0700; the results must look like any other file the user writes."""
    import torch
    from safetensors.torch import save_file

    umask(mask)
    atomic_write_text(tmp_path / "r.txt", "x")
    with atomic_directory(tmp_path / "model") as tmp:
        (tmp / "weights").write_text("v1")
        (tmp / "1_Pooling").mkdir()
        save_file({"w": torch.zeros(2)}, tmp / "model.safetensors")  # safetensors itself writes 0600
    assert (tmp_path / "r.txt").stat().st_mode & 0o777 == file_mode
    assert (tmp_path / "model").stat().st_mode & 0o777 == dir_mode
    assert (tmp_path / "model" / "1_Pooling").stat().st_mode & 0o777 == dir_mode
    for name in ("weights", "model.safetensors"):
        assert (tmp_path / "model" / name).stat().st_mode & 0o777 == file_mode, name


def test_json_refuses_nan_and_names_the_key(tmp_path):
    import numpy as np

    with pytest.raises(ValueError, match=r"r.json: refusing to write a non-finite number at \$.tasks.sts.x"):
        atomic_write_json(tmp_path / "r.json", {"tasks": {"sts": {"ok": 1.0, "x": np.float32("nan")}}})
    with pytest.raises(ValueError, match=r"\$.v\[1\]"):
        atomic_write_json(tmp_path / "r.json", {"v": [1.0, float("inf")]})
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def test_output_checks_name_the_problem_and_create_nothing(tmp_path):
    from sentkit.atomic import check_writable_dir, check_writable_file
    from sentkit.errors import OutputPathError

    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(OutputPathError, match="is a directory"):
        check_writable_file(tmp_path)
    with pytest.raises(OutputPathError, match=r"f.txt is a file, not a folder"):
        check_writable_file(a_file / "deeper" / "v.npy")
    with pytest.raises(OutputPathError, match="is a file; expected a folder"):
        check_writable_dir(a_file)
    with pytest.raises(OutputPathError, match=r"f.txt is a file, not a folder"):
        check_writable_dir(a_file / "results")
    assert check_writable_file(tmp_path / "new" / "v.npy") == tmp_path / "new" / "v.npy"
    assert check_writable_dir(tmp_path / "new" / "results") == tmp_path / "new" / "results"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
