"""A diverging run stops at the step where a loss term, the gradient norm or a weight turns NaN or
infinite, or where weights grown by orders of magnitude would be saved: one line, the last sane checkpoint
kept (resumable with a lower lr), nothing non-finite or blown up saved."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from sentkit.cli import main
from sentkit.datasets.columns import ANCHOR
from sentkit.errors import TrainingDiverged
from sentkit.objectives import OBJECTIVES, objective_config
from sentkit.training import latest_checkpoint, train
from test_trainer import SmallSTS, save_tiny_model, stsb_sentences, tiny_config


@pytest.fixture
def tiny(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    return model_dir, datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 32)})


class PoisonWeights(TrainerCallback):
    """Sets one encoder weight to NaN as optimizer step `step` begins: that step's loss is NaN."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == self.step - 1:
            with torch.no_grad():
                model.encoder.model.embeddings.LayerNorm.weight[0] = float("nan")


class PoisonGradient(TrainerCallback):
    """Makes one weight's gradient infinite at optimizer step `step`; the loss itself stays finite."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.handle = None

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step == self.step - 1:
            weight = model.encoder.model.embeddings.LayerNorm.weight
            self.handle = weight.register_hook(lambda grad: grad * float("inf"))


def _strict_rows(path):
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def _all_finite(path) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in load_file(path).values())


@pytest.mark.parametrize("name", OBJECTIVES.names())
def test_every_objective_refuses_non_finite_options(name):
    config_class = OBJECTIVES.get(name).config_class
    floats = [f.name for f in dataclasses.fields(config_class) if isinstance(f.default, float)]
    assert floats, name
    for field in floats:
        for bad in (float("nan"), float("inf")):
            with pytest.raises(ValueError, match=rf"^{field}: expected .*, got {bad}$"):
                objective_config(name, **{field: bad})
    for field, (words, _) in config_class.RANGES.items():
        default = getattr(config_class(), field)
        if isinstance(default, str):  # a choice among names
            with pytest.raises(ValueError, match=rf"^{field}: expected {re.escape(words)}, got 'bogus'$"):
                objective_config(name, **{field: "bogus"})
            continue
        with pytest.raises(ValueError, match=rf"^{field}: expected {re.escape(words)}, got -"):
            objective_config(name, **{field: -abs(default) - 1})  # below every range's lower bound


def test_nan_loss_stops_at_that_step_keeping_the_last_checkpoint_then_resumes_at_a_lower_lr(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2, lr=1e-3)
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, callbacks=[PoisonWeights(3)])
    run = tmp_path / "run"
    assert str(err.value) == (
        "training diverged at step 3: loss term 'contrastive' is nan (lr 0.001); "
        f"{run / 'checkpoint-2'} is kept: run the same command with a lower --lr to resume from it"
    )
    assert latest_checkpoint(run).name == "checkpoint-2" and not (run / "checkpoint-3").exists()
    assert _all_finite(run / "checkpoint-2" / "model.safetensors")
    assert not (run / "results.json").exists() and not (run / "best").exists()
    state = json.loads((run / "checkpoint-2" / "trainer_state.json").read_text())
    assert [h["learning_rate"] for h in state["log_history"] if "loss" in h] == pytest.approx([1e-3, 7.5e-4])

    # the same command at half the lr goes on from step 2; the linear schedule continues scaled to it
    resumed = train(dataclasses.replace(config, lr=5e-4), data=data)
    results = json.loads((resumed / "results.json").read_text())
    assert results["resumed_from_step"] == 2 and results["global_step"] == 4
    assert [(p["from_step"], p["to_step"], p["lr"]) for p in results["train"]["parts"]] == [
        (0, 2, 1e-3),
        (2, 4, 5e-4),
    ]
    state = json.loads((resumed / "checkpoint-4" / "trainer_state.json").read_text())
    rates = {h["step"]: h["learning_rate"] for h in state["log_history"] if "loss" in h}
    # step k (1-based) of 4 runs at peak * (4 - (k - 1)) / 4
    assert [rates[k] for k in (1, 2, 3, 4)] == pytest.approx([1e-3, 7.5e-4, 2.5e-4, 1.25e-4])
    assert _all_finite(resumed / "best" / "model.safetensors")


def test_infinite_gradient_norm_stops_the_run(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=4)
    with pytest.raises(
        TrainingDiverged, match=r"^training diverged at step 2: the gradient norm is (inf|nan) "
    ):
        train(config, data=data, callbacks=[PoisonGradient(2)])
    assert not (tmp_path / "run").exists()  # no checkpoint yet: a fresh run leaves nothing behind


def test_huge_lr_with_eval_task_stops_before_keeping_blown_up_weights(tmp_path, tiny, data_root):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=1, eval_steps=2, lr=1e30)
    run = tmp_path / "run"
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, eval_task=SmallSTS(data_root=data_root, pairs=40))
    # step 1's update is finite but ~1e30: its checkpoint would fail again at the next step, so none is kept
    assert re.fullmatch(
        r"training diverged at step 1: the weights grew by orders of magnitude: largest \|weight\| "
        r"[0-9.]+ at the start, [0-9.e+]+ now \(lr 1e\+30\); no checkpoint had been written, so nothing "
        r"is kept: start again with a lower --lr",
        str(err.value),
    ), str(err.value)
    assert not run.exists()  # a fresh run that kept nothing leaves nothing (best/ of step 0 included)


def _largest_weight(path) -> float:
    return max(float(t.abs().max()) for t in load_file(path).values() if t.is_floating_point())


def test_cli_huge_lr_with_save_steps_1_advice_then_a_lower_lr_succeeds(tmp_path, capsys, data_root):
    model_dir = save_tiny_model(tmp_path / "tiny")
    data = tmp_path / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 32)) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["train", "--model", model_dir, "--data", str(data), "--output-dir", str(out), "--batch-size", "8"]
    argv += ["--max-steps", "2", "--save-steps", "1", "--eval-task", "", "--no-progress"]
    capsys.readouterr()
    assert main([*argv, "--lr", "1e30"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "sentkit: error: training diverged at step 1: the weights grew"
    )
    assert err.rstrip().endswith("nothing is kept: start again with a lower --lr")
    assert not out.exists()
    # following the advice works: the same command at a lower lr trains to the end
    assert main([*argv, "--lr", "1e-3"]) == 0
    assert json.loads((out / "results.json").read_text())["global_step"] == 2
    start = _largest_weight(tmp_path / "tiny" / "model.safetensors")
    assert _largest_weight(out / "best" / "model.safetensors") < 2 * start


class RaiseLr(TrainerCallback):
    """Sets every optimizer group's lr to `lr` as optimizer step `step` begins (a schedule gone wrong)."""

    def __init__(self, step: int, lr: float) -> None:
        self.step, self.lr = step, lr

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        if state.global_step == self.step - 1:
            for group in optimizer.param_groups:
                group["lr"] = self.lr


def test_blown_up_weights_keep_the_last_sane_checkpoint_and_a_lower_lr_resumes(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=1, lr=1e-3)
    run = tmp_path / "run"
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, callbacks=[RaiseLr(3, 1e30)])
    assert str(err.value).startswith("training diverged at step 3: the weights grew by orders of magnitude")
    assert str(err.value).endswith(
        f"{run / 'checkpoint-2'} is kept: run the same command with a lower --lr to resume from it"
    )
    assert latest_checkpoint(run).name == "checkpoint-2" and not (run / "checkpoint-3").exists()
    start = _largest_weight(tmp_path / "tiny" / "model.safetensors")
    assert _largest_weight(run / "checkpoint-2" / "model.safetensors") < 2 * start

    resumed = train(dataclasses.replace(config, lr=5e-4), data=data)
    results = json.loads((resumed / "results.json").read_text())
    assert results["resumed_from_step"] == 2 and results["global_step"] == 4
    assert _largest_weight(resumed / "best" / "model.safetensors") < 2 * start


def test_a_resumed_run_is_held_to_the_scales_of_its_first_start(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2, lr=1e-3)
    with pytest.raises(TrainingDiverged):
        train(config, data=data, callbacks=[PoisonWeights(3)])
    run = tmp_path / "run"
    record = run / "checkpoint-2" / "run_start.json"
    first = json.loads(record.read_text())
    assert first["weight"] == pytest.approx(
        _largest_weight(tmp_path / "tiny" / "model.safetensors"), rel=1e-6
    )
    assert math.isfinite(first["loss"]) and first["loss"] > 0
    # the resume measures against the start checkpoint-2 carries, not against its own first step: a start
    # recorded 1000 times smaller makes the very next checkpoint a blown-up state
    record.write_text(json.dumps({**first, "weight": first["weight"] / 1000}))
    with pytest.raises(TrainingDiverged, match=r"^training diverged at step 4: the weights grew"):
        train(dataclasses.replace(config, lr=5e-4), data=data)
    assert latest_checkpoint(run).name == "checkpoint-2"


def test_a_checkpoint_written_without_the_check_is_not_offered(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2, lr=1e-3)
    with pytest.raises(TrainingDiverged):
        train(config, data=data, callbacks=[PoisonWeights(3)])
    run = tmp_path / "run"
    (run / "checkpoint-2" / "run_start.json").unlink()  # as an older sentkit wrote its checkpoints
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, callbacks=[PoisonWeights(3)])
    assert str(err.value).endswith(
        f"{run / 'checkpoint-2'} was written without a check of what its model does and may hold a ruined model: "
        "start again with --overwrite and a lower --lr"
    )


@dataclasses.dataclass
class NaNAfter(SmallSTS):
    """Scores `finite` evaluations, then NaN (what a collapsed or NaN model gives)."""

    finite: int = 2
    name: str = "nan-after"

    def evaluate(self, encoder) -> dict[str, float]:
        self.finite -= 1
        return {"main_score": 50.0 if self.finite >= 0 else float("nan")}


def test_non_finite_evaluation_score_stops_the_run_and_is_never_recorded(tmp_path, tiny, data_root):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=1, eval_steps=1)
    run = tmp_path / "run"
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, eval_task=NaNAfter(data_root=data_root))
    assert str(err.value).startswith(
        "training diverged at step 2: evaluation on nan-after gave main_score = nan (lr 0.001); "
        f"{run / 'checkpoint-1'} is kept"
    )
    assert [r["step"] for r in _strict_rows(run / "metrics.jsonl")] == [0, 1]
    assert json.loads((run / "best.json").read_text())["step"] == 0
    assert latest_checkpoint(run).name == "checkpoint-1" and not (run / "results.json").exists()


def test_cli_huge_lr_is_one_line_exit_2(tmp_path, capsys, data_root):
    model_dir = save_tiny_model(tmp_path / "tiny")
    data = tmp_path / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 32)) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["train", "--model", model_dir, "--data", str(data), "--output-dir", str(out), "--lr", "1e30"]
    argv += ["--batch-size", "8", "--max-steps", "4", "--save-steps", "10", "--eval-task", ""]
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sentkit: error: training diverged at step 2: loss term ")
    assert "no checkpoint had been written, so nothing is kept: start again with a lower --lr" in err
    assert not out.exists()


def test_sane_state_thresholds():
    from sentkit.training.sane_state import GROWTH, StartScales

    start = StartScales(weight=2.0, loss=0.5)
    assert GROWTH == 100.0
    assert start.problem(199.0, 99.0) is None  # within 100x the weight, and 100x max(loss, 1)
    assert start.problem(201.0, 1.0) == (
        "the weights grew by orders of magnitude: largest |weight| 2 at the start, 201 now"
    )
    assert start.problem(float("nan"), 1.0).startswith("the weights grew")
    assert (
        start.problem(3.0, -101.0) == "the loss grew by orders of magnitude: 0.5 at the first step, -101 now"
    )
    assert StartScales(weight=2.0).problem(3.0, 1e9) is None  # no loss recorded: weights only
