"""Emu through the trainer: the critic's inner steps run and are logged, and an interrupted run resumes to
exactly the weights, critic, centers and critic-optimizer state of an unbroken one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sentkit.training import latest_checkpoint, train
from sentkit.training_data.specialization import marc_specialization_sentences, specialization_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: shared trainer helpers
from test_resume import Interrupt  # noqa: E402
from test_trainer import save_tiny_model, tiny_config  # noqa: E402


def _emu_data(data_root):
    sentences = marc_specialization_sentences(root=data_root, max_train=24, max_adversarial=12, seed=0)
    return specialization_rows(sentences, seed=0)


def _config(tmp_path, name, model_dir, classes, **kw):
    settings = dict(objective="emu", objective_options=f"num_classes={classes},critic_steps=3")
    settings.update(max_steps=-1, epochs=2, save_steps=2, save_total_limit=2)
    settings.update(kw)
    return tiny_config(tmp_path / name, model_dir, **settings)


@pytest.mark.slow  # three tiny training runs: ~30 s on 2 idle cores
def test_emu_run_logs_critic_and_resumes_exactly(tmp_path, data_root):
    model_dir = save_tiny_model(tmp_path / "tiny")
    data, names = _emu_data(data_root)  # 24 rows in batches of 8: 3 steps an epoch, 6 in all

    straight = train(_config(tmp_path, "a", model_dir, len(names)), data=data)
    state = json.loads((straight / "checkpoint-6" / "trainer_state.json").read_text())
    logged = [h for h in state["log_history"] if "loss" in h]
    assert len(logged) == 6
    for h in logged:
        assert {"loss_softmax", "loss_center", "loss_adversarial", "loss_critic_l_d"} <= set(h)
    # the inner loop ran on every step: Adam holds a state for every critic parameter, 3 updates per step
    inner = torch.load(straight / "checkpoint-6" / "extra_optimizers.pt", weights_only=False)["critic"][
        "state"
    ]
    critic_params = sum(
        1 for k in load_file(straight / "checkpoint-6" / "model.safetensors") if k.startswith("critic.")
    )
    assert len(inner) == critic_params > 0
    assert all(int(s["step"]) == 6 * 3 for s in inner.values())
    weights = load_file(straight / "checkpoint-6" / "model.safetensors")
    critic = [v for k, v in weights.items() if k.startswith("critic.")]
    assert critic and all(v.abs().max() <= 0.01 + 1e-7 for v in critic)  # WGAN clipping held
    assert weights["centers"].abs().sum() > 0  # Wen et al.'s center update ran

    config = _config(tmp_path, "b", model_dir, len(names))
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[Interrupt(5)])
    assert latest_checkpoint(tmp_path / "b" / "run").name == "checkpoint-4"
    resumed = train(config, data=data)
    assert json.loads((resumed / "results.json").read_text())["resumed_from_step"] == 4

    final_a, final_b = weights, load_file(resumed / "checkpoint-6" / "model.safetensors")
    assert final_a.keys() == final_b.keys()
    for key in final_a:
        torch.testing.assert_close(final_a[key], final_b[key], rtol=0, atol=1e-6, msg=key)
    opt_a = torch.load(straight / "checkpoint-6" / "extra_optimizers.pt", weights_only=False)
    opt_b = torch.load(resumed / "checkpoint-6" / "extra_optimizers.pt", weights_only=False)
    for (pa, sa), (pb, sb) in zip(opt_a["critic"]["state"].items(), opt_b["critic"]["state"].items()):
        assert pa == pb
        torch.testing.assert_close(sa["exp_avg_sq"], sb["exp_avg_sq"], rtol=0, atol=1e-9)
    state_b = json.loads((resumed / "checkpoint-6" / "trainer_state.json").read_text())
    last_a = [h for h in state["log_history"] if h.get("step") == 6 and "loss" in h][0]
    last_b = [h for h in state_b["log_history"] if h.get("step") == 6 and "loss" in h][0]
    assert last_b["loss_critic_l_d"] == pytest.approx(last_a["loss_critic_l_d"], abs=1e-7)
    assert last_b["loss"] == pytest.approx(last_a["loss"], abs=1e-6)
