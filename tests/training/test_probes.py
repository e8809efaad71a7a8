"""The probe rule: a checkpoint is kept, offered or resumed only while its model still works on a few fixed
sentences. A collapsed model (a huge lr that leaves the weights only twice their start) is judged ruined and
never kept or resumed from; a normally trained one is sane."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_divergence import RaiseLr
from transformers import TrainerCallback

from sentkit.cli import main
from sentkit.datasets.columns import ANCHOR
from sentkit.errors import TrainingDiverged
from sentkit.training import latest_checkpoint, train
from sentkit.training.probes import COLLAPSE, RANK_FLOOR, ProbeRecord, probe_sentences
from sentkit.training.sane_state import read_start_scales
from test_trainer import save_tiny_model, stsb_sentences, tiny_config


@pytest.fixture
def tiny(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    return model_dir, datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 32)})


def mean_config(tmp_path, model_dir, **kw):
    # mean pooling: a randomly initialised [CLS] sends every sentence the same way (no structure to lose)
    return tiny_config(tmp_path, model_dir, pooling="mean", **kw)


def _load(path):
    from sentkit.encoders import load_encoder

    return load_encoder(str(path))


def test_a_collapsed_checkpoint_is_never_kept_and_the_last_sane_one_resumes(tmp_path, tiny):
    model_dir, data = tiny
    config = mean_config(tmp_path, model_dir, max_steps=4, save_steps=1, lr=1e-3)
    run = tmp_path / "run"
    # lr 10 at step 3 collapses the model with its weights well under 100 times their start
    with pytest.raises(TrainingDiverged) as err:
        train(config, data=data, callbacks=[RaiseLr(3, 10.0)])
    assert str(err.value).startswith(
        "training diverged at step 3: the model collapsed: the probe sentences' embeddings all point the same "
        "way (spread "
    ), str(err.value)
    assert str(err.value).endswith(
        f"{run / 'checkpoint-2'} is kept: run the same command with a lower --lr to resume from it"
    )
    assert latest_checkpoint(run).name == "checkpoint-2" and not (run / "checkpoint-3").exists()
    record = read_start_scales(run / "checkpoint-2").probes
    assert record.texts == tuple(data[ANCHOR]) and len(record.similarities) == 32 * 31 // 2
    # the kept checkpoint still works: sane by the rule; resuming at a lower lr finishes with a sane best/
    assert record.problem(_checkpoint_encoder(run / "checkpoint-2", model_dir)) is None
    resumed = train(dataclasses.replace(config, lr=5e-4), data=data)
    assert json.loads((resumed / "results.json").read_text())["global_step"] == 4
    assert record.problem(_load(resumed / "best")) is None


def _checkpoint_encoder(checkpoint, model_dir):
    """The encoder a checkpoint holds (its `encoder.` weights in the mean-pooled tiny model)."""
    from safetensors.torch import load_file

    from sentkit.training import trainable_encoder

    encoder = trainable_encoder(model_dir, "mean")
    state = load_file(checkpoint / "model.safetensors")
    weights = {
        k.removeprefix("encoder.model."): v for k, v in state.items() if k.startswith("encoder.model.")
    }
    encoder.model.load_state_dict(weights)
    return encoder


def test_a_ruined_checkpoint_of_an_unchecked_run_is_refused_as_a_resume_point(tmp_path, tiny, monkeypatch):
    model_dir, data = tiny
    config = mean_config(tmp_path, model_dir, max_steps=4, save_steps=1, lr=1e-3)
    run = tmp_path / "run"
    # a run without the probe rule (as an older sentkit trained) keeps collapsed checkpoints
    with monkeypatch.context() as patch:
        patch.setattr(ProbeRecord, "problem", lambda self, encoder: None)
        with pytest.raises(KeyboardInterrupt):
            train(config, data=data, callbacks=[RaiseLr(2, 1.0), Interrupt(3)])
    assert latest_checkpoint(run).name == "checkpoint-3"
    for checkpoint in run.glob("checkpoint-*"):  # written without a probe record
        start = checkpoint / "run_start.json"
        start.write_text(
            json.dumps({k: v for k, v in json.loads(start.read_text()).items() if k != "probes"})
        )
    before = sorted(p.relative_to(run).as_posix() for p in run.rglob("*"))

    with pytest.raises(TrainingDiverged) as err:
        train(dataclasses.replace(config, lr=1e-8), data=data)
    assert str(err.value).startswith(
        f"{run / 'checkpoint-3'} holds a ruined model (the model collapsed: the probe sentences' embeddings "
    ), str(err.value)
    assert str(err.value).endswith(
        "resuming from it cannot give a useful model, at any --lr: start again with --overwrite and a lower --lr"
    )
    assert "resume from it" not in str(err.value)
    # nothing of the user's run is deleted, and no best/ or results.json appears
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*")) == before
    assert not (run / "best").exists() and not (run / "results.json").exists()


class Interrupt(TrainerCallback):
    """Stops the run (as Ctrl-C would) once optimizer step `step` has been checkpointed."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt


def test_cli_collapse_at_the_first_step_says_start_again_in_one_line(tmp_path, capsys, data_root):
    model_dir = save_tiny_model(tmp_path / "tiny")
    data = tmp_path / "data.txt"
    data.write_text("\n".join(stsb_sentences(data_root, 32)) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["train", "--model", model_dir, "--data", str(data), "--output-dir", str(out), "--batch-size", "8"]
    argv += ["--max-steps", "3", "--save-steps", "1", "--eval-task", "", "--no-progress", "--pooling", "mean"]
    capsys.readouterr()
    assert main([*argv, "--lr", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "sentkit: error: training diverged at step 1: the model collapsed"
    )
    assert err.rstrip().endswith(
        "no checkpoint had been written, so nothing is kept: start again with a lower --lr"
    )
    assert not out.exists()


class FakeEncoder:
    def __init__(self, vectors) -> None:
        self.vectors = np.asarray(vectors, dtype=np.float32)

    def encode(self, sentences, batch_size=64):
        return self.vectors[: len(sentences)]


def test_probe_rule_thresholds():
    rng = np.random.default_rng(0)
    start = rng.normal(size=(32, 16))
    texts = [f"s{i}" for i in range(32)]
    record = ProbeRecord.measure(FakeEncoder(start), texts)
    assert record.spread == pytest.approx(1.0, abs=0.1) and len(record.similarities) == 496
    assert (COLLAPSE, RANK_FLOOR) == (10.0, 0.2)
    # ordinary training: a nudge of every vector keeps the rule quiet
    assert record.problem(FakeEncoder(start + 0.3 * rng.normal(size=start.shape))) is None
    # every sentence on one direction, up to a little noise: collapsed
    collapsed = np.ones((32, 16)) + 1e-3 * rng.normal(size=(32, 16))
    assert record.problem(FakeEncoder(collapsed)).startswith("the model collapsed")
    # spread kept but the similarities shuffled: the start's structure is gone
    assert record.problem(FakeEncoder(rng.normal(size=(32, 16)))).startswith(
        "the model lost what it knew: the probe sentences' similarities no longer follow the start's (Spearman"
    )
    assert record.problem(FakeEncoder(1000 * start)).startswith("the model's embeddings blew up")
    bad = start.copy()
    bad[3, 2] = np.nan
    assert record.problem(FakeEncoder(bad)) == "the model's embeddings of the probe sentences are not finite"
    # a start without spread has no structure to lose: only blow-ups count
    flat = ProbeRecord.measure(FakeEncoder(collapsed), texts)
    assert flat.problem(FakeEncoder(rng.normal(size=(32, 16)))) is None
    assert ProbeRecord.measure(FakeEncoder(start), texts[:3]) is None  # too few sentences to judge by


def test_probe_sentences_are_the_first_distinct_texts():
    import datasets

    rows = datasets.Dataset.from_dict({ANCHOR: ["a", "a", " ", "b"], "positive": ["c", "d", "b", "e"]})
    assert probe_sentences(rows, limit=4) == ["a", "b", "c", "d"]
