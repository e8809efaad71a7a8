"""The evaluation runner and report on a stub task with a known answer."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_prepared_tasks_may_carry_unregistered_names(tmp_path):
    """An example's own sample of a set, under its own name, runs without a registry entry; an unknown name
    that nobody prepared is still refused with the registry's hint."""
    task = _FirstLetterTask(name="first-letter-sample", languages=("en",))
    res = evaluate(_OneHotEncoder(), ["first-letter-sample"], prepared={task.name: task}, show_progress=False)
    assert res["tasks"]["first-letter-sample"]["main_score"] == pytest.approx(100.0)
    with pytest.raises(KeyError, match="unknown task"):
        evaluate(_OneHotEncoder(), ["first-letter-sample"], show_progress=False)


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
    assert "de" in res["skipped"]["stsb"] and "en" in res["skipped"]["stsb"]  # asked for, and what it has
    assert res["tasks"]["tatoeba"]["languages"] == ["deu"]
    # one-hot stub: every sentence maps to one of two vectors, so retrieval is near chance (well below 5%)
    assert res["tasks"]["tatoeba"]["main_score"] < 5


def test_readme_languages_example_says_why_sts17_has_no_scores(tmp_path, capsys):
    """evaluate(encoder, "sts17,tatoeba", langs=["de", "fr"]): sts17 has only pairs with English."""
    res = evaluate(_OneHotEncoder(), "sts17,tatoeba", langs=["de", "fr"], out=tmp_path, show_progress=False)
    reason = res["skipped"]["sts17"]
    assert reason.startswith("task 'sts17' has no data for de, fr (it has: en-en, ")
    assert f"     sts17  skipped: {reason}" in capsys.readouterr().err
    with pytest.raises(KeyError, match=r"^'sts17' was skipped: task 'sts17' has no data for de, fr"):
        res["tasks"]["sts17"]
    assert res["tasks"]["tatoeba"]["languages"] == ["deu", "fra"]
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["skipped"] == {"sts17": reason} and list(saved["tasks"]) == ["tatoeba"]


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


# --- a run never loses finished work; bad values fail before any task runs -----------------------------


class _ScriptedTask(Task):
    """Runs `action(encoder)` (may raise, or look at the results file mid-run) and returns its scores."""

    def __init__(self, name, action):
        super().__init__(name=name, languages=("en",))
        self.action = action

    def evaluate(self, encoder):
        return self.action(encoder)


@pytest.fixture
def scripted(monkeypatch):
    """Register `{name: action}` as tasks for one test (removed afterwards)."""

    def add(**actions):
        for name, action in actions.items():
            name = name.replace("_", "-")
            monkeypatch.setitem(
                TASKS._items, f"_t-{name}", lambda n=name, a=action, **kw: _ScriptedTask(f"_t-{n}", a)
            )

    return add


def _ok(encoder):
    encoder.encode(["a1", "b1"])
    return {"main_score": 42.0}


def _boom(encoder):
    raise RuntimeError("disk on fire\nsecond line")


def _strict_json(path):
    def refuse(name):
        raise AssertionError(f"{path} holds {name}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_batch_size_must_be_a_positive_integer(tmp_path, stub_task, bad):
    """Today -1 writes NaN scores, 0 is a ZeroDivisionError deep in a task."""
    from sentkit.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match=rf"batch_size must be a positive integer, got {bad!r}"):
        evaluate(_OneHotEncoder(), [stub_task], out=tmp_path, batch_size=bad, show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_seed_numpy_cannot_take_fails_first(stub_task):
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 2\*\*32-1, got -1"):
        evaluate(_OneHotEncoder(), [stub_task], seed=-1, show_progress=False)


def test_out_that_is_a_file_fails_before_any_task_runs(tmp_path, scripted):
    from sentkit.errors import OutputPathError

    ran = []
    scripted(first=lambda enc: ran.append(1) or {"main_score": 1.0})
    (tmp_path / "taken").write_text("mine")
    with pytest.raises(OutputPathError, match="taken: is a file"):
        evaluate(_OneHotEncoder(), ["_t-first"], out=tmp_path / "taken", show_progress=False)
    with pytest.raises(OutputPathError, match="taken is a file, not a folder"):
        evaluate(_OneHotEncoder(), ["_t-first"], out=tmp_path / "taken" / "sub", show_progress=False)
    assert ran == [] and (tmp_path / "taken").read_text() == "mine"


def test_each_finished_task_is_on_disk_before_the_next_starts(tmp_path, scripted):
    seen = {}

    def look(encoder):
        [path] = tmp_path.glob("*.json")
        seen.update(_strict_json(path))
        assert path.with_suffix(".md").read_text().count("Incomplete run") == 1
        return {"main_score": 7.0}

    scripted(first=_ok, second=look)
    res = evaluate(_OneHotEncoder(), ["_t-first", "_t-second"], out=tmp_path, show_progress=False)
    assert seen["complete"] is False and list(seen["tasks"]) == ["_t-first"]
    final = _strict_json(tmp_path / res["path"].split("/")[-1])
    assert final["complete"] is True and list(final["tasks"]) == ["_t-first", "_t-second"]
    assert "Incomplete" not in next(tmp_path.glob("*.md")).read_text()


def test_a_failing_task_is_recorded_and_the_others_still_run(tmp_path, scripted, capsys):
    scripted(first=_ok, broken=_boom, last=_ok)
    res = evaluate(_OneHotEncoder(), ["_t-first", "_t-broken", "_t-last"], out=tmp_path, show_progress=False)
    saved = _strict_json(next(tmp_path.glob("*.json")))
    assert saved["errors"] == {"_t-broken": {"type": "RuntimeError", "message": "disk on fire second line"}}
    assert list(saved["tasks"]) == ["_t-first", "_t-last"] and saved["complete"] is True
    assert res["errors"] == saved["errors"]
    assert "| _t-broken | error: RuntimeError: disk on fire second line | | |" in results_table(res)
    assert "_t-broken  FAILED: RuntimeError: disk on fire" in capsys.readouterr().err
    with pytest.raises(KeyError, match=r"'_t-broken' failed: RuntimeError: disk on fire second line"):
        res["tasks"]["_t-broken"]
    with pytest.raises(KeyError) as caught:
        res["tasks"]["_t-never-asked"]
    assert caught.value.args == ("_t-never-asked",)  # a plain KeyError for a task that was not in the run


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_score_is_an_error_never_a_number(tmp_path, scripted, bad):
    """Today `"main_score": NaN` is written: not JSON, and it reads as a result."""
    scripted(first=lambda enc: {"main_score": 50.0, "en-de": bad}, second=_ok)
    res = evaluate(_OneHotEncoder(), ["_t-first", "_t-second"], out=tmp_path, show_progress=False)
    saved = _strict_json(next(tmp_path.glob("*.json")))  # strict: NaN/Infinity would fail here
    assert saved["errors"]["_t-first"]["type"] == "NonFiniteScore"
    assert "non-finite value at scores.en-de" in saved["errors"]["_t-first"]["message"]
    assert list(saved["tasks"]) == ["_t-second"] == list(res["tasks"])


def test_ctrl_c_keeps_finished_tasks_in_a_file_marked_incomplete(tmp_path, scripted):
    from sentkit.evaluate import EvaluationInterrupted

    def interrupt(encoder):
        raise KeyboardInterrupt

    scripted(first=_ok, second=interrupt, third=_ok)
    with pytest.raises(EvaluationInterrupted) as caught:
        evaluate(_OneHotEncoder(), ["_t-first", "_t-second", "_t-third"], out=tmp_path, show_progress=False)
    assert isinstance(caught.value, KeyboardInterrupt) and caught.value.finished == 1
    saved = _strict_json(caught.value.path)
    assert saved["complete"] is False and saved["interrupted"] == "_t-second"
    assert list(saved["tasks"]) == ["_t-first"] and saved["tasks"]["_t-first"]["main_score"] == 42.0
    assert "interrupted during _t-second" in caught.value.path.with_suffix(".md").read_text()


def test_ctrl_c_before_any_task_finished_writes_nothing(tmp_path, scripted):
    from sentkit.evaluate import EvaluationInterrupted

    def interrupt(encoder):
        raise KeyboardInterrupt

    scripted(first=interrupt)
    with pytest.raises(EvaluationInterrupted) as caught:
        evaluate(_OneHotEncoder(), ["_t-first"], out=tmp_path / "res", show_progress=False)
    assert caught.value.path is None and not (tmp_path / "res").exists()


def test_language_not_covered_is_a_skip_only_when_languages_were_asked_for(tmp_path, scripted, capsys):
    from sentkit.errors import LanguageNotCovered
    from sentkit.evaluate import TaskNotScored

    def lacking(encoder):
        raise LanguageNotCovered("task has no 'xx' data")

    scripted(lacking=lacking, first=_ok)
    res = evaluate(_OneHotEncoder(), ["_t-lacking", "_t-first"], langs=["xx"], show_progress=False)
    assert res["skipped"] == {"_t-lacking": "task has no 'xx' data"} and not res["errors"]
    # said on stderr even without a progress bar, and by the KeyError of a lookup of the skipped task
    assert capsys.readouterr().err == f"{'_t-lacking':>22s}  skipped: task has no 'xx' data\n"
    with pytest.raises(TaskNotScored) as caught:
        res["tasks"]["_t-lacking"]
    assert str(caught.value) == "'_t-lacking' was skipped: task has no 'xx' data (see results['skipped'])"
    assert isinstance(caught.value, KeyError) and "_t-lacking" not in res["tasks"]
    assert res["tasks"].get("_t-lacking") is None and list(res["tasks"]) == ["_t-first"]
    res = evaluate(_OneHotEncoder(), ["_t-lacking", "_t-first"], show_progress=False)
    assert res["errors"]["_t-lacking"]["type"] == "LanguageNotCovered" and not res["skipped"]
    assert list(res["tasks"]) == ["_t-first"]


def test_two_runs_in_the_same_second_keep_both_files(tmp_path, stub_task):
    for _ in range(2):
        evaluate(_OneHotEncoder(), [stub_task], out=tmp_path, show_progress=False)
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x89PNG\r\n\x1a\n\x00\xff", "this is not UTF-8 text"),
        (b"model: x\n", r"r.json:1: expected a results JSON file written by `sentkit eval`"),
        (b'{"model": "m", "tasks": {"t": {"main_score": NaN}}}', "holds NaN, which no score can be"),
        (b'{"model": "m", "tasks": []}', "expected a sentkit results JSON object"),
    ],
)
def test_report_refuses_what_is_not_a_results_file(tmp_path, content, message):
    (tmp_path / "r.json").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_results([tmp_path / "r.json"])


def test_report_on_a_folder_or_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="is a folder; expected a results JSON file"):
        load_results([tmp_path])
    with pytest.raises(FileNotFoundError, match="nope.json: file not found"):
        load_results([tmp_path / "nope.json"])


def test_report_labels_an_incomplete_run(tmp_path, stub_task):
    run = evaluate(_OneHotEncoder(), [stub_task], show_progress=False)
    run["complete"] = False
    (tmp_path / "r.json").write_text(json.dumps(run))
    assert "| task | stub (incomplete) |" in comparison_table(load_results([tmp_path / "r.json"]))


def test_a_task_whose_record_json_cannot_hold_fails_alone(tmp_path, monkeypatch, scripted):
    class OddMeta(Task):
        def evaluate(self, encoder):
            self.meta["model"] = object()  # not JSON: would have crashed the whole run at write time
            return {"main_score": 1.0}

    monkeypatch.setitem(TASKS._items, "_t-odd", lambda **kw: OddMeta(name="_t-odd"))
    scripted(first=_ok)
    res = evaluate(_OneHotEncoder(), ["_t-odd", "_t-first"], out=tmp_path, show_progress=False)
    assert res["errors"]["_t-odd"] == {"type": "TypeError", "message": "not JSON serialisable: object"}
    assert list(_strict_json(next(tmp_path.glob("*.json")))["tasks"]) == ["_t-first"]


def test_results_table_escapes_names_from_user_data():
    results = {
        "model": "m|x\n# not a heading",
        "tasks": {
            "sts:a|b.tsv": {
                "main_score": 50.0,
                "scores": {"main_score": 50.0, "en|de": 40.0},
                "wall_s": 1.0,
                "sentences_per_s": None,
            }
        },
        "skipped": {"knn:`c`.tsv": "has no data for de"},
        "errors": {},
        "wall_s": 1.0,
        "seed": 0,
    }
    lines = results_table(results).splitlines()
    assert lines[0] == r"# m\|x # not a heading"
    assert lines[4] == r"| sts:a\|b.tsv | 50.00 | - | 1.0 | - |"  # no interval recorded: "-"
    assert lines[5] == r"| knn:\`c\`.tsv | skipped: has no data for de | | | |"
    assert r"- **sts:a\|b.tsv**: en\|de 40.00" in lines


def test_a_malformed_user_file_raises_before_any_task_runs(tmp_path, stub_task):
    from sentkit.errors import DataFormatError

    bad = tmp_path / "pairs.tsv"
    bad.write_text("a\tb\t1\nc\td\t\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"pairs\.tsv:2: expected a value in column score"):
        evaluate(_OneHotEncoder(), [stub_task, f"sts:{bad}"], out=tmp_path / "out", show_progress=False)
    assert not (tmp_path / "out").exists()  # no results file with the first task's score


def test_the_package_evaluate_stays_callable_after_the_submodule_is_imported(tmp_path):
    # a fresh interpreter: importing sentkit.evaluate rebinds the package attribute to the module
    code = (
        "import sentkit.evaluate\n"
        "from sentkit import evaluate\n"
        "import sentkit.evaluate as module\n"
        "module.evaluate = lambda encoder, tasks, **kw: ('called', encoder, tasks, kw)\n"
        "print(evaluate('enc', 'stsb', langs=['en']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "('called', 'enc', 'stsb', {'langs': ['en']})"
