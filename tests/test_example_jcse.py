"""examples/train_jcse.py end to end on a tiny model: every Table 6 row trains from the right start, the
unsupervised SimCSE baseline trains on exactly the stage-one anchors, and a second run trains nothing."""

from __future__ import annotations

import csv
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
    assert results["seeds"] == [42]  # --quick: one seed
    once, seeded = results["scored"]["once"], results["scored"]["42"]
    assert list(once) == ["tiny/direct"] and once["tiny/direct"]["train"] == {}
    rows = {key.split("/", 1)[1]: entry for key, entry in seeded.items()}
    assert list(rows) == ["unsup", "stage1", "stage1+2", "stage2"]
    trained = {row: entry["train"] for row, entry in rows.items()}
    assert trained["stage1+2"]["start"] == str(Path(trained["stage1"]["run_dir"]) / "best")
    assert trained["stage2"]["start"] == trained["stage1"]["start"] == model
    assert trained["stage1"]["objective"] == trained["stage2"]["objective"] == "simcse-sup"
    assert trained["unsup"]["objective"] == "simcse-unsup"
    assert [step for step, _ in trained["stage1"]["dev_curve"]] == [0, 2]  # step 0 and the end
    assert all("jacsts-dev" in entry["scores"] for entry in [*rows.values(), *once.values()])

    # the baseline's sentences are the stage-one file's anchors: the same, in first-seen order, once each
    build = results["extra"]["build"]
    with open(build["config"]["out"], encoding="utf-8", newline="") as fh:
        stage1 = list(csv.DictReader(fh))
    assert build["rows"] == len(stage1) and 1 <= build["rows_per_anchor"] <= 4
    anchors = list(dict.fromkeys(row["anchor"] for row in stage1))
    unsup_data = json.loads((Path(trained["unsup"]["run_dir"]) / "data.json").read_text(encoding="utf-8"))
    recorded = results["extra"]["unsup_data"]
    assert unsup_data["path"] == str(Path(recorded["file"]).resolve()) and recorded["sentences"] == len(
        anchors
    )
    lines = Path(recorded["file"]).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["anchor"] for line in lines] == anchors

    table = (out / "table.md").read_text(encoding="utf-8")
    assert "contradictions beat dropout-only SimCSE on the same sentences" in table
    assert table.count("| tiny: ") >= 5 + 4  # every row's scores and every claim
    assert "| tiny: JCSE stage 1 (contradictions) | 42 |" in table  # the per-seed selection table

    import sentkit.training

    def no_training(*args, **kwargs):
        raise AssertionError("a second run must not train: the seed is complete")

    monkeypatch.setattr(sentkit.training, "train", no_training)
    assert train_jcse.main(argv)["scored"] == results["scored"]
