"""The trainer's objective hooks on a toy objective: its own parameter group, an auxiliary module kept out of
best/, an extra optimizer with inner steps (resumed exactly), and integer id columns."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import torch
from safetensors.torch import load_file
from torch import nn
from transformers import TrainerCallback

from sentkit.datasets.columns import ANCHOR, ENTITY_IDS, LABEL
from sentkit.errors import ConfigError
from sentkit.objectives import OBJECTIVES
from sentkit.objectives.gather import gather_with_grad
from sentkit.objectives.hooks import ExtraOptimizer
from sentkit.objectives.simcse import encode_views, info_nce
from sentkit.training import SentenceCollator, TrainConfig, latest_checkpoint, train
from test_trainer import save_tiny_model, stsb_sentences, tiny_config

CLIP = 0.05


@dataclass
class ToyConfig:
    temperature: float = 0.05
    """SimCSE's value; the toy only needs some contrastive loss."""


class ToyCritic(nn.Module):
    """InfoNCE on (anchor + id embedding) plus an adversarial term through a critic trained in inner steps."""

    config_class = ToyConfig
    required_columns = (ANCHOR,)
    int_columns = ("toy_id",)

    def __init__(self, encoder: nn.Module, config: ToyConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or ToyConfig()
        hidden = encoder.model.config.hidden_size
        self.table = nn.Embedding(4, hidden)  # auxiliary module with its own learning rate
        self.critic = nn.Linear(hidden, 1)  # trained only by the extra optimizer

    def param_groups(self, base_lr: float) -> list[dict]:
        return [{"params": list(self.table.parameters()), "lr": 10 * base_lr}]

    def extra_optimizers(self) -> dict[str, ExtraOptimizer]:
        adam = torch.optim.Adam(self.critic.parameters(), lr=1e-2)  # Adam: state that must be restored
        return {"critic": ExtraOptimizer(adam, steps=2, after_step=self.clip)}

    def clip(self) -> None:
        for p in self.critic.parameters():
            p.data.clamp_(-CLIP, CLIP)

    def inner_loss(self, batch: dict, name: str, step: int) -> dict[str, torch.Tensor]:
        with torch.no_grad():
            z = encode_views(self.encoder, batch, [ANCHOR])[0]  # (batch, hidden), dropout on
        # a mean over rows: processes averaging their gradients take the one-process step
        return {"gap": self.critic(z).mean() - self.critic(0.5 * z).mean()}

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        a, b = encode_views(self.encoder, batch, [ANCHOR], repeat=2)  # 2 x (batch, hidden)
        a = a + self.table(batch["toy_id"])
        candidates, offset = gather_with_grad(b)  # (world * batch, hidden)
        return {
            "contrastive": info_nce(a, candidates, self.config.temperature, offset),
            "adversarial": -0.1 * self.critic(a).mean(),
        }


class Interrupt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


class GroupRates(TrainerCallback):
    def __init__(self) -> None:
        self.rates: list[list[float]] = []

    def on_step_end(self, args, state, control, optimizer=None, **kwargs):
        self.rates.append([g["lr"] for g in optimizer.param_groups])


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(OBJECTIVES._items, "toy-critic", ToyCritic)


def test_param_group_aux_module_and_extra_optimizer_resume_exactly(tmp_path, data_root, toy):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    sentences = stsb_sentences(data_root, 16)  # 2 steps an epoch, 4 in all
    data = datasets.Dataset.from_dict({ANCHOR: sentences, "toy_id": [i % 4 for i in range(16)]})
    settings = dict(objective="toy-critic", max_steps=-1, epochs=2, save_steps=2, eval_task="")

    rates = GroupRates()
    straight = train(tiny_config(tmp_path / "a", model_dir, **settings), data=data, callbacks=[rates])
    config = tiny_config(tmp_path / "b", model_dir, **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[Interrupt(3)])
    assert latest_checkpoint(tmp_path / "b" / "run").name == "checkpoint-2"
    resumed = train(config, data=data)

    # the table's group runs at 10x the run's rate all along the linear schedule
    assert (
        all(r[-1] == pytest.approx(10 * r[0]) for r in rates.rates) and rates.rates[0][0] > rates.rates[-1][0]
    )
    a, b = (load_file(run / "checkpoint-4" / "model.safetensors") for run in (straight, resumed))
    assert {"table.weight", "critic.weight", "critic.bias"} <= a.keys() and a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6, msg=key)
    opt_a, opt_b = (torch.load(r / "checkpoint-4" / "extra_optimizers.pt") for r in (straight, resumed))
    for index, state in opt_a["critic"]["state"].items():
        for name, value in state.items():
            torch.testing.assert_close(value, opt_b["critic"]["state"][index][name], rtol=0, atol=1e-6)
    # the critic learned in its inner steps, within its clipping bound; the main optimizer never held it
    before = load_file(straight / "checkpoint-2" / "model.safetensors")
    assert not torch.equal(before["critic.weight"], a["critic.weight"])
    assert a["critic.weight"].abs().max() <= CLIP
    assert opt_a["critic"]["state"][0]["step"] == 2 * 4  # 2 inner steps per optimizer step
    state = json.loads((straight / "checkpoint-4" / "trainer_state.json").read_text())
    logged = [h for h in state["log_history"] if "loss" in h]
    assert all({"loss_contrastive", "loss_adversarial", "loss_critic_gap"} <= h.keys() for h in logged)
    first = logged[0]
    assert first["loss_contrastive"] + first["loss_adversarial"] == pytest.approx(first["loss"], rel=1e-4)
    # best/ is a plain sentence-transformers model: the encoder only
    best_keys = {k for f in (straight / "best").rglob("*.safetensors") for k in load_file(f)}
    assert best_keys and not any(k.startswith(("table", "critic")) or ".table" in k for k in best_keys)


def test_int_id_columns_become_long_tensors(tiny_encoder):
    rows = [
        {ANCHOR: "a", LABEL: 3, ENTITY_IDS: [1, 2], "toy_id": 0, "score": 0.5},
        {ANCHOR: "b", LABEL: 1, ENTITY_IDS: [4, 5], "toy_id": 2, "score": 1.0},
    ]
    batch = SentenceCollator(tiny_encoder, 8, int_columns=(LABEL, ENTITY_IDS, "toy_id"))(rows)
    assert batch[LABEL].dtype == batch[ENTITY_IDS].dtype == batch["toy_id"].dtype == torch.long
    assert batch[ENTITY_IDS].tolist() == [[1, 2], [4, 5]] and batch["toy_id"].tolist() == [0, 2]
    assert batch["score"].dtype == torch.float32
    rows[1][LABEL] = "Books"
    with pytest.raises(ValueError, match=r"column 'label': expected an integer id .* got 'Books'"):
        SentenceCollator(tiny_encoder, 8, int_columns=(LABEL,))(rows)


def test_non_integer_id_column_is_refused_before_training(tmp_path, data_root, toy):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 8), "toy_id": ["x"] * 8})
    with pytest.raises(ConfigError, match=r"^data: column 'toy_id' must hold integer ids"):
        train(tiny_config(tmp_path, model_dir, objective="toy-critic"), data=data)
    assert not (tmp_path / "run").exists()


def train_toy(out_dir: str, model_dir: str, sentences: list[str], batch_size: int):
    """The toy run the DDP test makes in each of two processes and in one process with twice the batch."""
    import datasets

    data = datasets.Dataset.from_dict({ANCHOR: sentences, "toy_id": [i % 4 for i in range(len(sentences))]})
    config = TrainConfig(
        model=model_dir, objective="toy-critic", output_dir=out_dir, batch_size=batch_size, lr=1e-3,
        max_steps=3, save_steps=3, logging_steps=1, eval_task="", progress=False, pooling="mean",
    )  # fmt: skip
    return train(config, data=data)


DRIVER = """
import json, sys
sys.path[:0] = {paths!r}
from sentkit.objectives import OBJECTIVES
from test_objective_hooks import ToyCritic, train_toy
OBJECTIVES._items.setdefault("toy-critic", ToyCritic)
train_toy({out!r}, {model!r}, json.loads(open({rows!r}).read()), 4)
"""


@pytest.mark.slow  # two fresh processes importing torch + transformers (~40 s CPU on 2 cores)
def test_extra_optimizer_under_ddp_equals_one_process_with_double_batch(tmp_path, data_root, toy):
    """torchrun, 2 x batch 4 (gloo) == 1 x batch 8 with dropout off: encoder, table, critic and its Adam."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    model_dir = save_tiny_model(tmp_path / "tiny", dropout=False)
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(stsb_sentences(data_root, 24)), encoding="utf-8")
    tests = Path(__file__).resolve().parents[1]
    paths = [str(tests), str(tests / "training")]
    script = DRIVER.format(paths=paths, out=str(tmp_path / "ddp"), model=model_dir, rows=str(rows))
    (tmp_path / "driver.py").write_text(script, encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port)]
    done = subprocess.run(
        [*cmd, str(tmp_path / "driver.py")], env=env, capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    single = train_toy(str(tmp_path / "single"), model_dir, json.loads(rows.read_text()), 8)

    ddp = tmp_path / "ddp"
    assert json.loads((ddp / "results.json").read_text())["world_size"] == 2
    a, b = (load_file(run / "checkpoint-3" / "model.safetensors") for run in (ddp, single))
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=2e-5, msg=key)
    opt_a, opt_b = (torch.load(r / "checkpoint-3" / "extra_optimizers.pt") for r in (ddp, single))
    for index, state in opt_a["critic"]["state"].items():
        for name, value in state.items():
            torch.testing.assert_close(value, opt_b["critic"]["state"][index][name], rtol=0, atol=2e-5)
    start = load_file(os.path.join(model_dir, "model.safetensors"))
    moved = a["encoder.model.embeddings.word_embeddings.weight"] - start["embeddings.word_embeddings.weight"]
    assert moved.abs().max() > 1e-4  # they agree after real updates
