"""examples/train_ease.py end to end on a tiny model (--quick, random entity init): the start scored once,
SimCSE and EASE on the same rows at each seed, the summary's paired difference is sentkit compare's, and a
second run trains nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow  # builds rows from gensim's 106-article dump sample, 2 tiny 4-step trainings, 3 evaluations
def test_train_ease_quick_seed_rows(tmp_path, data_root, monkeypatch):
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'sentkit[ease]'")
    from sentkit.compare import compare_runs
    from test_trainer import save_tiny_model

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import train_ease

    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = [
        "--quick",
        "--model",
        model,
        "--no-wikipedia2vec",
        "--out",
        str(out),
        "--data-root",
        str(data_root),
    ]
    results = train_ease.main(argv)
    assert results["seeds"] == [42] and list(results["scored"]["once"]) == ["start"]
    seeded = results["scored"]["42"]
    assert list(seeded) == ["simcse-unsup", "ease"]  # --quick: no ablations
    assert (
        seeded["simcse-unsup"]["train"]["rows"]
        == seeded["ease"]["train"]["rows"]
        == results["extra"]["data"]["rows"]
    )
    simcse, ease = seeded["simcse-unsup"]["train"], seeded["ease"]["train"]
    assert simcse["columns"] == ["anchor", "lang", "group"] and set(simcse["columns"]) < set(ease["columns"])
    assert simcse["sentences_sha256"] == ease["sentences_sha256"]  # the same sentences, order and groups
    last = ease["train_log"][-1]  # each term beside its chance value, kept in the results
    assert (
        last["step"] == 4 and last["chance_entity"] > 0 and "loss_entity" in last and "loss_dropout" in last
    )
    assert "loss_entity" not in simcse["train_log"][-1]
    tasks = ["mewsc16-30", *(f"{name}-60" for name in train_ease.ENGLISH_STC), "sts17"]
    assert list(seeded["ease"]["scores"]) == tasks

    claim = next(c for c in results["summary"]["claims"] if c["baseline"] == "simcse-unsup")
    cmp = compare_runs(out / seeded["simcse-unsup"]["results"], out / seeded["ease"]["results"])
    for task in tasks:
        main = cmp["tasks"][task]["scores"]["main_score"]
        assert claim["tasks"][task]["per_seed"]["42"] == {k: main[k] for k in ("delta", "ci", "p_value")}
        assert claim["tasks"][task]["paper"]  # every task has the paper's cells beside it
    assert "Table 3 (MewsC-16" in (out / "table.md").read_text(encoding="utf-8")

    import sentkit.training

    def no_training(*args, **kwargs):
        raise AssertionError("a second run must not train: the seed is complete")

    monkeypatch.setattr(sentkit.training, "train", no_training)
    assert train_ease.main(argv)["scored"] == results["scored"]


def test_built_rows_are_reused_only_for_the_same_settings(tmp_path, monkeypatch):
    """A build in <out>/pairs is reused when only the machine differs (folders, processes, where the dump
    lies), and rebuilt when anything that decides the rows differs."""
    import dataclasses
    import json

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import train_ease

    from sentkit.training_data.ease.entity_pairs import EaseBuildConfig

    built = EaseBuildConfig(
        dump="/a/wiki.xml.bz2", out="/a/pairs", min_links=5, processes=2, seed=42, max_rows=4000
    )
    manifest = tmp_path / "ease.json"
    assert train_ease.matching_build(manifest, built) is None  # nothing built yet
    record = {"config": dataclasses.asdict(built), "rows": 3197}
    manifest.write_text(json.dumps(record), encoding="utf-8")
    elsewhere = dataclasses.replace(
        built, dump="/b/wiki.xml.bz2", out="/b/pairs", processes=8, data_root="/d"
    )
    assert train_ease.matching_build(manifest, elsewhere) == record
    for change in ({"max_rows": 100}, {"min_links": 10}, {"seed": 0}, {"dump": "/a/other.xml.bz2"}):
        assert train_ease.matching_build(manifest, dataclasses.replace(built, **change)) is None, change


@pytest.mark.slow  # builds rows from gensim's dump sample, 2 tiny 4-step trainings, 3 STS-B dev scorings
def test_entity_lr_dev_choice(tmp_path, data_root, monkeypatch):
    """examples/ease_entity_lr.py: each candidate's run is scored on STS-B dev, the entity loss is traced
    beside its chance value, a larger entity lr changes that trace, and the choice is the best dev score."""
    pytest.importorskip("gensim", reason="gensim not installed: pip install 'sentkit[ease]'")
    from test_trainer import save_tiny_model

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import ease_entity_lr

    model = save_tiny_model(tmp_path / "tiny")
    argv = ["--quick", "--no-wikipedia2vec", "--model", model, "--entity-lrs", "0,1e-1"]
    record = ease_entity_lr.main([*argv, "--out", str(tmp_path / "out"), "--data-root", str(data_root)])
    runs = record["runs"]
    assert list(runs) == ["0", "1e-1"] and record["dev_task"] == "stsb-dev"
    for run in runs.values():
        assert -100 <= run["dev"] <= 100 and run["entity_trace"]
        assert all(0 < step["loss_entity"] and 0 < step["chance_entity"] for step in run["entity_trace"])
    assert runs["0"]["entity_trace"] != runs["1e-1"]["entity_trace"]  # the table's lr reaches the loss
    assert record["chosen"] == ease_entity_lr.choose(runs)
    assert runs[record["chosen"]]["dev"] == max(run["dev"] for run in runs.values())
    tie = {"1e-3": {"dev": 70.004}, "1e-4": {"dev": 70.001}, "0": {"dev": 69.998}}  # 70.00 each
    assert ease_entity_lr.choose(tie) == "0"  # a tie at the reported precision: the smallest lr
    assert ease_entity_lr.choose({**tie, "1e-2": {"dev": 70.01}}) == "1e-2"
