"""examples/seeds.py: the examples' seeds, resumable results file, and paired summary against sentkit compare.

No training here: each "trained model" is a character-trigram encoder (tests/ngram_encoder.py) whose
bucket count plays the seed, so the test runs in seconds and the planted difference is known: 256 or more
buckets rank STS pairs far better than 32, whose trigrams collide."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.compare import compare_pooled, compare_runs, compare_seed_pairs

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
    assert written["config"]["train_seed"] == 1 and written["config"]["example_row"] == "method"

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
    # the seed-aware interval is `sentkit compare --a ... --b ...` on the same files
    over = compare_seed_pairs([(s, results[s]["base"], results[s]["method"]) for s in ("1", "2")])
    record = over["tasks"][sts_spec]["scores"]["main_score"]
    assert entry["seed_aware"]["ci"] == record["ci"] and entry["seed_aware"]["p_value"] == record["p_value"]
    # two seeds whose differences (256 and 512 buckets against 32) are far apart: one degree of freedom
    # leaves the seed-aware interval holding 0, so the items' interval alone is only suggestive
    assert entry["seed_aware"]["df"] == 1.0 and entry["seed_aware"]["ci"][0] < 0 < entry["pooled"]["ci"][0]
    assert entry["verdict"] == seeds_module.SUGGESTIVE

    # the seedless start is the baseline of every seed: one results file on both sides of each pair
    lowers = next(c for c in data["summary"]["claims"] if c["baseline"] == "start")["tasks"][sts_spec]
    cmp = compare_runs(results["once"]["start"], results["1"]["base"])["tasks"][sts_spec]["scores"][
        "main_score"
    ]
    assert lowers["per_seed"]["1"]["delta"] == cmp["delta"]
    # the baseline is the same 32-bucket encoder at both seeds: no spread, yet two seeds leave one degree
    # of freedom, so only the items' interval excludes 0
    assert lowers["seed_aware"]["seed_sd"] == 0.0 and lowers["seed_aware"]["df"] == 1.0
    assert lowers["pooled"]["ci"][1] < 0 < lowers["seed_aware"]["ci"][1]
    assert lowers["verdict"] == seeds_module.SUGGESTIVE

    table = (out / "table.md").read_text()
    assert "| method vs baseline |" in table and "Table 1: 2.0 vs 1.0" in table
    assert (
        f"**{seeds_module.SUGGESTIVE}** (only the item-level CI excludes 0" in table and "- a note" in table
    )
    assert "What would change the result" in table  # not every claim reproduced
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


def test_verdict_rows(seeds_module):
    """A claim's row: the items' and the seed-aware numbers of its record, and the verdict with the paper's
    direction and (where the paper prints it) effect; the labels are sentkit's."""
    from sentkit.stats import seeds as stats_seeds

    assert seeds_module.VERDICTS == stats_seeds.VERDICTS
    record = stats_seeds.record_from_summary(80.0, 81.0, [0.9, 1.1, 1.0], [0.5, 1.5])
    claim = {"direction": 1, "effect": {"stsb": 2.0}}
    row = seeds_module.claim_row(claim, "stsb", record)
    assert row["pooled"]["ci"] == [0.5, 1.5] and row["pooled"]["deltas"] == [0.9, 1.1, 1.0]
    assert row["verdict"] == seeds_module.REPRODUCED and row["seed_aware"]["ci"][0] > 0
    assert (
        seeds_module.claim_row({**claim, "direction": -1}, "stsb", record)["verdict"] == seeds_module.OPPOSITE
    )
    wide = stats_seeds.record_from_summary(80.0, 81.0, [3.0, -1.0, 1.0], [-0.2, 2.2])
    assert seeds_module.claim_row(claim, "stsb", wide)["verdict"] == seeds_module.UNDERPOWERED
    assert seeds_module.claim_row({**claim, "effect": {"*": 9.0}}, "stsb", wide)["verdict"] == (
        seeds_module.INCONCLUSIVE
    )
    cells = seeds_module.verdict_cells(row)
    assert cells[0] == "+1.00 [+0.50, +1.50]" and cells[3].startswith("**reproduced** (seed-aware CI")


def test_rejudge_from_items_or_from_the_summary(seeds_module, sts_spec, tmp_path):
    """A results file judged again: from the per-item values while the evaluations are there, from its
    summary's numbers once they are gone; the two agree closely."""
    out = tmp_path / "out"
    runs = _open(seeds_module, out)
    _score_all(runs, sts_spec, [1, 2, 3])
    data = runs.finish()
    exact = seeds_module.rejudge(out / "results.json")
    main = next(r for r in exact if r["method"] == "method")
    assert main["source"] == "items" and main["before"] == main["verdict"]
    stored = next(c for c in data["summary"]["claims"] if c["method"] == "method")["tasks"][sts_spec]
    assert main["seed_aware"] == stored["seed_aware"]
    shutil.rmtree(out / "evals")
    approx = next(r for r in seeds_module.rejudge(out / "results.json") if r["method"] == "method")
    assert approx["source"] == "summary" and approx["verdict"] == main["verdict"]
    width = main["seed_aware"]["ci"][1] - main["seed_aware"]["ci"][0]
    assert approx["seed_aware"]["ci"] == pytest.approx(main["seed_aware"]["ci"], abs=0.05 * width)
    effect = seeds_module.Claim("method", "base", "", effect={"*": 1e6})
    rows = seeds_module.rejudge(out / "results.json", claims=[effect])  # the effect a claim gives now
    assert [r["effect"] for r in rows] == [1e6, None] and main["effect"] is None
    assert "| method vs base |" in seeds_module.rejudged_markdown("x.json", [approx])


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
