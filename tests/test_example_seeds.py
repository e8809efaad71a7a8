"""examples/seeds.py: the examples' seeds, resumable results file, and paired summary against sentkit compare.

No training here: each "trained model" is a character-trigram encoder (tests/ngram_encoder.py) whose
bucket count plays the seed, so the test runs in seconds and the planted difference is known: 256 or more
buckets rank STS pairs far better than 32, whose trigrams collide."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.compare import compare_pooled, compare_runs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WORDS = "red blue green cat dog bird runs eats sleeps under over near house tree river fast slow big".split()


@pytest.fixture
def seeds_module(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import seeds

    return seeds


@pytest.fixture
def sts_spec(tmp_path) -> str:
    """300 pairs whose second sentence swaps k of six words (gold 5 - k)."""
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(300):
        first = list(rng.choice(WORDS, size=6))
        k = int(rng.integers(0, 6))
        second = [w if i >= k else str(rng.choice(WORDS)) for i, w in enumerate(first)]
        rows.append(f"{' '.join(first)}\t{' '.join(second)}\t{5 - k}")
    path = tmp_path / "pairs.tsv"
    path.write_text("sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return f"sts:{path}"


def _open(seeds, out: Path, steps: int = 2):
    rows = [
        seeds.Row("start", "start", seeded=False),
        seeds.Row("base", "baseline"),
        seeds.Row("method", "method"),
    ]
    claims = [
        seeds.Claim("method", "base", "the method beats its baseline", {"*": "Table 1: 2.0 vs 1.0"}),
        seeds.Claim("base", "start", "training lowers the start", {"*": "Table 1: 1.0 vs 1.5"}, direction=-1),
    ]
    return seeds.SeedRuns(
        out,
        example="toy",
        question="Does the method beat its baseline?",
        settings={"steps": steps, "data": Path("rows.jsonl")},  # a Path is kept as its text
        rows=rows,
        claims=claims,
        notes=["a note"],
        changes="more data",
    )


def _score_all(runs, sts_spec: str, seeds_list) -> None:
    from sentkit.tasks import get_task

    tasks = lambda: [get_task(sts_spec)]  # noqa: E731 - fresh task objects per evaluation
    if not runs.done("start"):
        runs.score("start", None, NgramEncoder(dim=64, name="start"), tasks)
    for seed in runs.pending(seeds_list, ["base", "method"]):
        for row, dim in (("base", 32), ("method", 256 * seed)):
            if not runs.done(row, seed):
                runs.score(row, seed, NgramEncoder(dim=dim, name=f"{row}-{seed}"), tasks)


def test_summary_is_sentkit_compare_per_seed_and_pooled(seeds_module, sts_spec, tmp_path):
    runs = _open(seeds_module, tmp_path / "out")
    _score_all(runs, sts_spec, [1, 2])
    data = runs.finish()
    out = tmp_path / "out"
    scored = data["scored"]
    assert set(scored) == {"once", "1", "2"} and set(scored["1"]) == {"base", "method"}
    row = data["summary"]["rows"]["method"][sts_spec]
    values = [scored[s]["method"]["scores"][sts_spec]["main_score"] for s in ("1", "2")]
    assert row["n"] == 2 and row["mean"] == pytest.approx(np.mean(values))
    assert row["sd"] == pytest.approx(np.std(values, ddof=1)) and (row["min"], row["max"]) == (
        min(values),
        max(values),
    )
    results = {s: {r: out / scored[s][r]["results"] for r in scored[s]} for s in scored}
    written = json.loads(
        results["1"]["method"].read_text()
    )  # the full sentkit results, per-item values included
    assert "items" in written["tasks"][sts_spec] and written["tasks"][sts_spec]["main_score_ci"]

    claim = next(c for c in data["summary"]["claims"] if c["method"] == "method")
    entry = claim["tasks"][sts_spec]
    for seed in ("1", "2"):
        cmp = compare_runs(results[seed]["base"], results[seed]["method"])["tasks"][sts_spec]["scores"][
            "main_score"
        ]
        assert entry["per_seed"][seed] == {"delta": cmp["delta"], "ci": cmp["ci"], "p_value": cmp["p_value"]}
    pooled = compare_pooled([(results[s]["base"], results[s]["method"]) for s in ("1", "2")])
    main = pooled["tasks"][sts_spec]["scores"]["main_score"]
    assert (
        entry["pooled"]["delta"]
        == main["delta"]
        == pytest.approx(np.mean([entry["per_seed"][s]["delta"] for s in ("1", "2")]))
    )
    assert entry["pooled"]["ci"] == main["ci"] and entry["pooled"]["ci"][0] > 0
    assert entry["verdict"] == seeds_module.REPRODUCED

    # the seedless start is the baseline of every seed: one results file on both sides of each pair
    lowers = next(c for c in data["summary"]["claims"] if c["baseline"] == "start")["tasks"][sts_spec]
    cmp = compare_runs(results["once"]["start"], results["1"]["base"])["tasks"][sts_spec]["scores"][
        "main_score"
    ]
    assert lowers["per_seed"]["1"]["delta"] == cmp["delta"] and lowers["verdict"] == seeds_module.REPRODUCED

    table = (out / "table.md").read_text()
    assert "| method vs baseline |" in table and "Table 1: 2.0 vs 1.0" in table
    assert f"**{seeds_module.REPRODUCED}**" in table and "- a note" in table
    assert "What would change the result" not in table  # every claim reproduced
    assert f"| method | {sts_spec} | 2 |" in table and "once: " in table


def test_a_second_run_scores_nothing_and_other_settings_are_refused(seeds_module, sts_spec, tmp_path):
    out = tmp_path / "out"
    _score_all(_open(seeds_module, out), sts_spec, [1])
    before = json.loads((out / "results.json").read_text())

    again = _open(seeds_module, out)
    assert again.done("start") and again.done("method", 1) and not again.done("method", 2)
    assert again.pending([1, 2], ["base", "method"]) == [2]
    calls = []
    again.score = lambda *a, **k: calls.append(a)  # a second run must not evaluate anything of seed 1
    _score_all(again, sts_spec, [1])
    assert calls == [] and json.loads((out / "results.json").read_text())["scored"] == before["scored"]

    later = _open(seeds_module, out)  # a later session adds seed 2; the summary holds both
    _score_all(later, sts_spec, [2])
    assert later.finish()["seeds"] == [1, 2] and "Seeds: 1, 2." in (out / "table.md").read_text()

    (out / before["scored"]["1"]["base"]["results"]).unlink()  # a lost results file is scored again
    assert _open(seeds_module, out).pending([1], ["base", "method"]) == [1]
    with pytest.raises(SystemExit, match="steps 2 there, 3 now"):
        _open(seeds_module, out, steps=3)


def test_verdicts(seeds_module):
    s = seeds_module
    assert s.verdict(1, [0.5, 2.0], [1.0, 1.5]) == s.REPRODUCED
    assert s.verdict(-1, [-2.0, -0.5], [-1.0, -1.5]) == s.REPRODUCED
    assert s.verdict(1, [-2.0, -0.5], [-1.0, -1.5]) == s.OPPOSITE
    assert s.verdict(1, [-0.1, 2.0], [1.0, 1.5]) == s.INCONCLUSIVE_CI
    assert s.verdict(1, [0.0, 0.0], [0.0]) == s.INCONCLUSIVE_CI  # identical runs
    assert s.verdict(1, [0.2, 2.0], [2.0, -0.5]) == s.INCONCLUSIVE_SEEDS
    assert s.verdict(1, None, [1.0]) == s.INCONCLUSIVE_CI


def test_seed_lists(seeds_module):
    assert seeds_module.parse_seeds("42, 43,44") == [42, 43, 44]
    for bad in ("1,1", "a", "-1", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            seeds_module.parse_seeds(bad)
    parser = argparse.ArgumentParser()
    seeds_module.add_seed_args(parser)
    assert seeds_module.seeds_of(parser.parse_args([]), quick=False) == [42, 43, 44]
    assert seeds_module.seeds_of(parser.parse_args([]), quick=True) == [42]
    assert seeds_module.seeds_of(parser.parse_args(["--seeds", "7"]), quick=False) == [7]


def test_drop_checkpoints_only_in_finished_runs(seeds_module, tmp_path):
    run = tmp_path / "run"
    for folder in ("checkpoint-10", "checkpoint-20", "best"):
        (run / folder).mkdir(parents=True)
        (run / folder / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ValueError, match="not a finished run"):
        seeds_module.drop_checkpoints(run)
    assert len(list(run.glob("checkpoint-*"))) == 2
    (run / "results.json").write_text("{}")
    seeds_module.drop_checkpoints(run)
    assert sorted(p.name for p in run.iterdir()) == ["best", "results.json"]
