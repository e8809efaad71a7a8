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
