"""Resume: a run interrupted mid-way and rerun with the same command ends exactly where an unbroken run does."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from sentkit.datasets.columns import ANCHOR
from sentkit.training import latest_checkpoint, train
from test_trainer import SmallSTS, save_tiny_model, stsb_sentences, tiny_config


class Interrupt(TrainerCallback):
    """Stands in for Ctrl-C / a killed job: raises after `step` optimizer steps, before that step is saved."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


def _rows(run):
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "eval_s"} for r in rows]


def test_interrupted_run_resumes_to_the_same_result(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    # 24 sentences in batches of 8: 3 steps an epoch, 6 in all; the interruption lands inside epoch 2
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 24)})
    task = SmallSTS(data_root=data_root, pairs=60)
    settings = dict(max_steps=-1, epochs=2, save_steps=2, eval_steps=3, save_total_limit=2)

    straight = train(tiny_config(tmp_path / "a", model_dir, **settings), data=data, eval_task=task)

    config = tiny_config(tmp_path / "b", model_dir, **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, eval_task=task, callbacks=[Interrupt(5)])
    run = tmp_path / "b" / "run"
    assert latest_checkpoint(run).name == "checkpoint-4"
    # a checkpoint cut short while being written must be ignored and cleared
    broken = run / "checkpoint-6"
    broken.mkdir()
    (broken / "trainer_state.json").write_text('{"global_step": 6, "log_hist')
    assert latest_checkpoint(run).name == "checkpoint-4"

    resumed = train(config, data=data, eval_task=task)  # the same command again
    results = json.loads((resumed / "results.json").read_text())
    assert results["resumed_from_step"] == 4 and results["global_step"] == 6
    # results cover the whole run, not only the resumed part: the same steps and mean loss as unbroken
    expected = json.loads((straight / "results.json").read_text())
    assert results["train"]["steps"] == expected["train"]["steps"] == 6
    assert results["train"]["train_loss"] == pytest.approx(expected["train"]["train_loss"], abs=1e-6)
    assert [(p["from_step"], p["to_step"]) for p in results["train"]["parts"]] == [(0, 4), (4, 6)]
    # each part's seconds and the total are rounded to 3 decimals: up to 0.5 ms apart each
    parts_s = sum(p["train_s"] for p in results["train"]["parts"])
    assert results["train"]["train_s"] >= parts_s - 5e-4 * (len(results["train"]["parts"]) + 1)
    # the first loss logged after the resume is that step's loss, not divided by the steps before it
    state = json.loads((resumed / "checkpoint-6" / "trainer_state.json").read_text())
    step5 = next(h for h in state["log_history"] if h.get("step") == 5 and "loss" in h)
    assert step5["loss_contrastive"] == pytest.approx(step5["loss"], rel=1e-4)

    final_a = load_file(straight / "checkpoint-6" / "model.safetensors")
    final_b = load_file(resumed / "checkpoint-6" / "model.safetensors")
    assert final_a.keys() == final_b.keys()
    for key in final_a:
        torch.testing.assert_close(final_a[key], final_b[key], rtol=0, atol=1e-6, msg=key)
    assert _rows(straight) == _rows(resumed)
    assert results["best"] == expected["best"]
    assert results["last_eval"]["main_score"] == pytest.approx(expected["last_eval"]["main_score"], abs=1e-6)

    # the same command once more: a finished run is a no-op that leaves its results as they are
    before = (resumed / "results.json").read_bytes()
    assert train(config, data=data, eval_task=task) == resumed
    assert (resumed / "results.json").read_bytes() == before


def test_train_loss_is_the_mean_step_loss_with_and_without_a_resume(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 32)})  # 4 steps of 8
    settings = dict(max_steps=4, save_steps=2)
    # the reference: every step's loss, logged one by one
    every = train(tiny_config(tmp_path / "every", model_dir, logging_steps=1, **settings), data=data)
    state = json.loads((every / "checkpoint-4" / "trainer_state.json").read_text())
    losses = [h["loss"] for h in state["log_history"] if "loss" in h]
    assert len(losses) == 4
    mean = sum(losses) / 4

    # no logging step inside the run: the loss since the last log was counted twice (2 x mean)
    quiet = train(tiny_config(tmp_path / "quiet", model_dir, logging_steps=50, **settings), data=data)
    results = json.loads((quiet / "results.json").read_text())
    assert results["train"]["train_loss"] == pytest.approx(mean, rel=1e-6)

    config = tiny_config(tmp_path / "resumed", model_dir, logging_steps=50, **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[Interrupt(3)])
    resumed = train(config, data=data)
    results = json.loads((resumed / "results.json").read_text())
    assert results["resumed_from_step"] == 2
    assert results["train"]["train_loss"] == pytest.approx(mean, rel=1e-6)
