"""The evaluation runner and report on a stub task with a known answer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentkit.evaluate import evaluate, results_table
from sentkit.report import comparison_table, load_results, write_report
from sentkit.tasks import SUITES, TASKS, resolve_tasks
from sentkit.tasks.task import Task


class _OneHotEncoder:
    """Maps each distinct sentence to a fixed vector: 'a'-sentences and 'b'-sentences are orthogonal."""

    name = "stub"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.array(
            [[1.0, 0.0] if s.startswith("a") else [0.0, 1.0] for s in sentences], dtype=np.float32
        )


class _FirstLetterTask(Task):
    def evaluate(self, encoder):
        v = encoder.encode(["a1", "a2", "b1"])
        same = float(v[0] @ v[1])
        diff = float(v[0] @ v[2])
        return {"main_score": 100 * (same - diff), "same": 100 * same}


@pytest.fixture
def stub_task():
    name = "_stub-first-letter"
    if name not in TASKS:
        TASKS.add(name, lambda **kw: _FirstLetterTask(name=name, languages=("en",)))
    return name


def test_evaluate_scores_times_and_writes(tmp_path, stub_task):
    res = evaluate(_OneHotEncoder(), [stub_task], out=tmp_path, seed=3, show_progress=False)
    r = res["tasks"][stub_task]
    assert r["main_score"] == pytest.approx(100.0)
    assert r["scores"]["same"] == pytest.approx(100.0)
    assert r["sentences"] == 3
    assert res["seed"] == 3 and "torch" in res["versions"]
    saved = json.loads((tmp_path / res["path"].split("/")[-1]).read_text())
    assert saved["tasks"][stub_task]["main_score"] == pytest.approx(100.0)
    md = list(tmp_path.glob("*.md"))[0].read_text()
    assert f"| {stub_task} | 100.00 |" in md
    assert "same 100.00" in results_table(res)


def test_report_side_by_side(tmp_path, stub_task):
    a = evaluate(_OneHotEncoder(), [stub_task], out=tmp_path / "a", show_progress=False)
    b = dict(a, model="other")
    b_path = tmp_path / "b.json"
    b_path.write_text(json.dumps(b))
    runs = load_results([a["path"], b_path])
    table = comparison_table(runs)
    assert "| task | stub | other |" in table
    assert f"| **{stub_task}** | 100.00 | 100.00 |" in table
    written = write_report([a["path"], b_path], tmp_path / "rep")
    assert written["bars"].read_bytes()[:4] == b"\x89PNG"


def test_report_rejects_non_results_file(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"oops": 1}')
    with pytest.raises(ValueError, match=r"x.json:1: expected a sentkit results JSON"):
        load_results([bad])


def test_resolve_tasks_expands_suites_and_hints_typos(stub_task):
    SUITES["_stub-suite"] = [stub_task]
    try:
        assert resolve_tasks(f"_stub-suite,{stub_task}") == [stub_task]
    finally:
        del SUITES["_stub-suite"]
    with pytest.raises(KeyError, match="did you mean"):
        resolve_tasks(stub_task[:-1] + "x")


def test_global_langs_skip_tasks_without_those_languages(tmp_path):
    """`--langs de` skips an English-only task with its reason on record, and still runs sts17 en-de."""
    res = evaluate(_OneHotEncoder(), ["stsb", "tatoeba"], langs=["de"], show_progress=False)
    assert "covers only 'en'" in res["skipped"]["stsb"]
    assert res["tasks"]["tatoeba"]["languages"] == ["deu"]
    # one-hot stub: every sentence maps to one of two vectors, so retrieval is near chance (well below 5%)
    assert res["tasks"]["tatoeba"]["main_score"] < 5


class _CountingEncoder(_OneHotEncoder):
    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, sentences, batch_size=64, show_progress=False):
        self.calls.append(list(sentences))
        return super().encode(sentences, batch_size, show_progress)


def test_a_run_encodes_each_distinct_sentence_once(stub_task):
    name2 = "_stub-first-letter-again"
    if name2 not in TASKS:
        TASKS.add(name2, lambda **kw: _FirstLetterTask(name=name2, languages=("en",)))
    encoder = _CountingEncoder()
    res = evaluate(encoder, [stub_task, name2], show_progress=False)
    assert encoder.calls == [["a1", "a2", "b1"]]  # the second task is served from the run's cache
    first, second = res["tasks"][stub_task], res["tasks"][name2]
    assert (first["sentences"], first["sentences_requested"]) == (3, 3)
    assert (second["sentences"], second["sentences_requested"]) == (0, 3)
    assert second["main_score"] == first["main_score"] == pytest.approx(100.0)
