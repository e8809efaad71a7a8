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
