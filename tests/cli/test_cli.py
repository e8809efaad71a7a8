"""The `sentkit` command line end to end on a tiny saved model: encode, eval, report, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentkit.cli import main


@pytest.fixture
def tiny_dir(tmp_path):
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder(pooling="mean")
    return encoder, encoder.save(tmp_path / "tiny")


def test_encode_writes_one_row_per_line_equal_to_the_library(tiny_dir, tmp_path, capsys):
    encoder, path = tiny_dir
    lines = ["A man is playing a guitar.", "", "Ein Mann spielt Gitarre.", "x" * 400]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "vecs.npy"
    assert (
        main(["encode", "--model", str(path), "--input", str(tmp_path / "in.txt"), "--output", str(out)]) == 0
    )
    vectors = np.load(out)
    assert vectors.shape == (4, 32) and vectors.dtype == np.float32  # the blank line keeps its row
    np.testing.assert_allclose(vectors, encoder.encode(lines), atol=1e-5)
    assert "4 x 32 float32" in capsys.readouterr().out


def test_encode_bad_utf8_is_one_line_naming_file_and_line(tiny_dir, tmp_path, capsys):
    _, path = tiny_dir
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    out = tmp_path / "never.npy"
    assert main(["encode", "--model", str(path), "--input", str(bad), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentkit: error: ") and f"{bad}:3: expected UTF-8" in err and "\n" not in err
    assert not out.exists()


def test_unknown_task_suggests_a_name(tiny_dir, tmp_path, capsys):
    _, path = tiny_dir
    assert main(["eval", "--model", str(path), "--tasks", "stsb-dve", "--out", str(tmp_path)]) == 2
    assert "did you mean stsb-dev" in capsys.readouterr().err


def test_eval_then_report(tiny_dir, tmp_path, data_root, capsys):
    _, path = tiny_dir
    out = tmp_path / "results"
    argv = [
        "eval",
        "--model",
        str(path),
        "--tasks",
        "stsb-dev",
        "--out",
        str(out),
        "--data-root",
        str(data_root),
    ]
    assert main(argv) == 0
    files = sorted(out.glob("*.json"))
    assert len(files) == 1 and files[0].with_suffix(".md").exists()
    results = json.loads(files[0].read_text())
    score = results["tasks"]["stsb-dev"]["scores"]["main_score"]
    assert 20 < score < 70  # random 2-layer mean pooling: word overlap only, far below MiniLM (86.7)
    assert results["seed"] == 0 and "torch" in results["versions"]
    capsys.readouterr()
    assert main(["report", str(files[0]), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "report.md").read_text()
    assert "stsb-dev" in table and f"{score:.2f}" in table
    assert (tmp_path / "report" / "tasks.png").stat().st_size > 1000
