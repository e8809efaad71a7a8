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
    # objective options get the flags' checks: values that make the loss NaN never reach a model
    "zero temperature option": (
        ["--objective-options", "temperature=0"],
        "objective 'simcse-unsup': temperature: expected a number >= 1e-19, got 0.0",
    ),
    "nan temperature option": (
        ["--objective-options", "temperature=nan"],
        "objective 'simcse-unsup': temperature: expected a number >= 1e-19, got nan",
    ),
    "negative temperature option": (
        ["--objective-options", "temperature=-1"],
        "objective 'simcse-unsup': temperature: expected a number >= 1e-19, got -1.0",
    ),
    "infinite weight option": (
        ["--objective", "simcse-sup", "--objective-options", "hard_negative_weight=inf"],
        "objective 'simcse-sup': hard_negative_weight: expected a number >= 0, got inf",
    ),
    # the user's data spec, not a bug: exit 2 naming what is accepted
    "unsupported data file": (
        ["--data", "{tmp}/data.json"],
        "data: {tmp}/data.json: unknown training data file type '.json'; expected xnli[:LANGS]",
    ),
    "unknown corpus": (
        ["--data", "nosuchcorpus"],
        "data: unknown training data spec 'nosuchcorpus'; expected xnli[:LANGS]",
    ),
    # every task name and user file is resolved before any model loads (not after training)
    "test task typo": (["--test-tasks", "stsb,stsbb"], "test_tasks: unknown task 'stsbb'"),
    "missing test file": (
        ["--test-tasks", "sts:{tmp}/none.tsv"],
        "test_tasks: {tmp}/none.tsv: file not found",
    ),
    "malformed test file": (
        ["--test-tasks", "sts:{tmp}/bad.tsv"],
        "test_tasks: {tmp}/bad.tsv:1: expected 3 fields (sentence1, sentence2, score)",
    ),
    "eval task typo": (["--eval-task", "stsb-dve"], "eval_task: unknown task 'stsb-dve'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_train_input_is_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    argv, expected = CASES[case]
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: 0.001\nbatch_size: abc\n", encoding="utf-8")
    (tmp_path / "data.json").write_text('["one sentence", "another sentence"]\n', encoding="utf-8")
    (tmp_path / "bad.tsv").write_text("a sentence\tanother\n", encoding="utf-8")
    argv = [a.format(bad_yaml=bad, tmp=tmp_path) for a in argv]
    expected = expected.format(tmp=tmp_path)
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


def test_failed_test_task_is_recorded_exit_1_and_paths_are_absolute(tmp_path, monkeypatch, capsys, data_root):
    from sentkit.cache import sha256_file
    from sentkit.datasets.stsb import read_stsb
    from test_trainer import save_tiny_model, stsb_sentences

    root = tmp_path.resolve()
    monkeypatch.chdir(root)
    save_tiny_model(root / "tiny")
    (root / "data.txt").write_text("\n".join(stsb_sentences(data_root, 16)) + "\n", encoding="utf-8")
    dev = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-dev.csv")
    pairs = [f"{a}\t{b}\t{g}" for a, b, g in zip(dev.sent1[:12], dev.sent2[:12], dev.gold[:12])]
    (root / "good.tsv").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    (root / "empty_root").mkdir()  # the built-in stsb finds no data there: it fails after training
    (root / "run.yaml").write_text(
        "model: tiny\ndata: data.txt\noutput_dir: out\nbatch_size: 8\nmax_steps: 2\nsave_steps: 2\n"
        "eval_task: ''\ntest_tasks: sts:good.tsv,stsb\ndata_root: empty_root\nprogress: false\n",
        encoding="utf-8",
    )
    assert _status(["train", "--config", "run.yaml"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "sentkit: 1 test task(s) failed (stsb); errors recorded in out/results.json"
    )
    results = json.loads((root / "out" / "results.json").read_text())
    assert list(results["test"]) == ["sts:good.tsv"]
    assert results["test_errors"]["stsb"]["type"] == "MissingDataError"
    assert "empty_root" in results["test_errors"]["stsb"]["message"]
    (record,) = results["test_meta"]["sts:good.tsv"]["files"]
    assert record["sha256"] == sha256_file(root / "good.tsv") and record["rows"] == 12
    assert results["paths"] == {
        "output_dir": str(root / "out"),
        "best_model": str(root / "out" / "best"),
        "config_file": str(root / "run.yaml"),
        "model": str(root / "tiny"),
    }
    assert results["data"]["path"] == str(root / "data.txt") and results["data"]["rows"] == 16
    assert results["config"]["output_dir"] == "out"  # as typed, beside the absolute forms
