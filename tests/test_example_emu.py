"""examples/train_emu.py end to end on a tiny model: two seeds, both kNN rows with their chance levels, the
summary's paired difference is sentkit compare's, a second run trains nothing, the t-SNE figure is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TASKS = ("knn-marc-category-body-30", "knn-marc-category-30")


@pytest.mark.slow  # two tiny 2-step training runs, three small evaluations of two matrices, a t-SNE
def test_train_emu_seeds_and_resume(tmp_path, data_root, monkeypatch):
    from sentkit.compare import compare_runs
    from test_trainer import save_tiny_model

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import train_emu

    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["--model", model, "--methods", "emu", "--seeds", "1,2", "--max-steps", "2"]
    argv += ["--eval-per-lang", "30", "--max-adversarial", "20", "--out", str(out)]
    argv += ["--data-root", str(data_root), "--quick"]
    results = train_emu.main(argv)
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert (
        written["settings"]["max_steps"] == 2 and written["settings"]["eval_per_lang"] == 30
    )  # flags beat --quick
    assert written["seeds"] == [1, 2] and set(written["scored"]) == {"once", "1", "2"}
    assert set(written["scored"]["once"]) == {"base"} and set(written["scored"]["1"]) == {"emu"}
    for seed in ("1", "2"):
        entry = written["scored"][seed]["emu"]
        assert set(entry["scores"]) == set(TASKS)
        full = json.loads((out / entry["results"]).read_text(encoding="utf-8"))
        for task in TASKS:
            assert "items" in full["tasks"][task] and full["tasks"][task]["meta"]["n_per_lang"]["zh"] == 30
            assert sum("->" in key for key in full["tasks"][task]["scores"]) == 25  # 5 x 5 language pairs
            assert entry["scores"][task]["chance_mean"] == full["tasks"][task]["meta"]["chance_mean"] > 0
        assert any("loss_critic_l_d" in h for h in entry["train"]["train_log"])
        assert entry["train"]["objective"]["num_classes"] == 31  # MARC's English product categories
        run_dir = Path(entry["train"]["run_dir"])  # scored: its resumable checkpoints are gone, best/ stays
        assert (run_dir / "best").is_dir() and not list(run_dir.glob("checkpoint-*"))
    assert (
        written["extra"]["data"]["train_rows"] == 5000
        and written["extra"]["data"]["adversarial_rows"] == 5 * 20
    )
    assert written["extra"]["data"]["text_field"] == "title_body"

    # the summary's paired difference of Emu against its start is what sentkit compare gives on the two files
    claim = next(c for c in results["summary"]["claims"] if (c["method"], c["baseline"]) == ("emu", "base"))
    base = out / written["scored"]["once"]["base"]["results"]
    for seed in ("1", "2"):
        cmp = compare_runs(base, out / written["scored"][seed]["emu"]["results"])
        for task in TASKS:
            main = cmp["tasks"][task]["scores"]["main_score"]
            assert claim["tasks"][task]["per_seed"][seed] == {k: main[k] for k in ("delta", "ci", "p_value")}
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "knn-marc-category-body-30 (chance " in table and "| chance | - |" in table
    assert "| Emu | 2 |" in table  # the matrix of the main row: the mean over both seeds
    assert (out / "tsne.png").stat().st_size > 10_000

    import sentkit.training

    def no_training(*args, **kwargs):
        raise AssertionError("a second run must not train: every seed is complete")

    monkeypatch.setattr(sentkit.training, "train", no_training)
    again = train_emu.main(argv)
    assert again["scored"] == written["scored"]
