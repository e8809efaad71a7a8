"""examples/train_jcse.py end to end on a tiny model: every Table 6 row trains from the right start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow  # GiNZA parse + 4 tiny trainings + 9 JAC-STS dev evaluations: ~1 min on 2 idle cores
def test_jcse_example_quick_rows(tmp_path, data_root, monkeypatch):
    pytest.importorskip("ginza", reason="GiNZA not installed: pip install 'sentkit[ja]'")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import train_jcse

    from test_trainer import save_tiny_model

    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["--quick", "--models", model, "--lines", "12", "--out", str(out), "--data-root", str(data_root)]
    results = train_jcse.main(argv)
    rows = {r["row"]: r for r in results["rows"]}
    assert list(rows) == ["direct", "unsup", "stage1", "stage1+2", "stage2"]
    assert rows["direct"]["trained"] == {}
    assert rows["stage1+2"]["trained"]["start"] == str(Path(rows["stage1"]["trained"]["run_dir"]) / "best")
    assert rows["stage2"]["trained"]["start"] == model
    assert rows["stage1"]["trained"]["objective"] == rows["stage2"]["trained"]["objective"] == "simcse-sup"
    assert rows["unsup"]["trained"]["objective"] == "simcse-unsup"
    assert [step for step, _ in rows["stage1"]["trained"]["dev_curve"]] == [0, 2]  # step 0 and the end
    build = results["build"]
    assert build["rows"] == sum(1 for _ in open(build["config"]["out"], encoding="utf-8")) - 1
    assert 1 <= build["rows_per_anchor"] <= 4
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert len(written["rows"]) == 5 and all("jacsts-dev" in r["scores"] for r in written["rows"])
    assert len((out / "table.md").read_text(encoding="utf-8").splitlines()) == 2 + 5
