"""Every `sentkit` verb over bad input, in a subprocess: one stderr line, exit 2, no traceback, nothing written.

Each row is (verb, arguments, words the one line must contain). `{file}` is a text file, `{folder}` an empty
folder, `{binary}` a PNG header, `{results}` a valid results file, `{missing}` a path that does not exist
(the other names are the bad files the fixture writes); all live in the test's own folder, which must be
byte-for-byte unchanged afterwards (nothing half-written).
Rows that load no model run in about a second; checks that need no model must happen before it loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROWS = [
    # --- no verb / unknown verb ---
    ("", [], "the following arguments are required: command"),
    ("", ["evaluate"], "invalid choice: 'evaluate'"),
    # --- eval ---
    ("eval", ["--batch-size", "0"], "--batch-size: expected a positive integer, got '0'"),
    ("eval", ["--batch-size", "-1"], "--batch-size: expected a positive integer, got '-1'"),
    ("eval", ["--batch-size", "abc"], "--batch-size: expected a positive integer, got 'abc'"),
    ("eval", ["--seed", "-1"], "--seed: expected a seed from 0 to 2**32-1"),
    ("eval", ["--pooling", "max"], "--pooling: invalid choice: 'max'"),
    ("eval", ["--out", "{file}"], "file.txt: is a file; expected a folder"),
    ("eval", ["--out", "{file}/results"], "file.txt is a file, not a folder"),
    ("eval", ["--data-root", "{missing}", "--out", "{missing}"], "--data-root"),
    ("eval", ["--tasks", "stsb-dve", "--out", "{missing}"], "did you mean stsb-dev"),
    ("eval", ["--tasks", ",", "--out", "{missing}"], "names no task"),
    ("eval", ["--model", "minlm-en", "--tasks", "stsb-dev", "--out", "{missing}"], "did you mean minilm-en"),
    # the user's own files are read whole before the model loads
    ("eval", ["--tasks", "sts:{empty}", "--out", "{missing}"], "empty.tsv: expected a header or rows"),
    ("eval", ["--tasks", "sts:{header}", "--out", "{missing}"], "header.tsv: expected at least one row"),
    (
        "eval",
        ["--tasks", "sts:{nan}", "--out", "{missing}"],
        "nan.tsv:1: expected a numeric similarity score",
    ),
    (
        "eval",
        ["--tasks", "sts:{inf}", "--out", "{missing}"],
        "inf.tsv:2: expected a numeric similarity score",
    ),
    ("eval", ["--tasks", "stsb,sts:{latin1}", "--out", "{missing}"], "latin1.tsv:1: expected UTF-8 text"),
    (
        "eval",
        ["--tasks", "clustering:{one_label}", "--out", "{missing}"],
        "one_label.tsv: expected at least 2",
    ),
    # --- encode ---
    ("encode", ["--input", "{file}", "--output", "{missing}", "--batch-size", "-1"], "positive integer"),
    ("encode", ["--input", "{file}", "--output", "{missing}", "--batch-size", "0"], "positive integer"),
    ("encode", ["--input", "{file}", "--output", "{folder}"], "folder: is a directory"),
    ("encode", ["--input", "{file}", "--output", "{file}/v.npy"], "file.txt is a file, not a folder"),
    ("encode", ["--input", "{missing}", "--output", "{missing}"], "missing: file not found"),
    ("encode", ["--input", "{binary}", "--output", "{missing}"], "binary.png:1: expected UTF-8"),
    ("encode", ["--input", "{file}"], "the following arguments are required: --output"),
    ("encode", ["--input", "{file}", "--output", "{file}"], "file.txt is the --input file"),
    ("encode", ["--input", "{file}", "--output", "{link}"], "link.txt: is a symbolic link (to "),
    (
        "encode",
        ["--model", "nobody/no-such-model", "--input", "{file}", "--output", "{missing}"],
        "model 'nobody/no-such-model' not found: not a packaged short name, not a local directory, "
        "and the hub is offline",
    ),
    # --- export: replaces only a folder an earlier export wrote; checked before the model loads ---
    ("export", ["--out", ".", "--overwrite"], ".: is the working folder or a folder holding it"),
    ("export", ["--out", "..", "--overwrite"], "..: is the working folder or a folder holding it"),
    ("export", ["--out", "."], ".: is the working folder or a folder holding it"),
    ("export", ["--out", "{thesis}", "--overwrite"], "thesis: not a sentkit export folder"),
    # --- report ---
    (
        "report",
        ["{string_score}"],
        'string_score.json: tasks.t.main_score: expected a finite number, got "abc"',
    ),
    (
        "report",
        ["{huge_score}"],
        "huge_score.json: tasks.t.scores.en: expected a finite number, got Infinity",
    ),
    ("report", ["{folder}"], "folder: is a folder"),
    ("report", ["{missing}"], "missing: file not found"),
    ("report", ["{binary}"], "not UTF-8 text"),
    ("report", ["{file}"], "file.txt:1: expected a results JSON file"),
    ("report", ["{results}", "--out", "{file}"], "file.txt: is a file; expected a folder"),
    # --- tasks, models: no arguments ---
    ("tasks", ["--all"], "unrecognized arguments: --all"),
    ("models", ["extra"], "unrecognized arguments: extra"),
    # --- train: options are checked before torch is imported (< 1 s a row); more in test_train_errors.py ---
    ("train", ["--max-steps", "abc"], "--max-steps"),
    ("train", ["--batch-size", "-1"], "--batch-size: expected a positive integer, got -1"),
    ("train", ["--lr", "0"], "--lr: expected a positive number, got 0.0"),
    ("train", ["--config", "{missing}"], "missing: file not found"),
    ("train", ["--config", "{file}"], "file.txt:1: expected a mapping of TrainConfig fields, got str"),
]


def _snapshot(root):
    return {
        str(p.relative_to(root)): (p.is_dir(), None if p.is_dir() else p.read_bytes())
        for p in root.rglob("*")
    }


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "file.txt").write_text("A man plays a guitar.\nA dog runs.\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    results = {"model": "m", "complete": True, "tasks": {"t": {"main_score": 1.0, "scores": {}}}}
    (tmp_path / "results.json").write_text(json.dumps(results))
    results["tasks"]["t"]["main_score"] = "abc"
    (tmp_path / "string_score.json").write_text(json.dumps(results))
    (tmp_path / "huge_score.json").write_text(
        '{"model": "m", "tasks": {"t": {"main_score": 1.0, "scores": {"en": 1e999}}}}'
    )
    (tmp_path / "empty.tsv").write_text("")
    (tmp_path / "header.tsv").write_text("sentence1\tsentence2\tscore\n")
    (tmp_path / "nan.tsv").write_text("a\tb\tnan\nc\td\t1\n")
    (tmp_path / "inf.tsv").write_text("a\tb\t1\nc\td\t-inf\n")
    (tmp_path / "latin1.tsv").write_bytes("café\tcoffee\t4\n".encode("latin-1"))
    (tmp_path / "one_label.tsv").write_text("a\tx\nb\tx\nc\tx\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "file.txt")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "chapter1.tex").write_text("\\chapter{Introduction}\n")
    return tmp_path


@pytest.mark.parametrize("verb, args, expected", ROWS, ids=[f"{r[0]} {' '.join(r[1])}" for r in ROWS])
def test_bad_input_is_one_line_exit_2_and_nothing_written(workdir, verb, args, expected):
    names = {"file": "file.txt", "folder": "folder", "binary": "binary.png", "results": "results.json"}
    names |= {"link": "link.txt", "thesis": "thesis", "string_score": "string_score.json"}
    names |= {"huge_score": "huge_score.json", "one_label": "one_label.tsv"}
    names |= {n: f"{n}.tsv" for n in ("empty", "header", "nan", "inf", "latin1")}
    fill = {k: str(workdir / v) for k, v in names.items()} | {"missing": str(workdir / "missing")}
    argv = ([verb] if verb else []) + [a.format(**fill) for a in args]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("SENTKIT_DEBUG", None)
    before = _snapshot(workdir)
    proc = subprocess.run(
        [sys.executable, "-m", "sentkit.cli", *argv],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr  # no usage block, no warnings, no traceback
    assert lines[0].startswith(("sentkit: error: ", f"sentkit {verb}: error: ")), lines[0]
    assert expected in lines[0]
    assert proc.stdout == ""
    assert _snapshot(workdir) == before
