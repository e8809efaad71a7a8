"""`sentkit train` over bad inputs: one stderr line, exit 2, no traceback, no run folder written."""

from __future__ import annotations

import json

import pytest
import yaml

from sentkit.cli import main
from sentkit.training import TrainConfig


def _run_dir_holding(tmp_path, finished: bool, **config) -> str:
    """A folder that holds an earlier run (config.yaml, best/, results.json when finished), no checkpoint."""
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    stored = TrainConfig(output_dir=str(run), **config).to_dict()
    (run / "config.yaml").write_text(yaml.safe_dump(stored), encoding="utf-8")
    if finished:
        (run / "results.json").write_text(json.dumps({"global_step": 5}), encoding="utf-8")
    return str(run)


def _status(argv: list[str]) -> int:
    """main()'s exit status; argparse's own errors leave through SystemExit."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code)


CASES = {
    "negative batch size": (["--batch-size", "-1"], "--batch-size: expected a positive integer, got -1"),
    "zero lr": (["--lr", "0"], "--lr: expected a positive number, got 0.0"),
    "non-numeric flag": (["--batch-size", "abc"], "argument --batch-size: invalid int value: 'abc'"),
    "unknown flag": (["--learning-rate", "0.1"], "unrecognized arguments: --learning-rate 0.1"),
    "bad yaml value": (
        ["--config", "{bad_yaml}"],
        "bad.yaml:2: batch_size: expected a positive integer, got 'abc'",
    ),
    "missing config": (["--config", "{tmp}/none.yaml"], "none.yaml: file not found"),
    "unknown objective": (["--objective", "simcse-unsupp"], "unknown objective 'simcse-unsupp'"),
    "bad objective option": (
        ["--objective-options", "temperature=hot"],
        "temperature: expected number, got 'hot'",
    ),
    "no data": (["--data", ""], "data: no training data"),
    "missing data file": (["--data", "{tmp}/none.txt"], "none.txt: file not found"),
    "one-row data": (["--data", "{tmp}/one.txt"], "data: 1 training row(s); objective 'simcse-unsup'"),
    "unknown model": (["--model", "{tmp}/no_model", "--eval-task", ""], "model: cannot load"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_train_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    argv, expected = CASES[case]
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: 0.001\nbatch_size: abc\n", encoding="utf-8")
    argv = [a.format(bad_yaml=bad, tmp=tmp_path) for a in argv]
    out_dir = tmp_path / "out"
    data = tmp_path / "data.txt"
    data.write_text("one sentence\nanother sentence\n", encoding="utf-8")
    (tmp_path / "one.txt").write_text("a single sentence\n", encoding="utf-8")
    base = ["train", "--output-dir", str(out_dir), "--data", str(data), "--model", "unused", "--no-progress"]
    assert _status(base + argv) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out_dir.exists()


@pytest.mark.parametrize("finished", [True, False])
def test_folder_holding_another_run_is_refused_in_one_line(finished, tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("one sentence\nanother sentence\n", encoding="utf-8")
    run = _run_dir_holding(tmp_path, finished, lr=1e-3, data=str(data), progress=False)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    argv = ["train", "--output-dir", run, "--data", str(data), "--lr", "5e-4", "--no-progress"]
    assert _status(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "with a different config (lr: 0.001 -> 0.0005); pass --overwrite" in err
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
