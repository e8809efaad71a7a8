"""What a folder holds decides start / resume / no-op / refuse; nothing is lost or left half-written."""

from __future__ import annotations

import json

import pytest
from transformers import TrainerCallback

from sentkit.datasets.columns import ANCHOR
from sentkit.errors import ConfigError
from sentkit.training import train
from test_trainer import save_tiny_model, stsb_sentences, tiny_config


class StopAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


@pytest.fixture
def tiny(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    return model_dir, datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 16)})


def test_folder_holding_a_run_without_checkpoint_is_refused_unless_overwrite(tmp_path, tiny):
    model_dir, data = tiny
    run = train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    for checkpoint in run.glob("checkpoint-*"):
        import shutil

        shutil.rmtree(checkpoint)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    other = tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2, lr=5e-4)
    with pytest.raises(
        ConfigError, match=r"holds a finished run with a different config \(lr: 0.001 -> 0.0005\)"
    ):
        train(other, data=data)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    (run / "results.json").unlink()  # config.yaml and best/ only: still a run, nothing to resume
    with pytest.raises(ConfigError, match=r"holds a run \(config.yaml, best/\) but no checkpoint to resume"):
        train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2, lr=5e-4, overwrite=True), data=data)
    assert json.loads((run / "results.json").read_text())["config"]["lr"] == 5e-4


def test_finished_run_again_is_a_no_op(tmp_path, tiny, capsys):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2)
    run = train(config, data=data)
    before = (run / "results.json").read_bytes()
    capsys.readouterr()
    train(config, data=data)
    assert "finished run (results.json); nothing to do" in capsys.readouterr().out
    assert (run / "results.json").read_bytes() == before
    more = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2)
    with pytest.raises(ConfigError, match=r"finished run with a different config \(max_steps: 2 -> 4\)"):
        train(more, data=data)


def test_more_steps_on_resume_are_refused_before_anything_changes(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=2)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[StopAt(3)])
    run = tmp_path / "run"
    stored = (run / "config.yaml").read_text()
    with pytest.raises(ConfigError, match=r"planned for 4 optimizer steps .* this config plans 8"):
        train(tiny_config(tmp_path, model_dir, max_steps=8, save_steps=2), data=data)
    assert (run / "config.yaml").read_text() == stored and not (run / "results.json").exists()
    train(config, data=data)  # the original command still resumes
    assert json.loads((run / "results.json").read_text())["global_step"] == 4


def test_failed_fresh_run_leaves_no_folder(tmp_path, tiny):
    model_dir, data = tiny
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=4, eval_task="")
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[StopAt(1)])
    assert not (tmp_path / "run").exists()
    # a bad option fails before anything is written
    with pytest.raises(ConfigError, match=r"objective_options"):
        train(tiny_config(tmp_path, model_dir, objective_options="temperature=x"), data=data)
    assert not (tmp_path / "run").exists()


def test_too_few_rows_for_a_contrastive_objective_are_refused(tmp_path, tiny):
    model_dir, data = tiny
    with pytest.raises(
        ConfigError, match=r"^data: 1 training row\(s\); objective 'simcse-unsup' .* at least 2$"
    ):
        train(tiny_config(tmp_path, model_dir), data=data.select([0]))
    with pytest.raises(ConfigError, match=r"^batch_size: objective 'simcse-unsup' .* got 1 x 1 process"):
        train(tiny_config(tmp_path, model_dir, batch_size=1), data=data)
    assert not (tmp_path / "run").exists()


def test_last_batch_of_one_row_is_dropped(tmp_path, tiny, data_root):
    import datasets

    model_dir, _ = tiny
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 17)})  # 8 + 8 + 1
    run = train(tiny_config(tmp_path, model_dir, max_steps=-1, epochs=1, save_steps=10), data=data)
    results = json.loads((run / "results.json").read_text())
    assert results["global_step"] == 2  # not 3: the one-row batch has nothing to contrast (loss 0)
