"""The training examples end to end on a tiny model: both scores recorded, the delta is their difference."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def examples_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.mark.parametrize("script", ["train_ja_clinic", "train_xnli_sup"])
def test_example_smoke_run_writes_start_and_end(script, tmp_path, data_root, examples_on_path):
    from test_trainer import save_tiny_model

    module = __import__(script)
    model = save_tiny_model(tmp_path / "tiny")
    argv = ["--smoke", "--model", model, "--out", str(tmp_path / "out"), "--data-root", str(data_root)]
    results = module.main(argv)
    written = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert written["delta_main_score"] == pytest.approx(
        written["end"]["main_score"] - written["start"]["main_score"]
    )
    assert written["train_rows"] == 64 and written["seed"] == 42
    assert set(written["timings"]) == {"start_eval_s", "train_s", "end_eval_s", "total_s"}
    assert results["start"].keys() == results["end"].keys()
    if script == "train_xnli_sup":  # the last model is kept and it moved: the scores differ
        assert written["selected_step"] == 2
        assert written["end"]["main_score"] != written["start"]["main_score"]
    assert sys.modules[script].__file__.startswith(str(EXAMPLES))
