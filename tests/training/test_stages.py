"""Multi-stage runs: stage 2 starts from stage 1's best model, each stage resumes or is skipped on its own."""

from __future__ import annotations

import json

import pytest
import yaml
from transformers import TrainerCallback

from sentkit.cli import main
from sentkit.training import load_config, train
from test_trainer import save_tiny_model, stsb_sentences


class InterruptStage(TrainerCallback):
    def __init__(self, stage: str, step: int) -> None:
        self.stage, self.step = stage, step

    def on_step_end(self, args, state, control, **kwargs):
        if args.output_dir.endswith(self.stage) and state.global_step == self.step:
            raise KeyboardInterrupt


def test_two_stages_chain_resume_per_stage_and_finish_once(tmp_path, data_root, capsys):
    model_dir = save_tiny_model(tmp_path / "tiny")
    sentences = stsb_sentences(data_root, 32)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences[:16]) + "\n", encoding="utf-8")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "anchor\tpositive\n" + "".join(f"{a}\t{b}\n" for a, b in zip(sentences[16:24], sentences[24:32])),
        encoding="utf-8",
    )
    plan = {
        "output_dir": str(tmp_path / "run"),
        "model": model_dir,
        "batch_size": 4,
        "max_steps": 4,
        "save_steps": 2,
        "lr": 1e-3,
        "eval_task": "",
        "progress": False,
        "stages": [
            {"name": "domain", "data": str(corpus)},
            {"name": "nli", "data": str(pairs), "objective": "simcse-sup"},
        ],
    }
    path = tmp_path / "stages.yaml"
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    run = tmp_path / "run"

    with pytest.raises(KeyboardInterrupt):
        train(load_config(path), callbacks=[InterruptStage("nli", 3)])
    assert (run / "domain" / "results.json").is_file() and not (run / "results.json").exists()
    first_stage = (run / "domain" / "results.json").read_bytes()

    assert main(["train", "--config", str(path)]) == 0  # stage 1 skipped, stage 2 resumes from step 2
    assert (run / "domain" / "results.json").read_bytes() == first_stage
    nli = json.loads((run / "nli" / "results.json").read_text())
    assert nli["resumed_from_step"] == 2 and nli["global_step"] == 4
    assert nli["model"] == str(run / "domain" / "best") and nli["objective"]["name"] == "simcse-sup"
    top = json.loads((run / "results.json").read_text())
    assert [s["name"] for s in top["stages"]] == ["domain", "nli"]
    assert top["stages"][0]["results"]["global_step"] == 4 and top["best_model"] == str(run / "nli" / "best")

    before = (run / "results.json").read_bytes()
    capsys.readouterr()
    assert main(["train", "--config", str(path)]) == 0  # everything finished: nothing to do
    assert capsys.readouterr().out.count("nothing to do") == 2
    assert (run / "results.json").read_bytes() == before
