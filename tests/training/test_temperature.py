"""A softmax temperature is refused below what float32 can divide cosines by (one line naming the flag and
the range), and a run that diverges at a tiny temperature names the temperature, not the learning rate."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_divergence import PoisonGradient, tiny  # noqa: F401 - the fixture

from sentkit.cli import main
from sentkit.errors import TrainingDiverged
from sentkit.objectives import objective_config
from sentkit.objectives.options import TEMPERATURE_MIN
from sentkit.objectives.simcse import info_nce
from sentkit.training import train
from test_trainer import save_tiny_model, stsb_sentences, tiny_config


def _argv(tmp_path, data_root):
    model_dir = save_tiny_model(tmp_path / "tiny")
    data = tmp_path / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 16)) + "\n", encoding="utf-8")
    argv = ["train", "--model", model_dir, "--data", str(data), "--output-dir", str(tmp_path / "out")]
    return argv + ["--batch-size", "8", "--max-steps", "2", "--eval-task", "", "--no-progress"]


def test_cli_refuses_a_temperature_float32_cannot_divide_by(tmp_path, capsys, data_root):
    argv = _argv(tmp_path, data_root)
    capsys.readouterr()
    assert main([*argv, "--temperature", "1e-300"]) == 2
    assert capsys.readouterr().err == (
        "sentkit: error: --temperature: expected a number >= 1e-19 or empty (null), got 1e-300\n"
    )
    assert main([*argv, "--objective-options", "temperature=1e-30"]) == 2
    assert capsys.readouterr().err == (
        "sentkit: error: objective 'simcse-unsup': temperature: expected a number >= 1e-19, got 1e-30\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["simcse-unsup", "simcse-sup", "ease"])
def test_every_softmax_temperature_has_the_float32_range(name):
    with pytest.raises(ValueError, match=r"^temperature: expected a number >= 1e-19, got 1e-20$"):
        objective_config(name, temperature=1e-20)
    assert objective_config(name, temperature=TEMPERATURE_MIN).temperature == TEMPERATURE_MIN


def test_the_config_check_and_the_objectives_share_the_bound():
    from sentkit.training import config

    assert config.TEMPERATURE_MIN == TEMPERATURE_MIN


def test_the_lower_bound_keeps_the_loss_and_gradient_norm_finite_in_float32():
    torch.manual_seed(0)
    a = torch.randn(8, 16, requires_grad=True)
    b = torch.randn(8, 16)
    loss = info_nce(a, b, TEMPERATURE_MIN, 0, None)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(a.grad.norm())
    assert not torch.isfinite(torch.tensor(1.0, dtype=torch.float32) / 1e-300)  # what the old range allowed


def test_a_divergence_at_a_tiny_temperature_names_the_temperature_not_the_lr(tmp_path, tiny):  # noqa: F811
    model_dir, data = tiny
    config = dataclasses.replace(
        tiny_config(tmp_path, model_dir, max_steps=4, save_steps=4), temperature=1e-5
    )
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, callbacks=[PoisonGradient(2)])
    message = str(err.value)
    assert message.startswith("training diverged at step 2: the gradient norm is ")
    assert message.endswith(
        "(temperature 1e-05, lr 0.001); the temperature is far below any usable value (cosines divided by it "
        "reach 1.0e+05): start again with a --temperature of at least 0.001 (SimCSE uses 0.05); "
        "a lower --lr does not help"
    )
