"""`sentkit compare --a ... --b ...`: runs paired by training seed, the seed-aware statistic beside the
per-seed differences, and the refusals (seeds that do not pair, items that differ).

Each "trained model" is a character-trigram encoder whose bucket count plays the seed: A collides in
about 32 buckets, B spreads over about 300, so B ranks STS pairs better at every seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.compare import compare_pooled, compare_runs, compare_seeds, seeds_comparison_text, training_seed
from sentkit.evaluate import evaluate
from test_compare import _sts_file as sts_file

SEEDS = (1, 2, 3)


def _sts_file(path: Path) -> Path:
    return sts_file(path, n=300)


def _run(out: Path, dim: int, spec: str, seed: int | None) -> Path:
    extra = {"train_seed": seed} if seed is not None else None
    encoder = NgramEncoder(dim=dim, name=f"tri{dim}")
    return Path(evaluate(encoder, [spec], out=out, show_progress=False, extra_config=extra)["path"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seeds")
    spec = f"sts:{_sts_file(tmp / 'pairs.tsv')}"
    a = {s: _run(tmp / "a", 30 + s, spec, s) for s in SEEDS}
    b = {s: _run(tmp / "b", 290 + 7 * s, spec, s) for s in SEEDS}
    start = _run(tmp / "start", 64, spec, None)
    return {"tmp": tmp, "spec": spec, "a": a, "b": b, "start": start}


def test_runs_pair_by_seed_whatever_their_order(runs):
    spec = runs["spec"]
    result = compare_seeds([runs["a"][s] for s in (3, 1, 2)], [runs["b"][s] for s in SEEDS], resamples=300)
    assert [p["seed"] for p in result["pairs"]] == [1, 2, 3]
    main_score = result["tasks"][spec]["scores"]["main_score"]
    for seed, delta in zip(SEEDS, main_score["deltas"]):  # each seed's B - A is `sentkit compare` of the pair
        cmp = compare_runs(runs["a"][seed], runs["b"][seed], resamples=300)
        assert delta == pytest.approx(cmp["tasks"][spec]["scores"]["main_score"]["delta"])
    pooled = compare_pooled([(runs["a"][s], runs["b"][s]) for s in SEEDS], resamples=300)
    assert main_score["item"]["ci"] == pooled["tasks"][spec]["scores"]["main_score"]["ci"]
    assert main_score["delta"] == pytest.approx(np.mean(main_score["deltas"])) and main_score["delta"] > 3
    assert main_score["ci"][0] < main_score["item"]["ci"][0] and main_score["p_value"] < 0.05
    assert main_score["seeds"] == 3 and main_score["detectable"] > 0
    text = seeds_comparison_text(result)
    assert "seed 1: A " in text and " ".join(f"{d:+.2f}" for d in main_score["deltas"]) in text


def test_cli_takes_folders_and_writes_json(runs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    argv = ["compare", "--a", str(runs["tmp"] / "a"), "--b", str(runs["tmp"] / "b"), "--resamples", "200"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "A: tri31  B: tri297  (3 seed(s))" in printed and "item 95% CI" in printed
    saved = json.loads(out.read_text())
    assert [p["seed"] for p in saved["pairs"]] == [1, 2, 3] and saved["bootstrap"]["resamples"] == 200
    record = saved["tasks"][runs["spec"]]["scores"]["main_score"]
    assert record["ci"] and record["two_level_bootstrap"]["ci"]


def test_one_start_model_is_the_baseline_of_every_seed(runs):
    result = compare_seeds([runs["start"]], [runs["b"][s] for s in SEEDS], resamples=200)
    assert [(p["seed"], p["a"]["path"]) for p in result["pairs"]] == [(s, str(runs["start"])) for s in SEEDS]
    record = result["tasks"][runs["spec"]]["scores"]["main_score"]
    assert len(record["deltas"]) == 3 and record["ci"] is not None


def test_one_file_a_side_has_no_seed_aware_interval(runs):
    result = compare_seeds([runs["a"][1]], [runs["b"][1]], resamples=200)
    record = result["tasks"][runs["spec"]]["scores"]["main_score"]
    assert record["ci"] is None and record["item"]["ci"][0] > 0
    assert "one seed: no seed-aware interval" in seeds_comparison_text(result)


def test_a_single_trained_file_is_no_start_model_its_seed_must_pair(runs, capsys):
    a, b = runs["a"], runs["b"]
    # B's one file records seed 1: seed 2 of A has no partner (it would be compared with B's seed-1 run)
    err = _refusal(capsys, "--a", a[1], a[2], "--b", b[1])
    assert err == (
        "sentkit: error: the training seeds do not pair: only in --a [2], only in --b - (--b's one file "
        "records a training seed, so it is not an untrained start)\n"
    )
    err = _refusal(capsys, "--a", a[3], "--b", b[1], b[2], b[3])
    assert "only in --a -, only in --b [1, 2]" in err and "--a's one file records a training seed" in err
    err = _refusal(capsys, "--a", a[1], "--b", b[2])
    assert "only in --a [1], only in --b [2] (to compare two runs whatever their training seeds" in err
    # the same seed on both single files pairs; a file without a seed is the start of every seed
    assert [p["seed"] for p in compare_seeds([a[2]], [b[2]], resamples=100)["pairs"]] == [2]
    result = compare_seeds([a[1], a[2]], [runs["start"]], resamples=100)
    assert [(p["seed"], p["b"]["path"]) for p in result["pairs"]] == [
        (1, str(runs["start"])),
        (2, str(runs["start"])),
    ]


def _refusal(capsys, *argv) -> str:
    assert main(["compare", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sentkit: error: ")
    return err


def test_seeds_that_do_not_pair_are_refused(runs, tmp_path, capsys):
    a, b = runs["a"], runs["b"]
    err = _refusal(capsys, "--a", a[1], a[2], "--b", b[1], b[3])
    assert "the training seeds do not pair: only in --a [2], only in --b [3]" in err
    assert "training seed 1 appears more than once" in _refusal(capsys, "--a", a[1], a[1], "--b", b[1], b[2])
    assert "records no training seed" in _refusal(capsys, "--a", a[1], runs["start"], "--b", b[1], b[2])
    assert "not both" in _refusal(capsys, a[1], "--a", a[2], "--b", b[2])
    assert "--b: expected the results files" in _refusal(capsys, "--a", a[1], a[2])
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no results JSON in this folder" in _refusal(capsys, "--a", empty, "--b", b[1])


def test_items_that_differ_are_refused(runs, capsys):
    """Seed 3's A scored on the same file with one gold score edited: not the same items."""
    path = Path(runs["spec"].removeprefix("sts:"))
    original = path.read_text()
    lines = original.splitlines()
    lines[5] = lines[5].rsplit("\t", 1)[0] + "\t2.5"
    path.write_text("\n".join(lines) + "\n")
    try:
        edited = _run(runs["tmp"] / "edited", 33, runs["spec"], 3)
    finally:
        path.write_text(original)
    err = _refusal(capsys, "--a", runs["a"][1], runs["a"][2], edited, "--b", *runs["b"].values())
    assert "was not scored on the same items" in err and "(all: item hash" in err


def test_the_training_seed_comes_from_the_training_run(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "best").mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps({"objective": {"name": "simcse"}, "seed": 43}))
    assert training_seed({"config": {"model_absolute": str(run_dir / "best")}}) == 43
    assert training_seed({"config": {"model_absolute": str(run_dir / "best"), "train_seed": 7}}) == 7
    assert training_seed({"config": {"model_absolute": str(tmp_path)}}) is None
    assert training_seed({"seed": 0, "config": {}}) is None  # the evaluation's own seed is not training's


def test_eval_records_the_training_seed_so_a_copied_results_file_still_pairs(tmp_path, capsys):
    from conftest import make_tiny_encoder

    spec = f"sts:{_sts_file(tmp_path / 'pairs.tsv')}"
    files = {}
    for seed in (43, 44):
        run_dir = tmp_path / f"run{seed}"
        make_tiny_encoder(seed=seed).save(run_dir / "best")
        (run_dir / "results.json").write_text(json.dumps({"objective": {"name": "simcse"}, "seed": seed}))
        argv = [
            "eval",
            "--model",
            str(run_dir / "best"),
            "--tasks",
            spec,
            "--out",
            str(tmp_path / f"r{seed}"),
        ]
        assert main(argv) == 0
        (path,) = (tmp_path / f"r{seed}").glob("*.json")
        assert json.loads(path.read_text())["config"]["train_seed"] == seed
        files[seed] = path.rename(tmp_path / f"copied{seed}.json")  # elsewhere, and the run folder gone
        (run_dir / "results.json").unlink()
    start = _run(tmp_path / "start", 64, spec, None)
    capsys.readouterr()
    assert main(["compare", "--a", str(start), "--b", *map(str, files.values())]) == 0
    assert "per seed" in capsys.readouterr().out
