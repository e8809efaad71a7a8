"""examples/train_emu.py end to end on a tiny model: every matrix recorded, the summary is their mean, the
t-SNE figure is written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.slow  # two tiny 2-step training runs and three small evaluations
def test_train_emu_smoke(tmp_path, data_root, monkeypatch):
    from test_trainer import save_tiny_model

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import train_emu

    model = save_tiny_model(tmp_path / "tiny")
    argv = ["--model", model, "--methods", "emu", "--seeds", "1,2", "--max-steps", "2"]
    argv += ["--eval-per-lang", "30", "--max-adversarial", "20", "--out", str(tmp_path / "out")]
    argv += ["--data-root", str(data_root), "--quick"]
    results = train_emu.main(argv)
    written = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert written["args"]["max_steps"] == 2 and written["args"]["seeds"] == "1,2"  # flags beat --quick
    assert set(written["runs"]) == {"base", "emu"} and len(written["runs"]["emu"]) == 2
    assert written["task"]["n_per_lang"] == {lang: 30 for lang in ("en", "de", "es", "fr", "zh")}
    emu = written["runs"]["emu"]
    assert written["summary"]["emu"]["main_score"]["mean"] == pytest.approx(
        np.mean([r["scores"]["main_score"] for r in emu])
    )
    assert all(sum("->" in key for key in r["scores"]) == 25 for r in emu)  # 5 x 5 language pairs
    assert all(r["scores"]["truncated_sentences"] >= 0 for r in emu)  # KNNTask's count, inherited
    assert any("loss_critic_l_d" in h for h in emu[0]["train_log"])
    assert written["train_rows"] == 5000 and written["adversarial_rows"] == 5 * 20
    assert written["objectives"]["emu"]["num_classes"] == 31  # MARC's English product categories
    assert (tmp_path / "out" / "tsne.png").stat().st_size > 10_000
    assert "| Emu | 2 |" in results["table"]
