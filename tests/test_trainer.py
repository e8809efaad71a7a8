"""The training path: config, data loading, collator, and an end-to-end run on a tiny BERT."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from sentkit.datasets.columns import ANCHOR, NEGATIVE, POSITIVE
from sentkit.errors import DataFormatError
from sentkit.tasks.task import Task
from sentkit.training import SentenceCollator, TrainConfig, latest_checkpoint, train, training_rows

SIMPLE_TYPES = (int, float, str, bool)


# ---- helpers shared with test_resume.py and test_distributed.py ---------------------------------------
def save_tiny_model(path, dropout: bool = True) -> str:
    """A tiny randomly initialised BERT saved as a local model directory (what `--model` points at)."""
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls")
    if not dropout:
        encoder.model.config.hidden_dropout_prob = 0.0
        encoder.model.config.attention_probs_dropout_prob = 0.0
    encoder.save(path)
    return str(path)


def stsb_sentences(data_root, n: int, start: int = 0) -> list[str]:
    from sentkit.datasets.stsb import read_stsb

    pairs = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-train.csv")
    return list(dict.fromkeys(pairs.sent1))[start : start + n]


@dataclass
class SmallSTS(Task):
    """Spearman on the first `pairs` STS-B dev pairs: the real protocol on a subset, fast enough for tests."""

    pairs: int = 150
    name: str = "stsb-dev-small"

    def evaluate(self, encoder) -> dict[str, float]:
        from sentkit.datasets.stsb import read_stsb
        from sentkit.tasks.sts import cosine_spearman

        sts = read_stsb(self.data_root / "sts" / "STSBenchmark" / "sts-dev.csv")
        a = encoder.encode(sts.sent1[: self.pairs], batch_size=64)
        b = encoder.encode(sts.sent2[: self.pairs], batch_size=64)
        return {"main_score": cosine_spearman(a, b, sts.gold[: self.pairs])}


def tiny_config(tmp_path, model_dir, **kw) -> TrainConfig:
    base = dict(
        model=model_dir,
        output_dir=str(tmp_path / "run"),
        batch_size=8,
        lr=1e-3,
        max_steps=6,
        eval_steps=3,
        save_steps=3,
        logging_steps=1,
        progress=False,
        eval_task="",
    )
    base.update(kw)
    return TrainConfig(**base)


# ---- config ------------------------------------------------------------------------------------------
def test_config_defaults_follow_simcse():
    c = TrainConfig()
    assert (c.lr, c.batch_size, c.epochs, c.eval_steps, c.max_length, c.seed) == (3e-5, 64, 1.0, 250, 32, 42)
    assert c.objective == "simcse-unsup" and c.eval_task == "stsb-dev" and c.pooling == "auto"


def test_every_field_is_a_simple_flag_with_help():
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata.get("help"), f.name
        default = getattr(TrainConfig(), f.name)
        assert default is None or isinstance(default, SIMPLE_TYPES), f.name


def test_yaml_round_trip_and_unknown_key(tmp_path):
    c = TrainConfig(lr=1e-4, objective="simcse-sup", temperature=0.1, bf16=True)
    path = tmp_path / "run.yaml"
    import yaml

    path.write_text(yaml.safe_dump(c.to_dict()))
    assert TrainConfig.from_yaml(path) == c
    path.write_text("learning_rate: 0.1\n")
    with pytest.raises(ValueError, match="unknown training option 'learning_rate'"):
        TrainConfig.from_yaml(path)


def test_objective_overrides():
    assert TrainConfig().objective_overrides() == {}
    c = TrainConfig(objective="simcse-sup", hard_negative_weight=2.0, objective_options="temperature=0.1")
    assert c.objective_overrides() == {"hard_negative_weight": 2.0, "temperature": 0.1}
    with pytest.raises(ValueError, match="no 'hard_negative_weight'"):
        TrainConfig(hard_negative_weight=2.0).objective_overrides()
    with pytest.raises(ValueError, match="key=value"):
        TrainConfig(objective_options="margin=3").objective_overrides()


# ---- data --------------------------------------------------------------------------------------------
def test_training_rows_formats(tmp_path):
    txt = tmp_path / "wiki.txt"
    txt.write_text("First sentence.\n\nSecond sentence.\n", encoding="utf-8")
    ds = training_rows(str(txt))
    assert ds.column_names == [ANCHOR] and ds[ANCHOR] == ["First sentence.", "Second sentence."]

    csv_file = tmp_path / "nli_for_simcse.csv"  # SimCSE's header names
    csv_file.write_text('sent0,sent1,hard_neg\n"A, b.",B.,C.\nD.,E.,F.\n', encoding="utf-8")
    ds = training_rows(str(csv_file))
    assert ds.column_names == [ANCHOR, POSITIVE, NEGATIVE] and ds[0] == {
        ANCHOR: "A, b.",
        POSITIVE: "B.",
        NEGATIVE: "C.",
    }

    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("anchor\tpositive\nx\ty\n", encoding="utf-8")
    assert training_rows(str(tsv)).column_names == [ANCHOR, POSITIVE]

    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text('{"anchor": "a", "positive": "b"}\n{"anchor": "c", "positive": "d"}\n', encoding="utf-8")
    assert training_rows(str(jsonl))[POSITIVE] == ["b", "d"]


def test_malformed_training_files_name_file_and_line(tmp_path):
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("anchor,positive\na,b\nc\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.csv:3: expected 2 fields"):
        training_rows(str(bad_csv))
    no_anchor = tmp_path / "noanchor.tsv"
    no_anchor.write_text("premise\thypothesis\na\tb\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"noanchor.tsv:1: expected a header row sent0,sent1"):
        training_rows(str(no_anchor))
    bad_jsonl = tmp_path / "bad.jsonl"
    bad_jsonl.write_text('{"anchor": "a"}\n{"anchor": \n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: expected a JSON object"):
        training_rows(str(bad_jsonl))


def test_collator_pads_columns_to_one_length_and_keeps_extras(tiny_encoder):
    rows = [
        {ANCHOR: "short", POSITIVE: "a much longer sentence than the anchor is", "lang": "en", "label": 1},
        {ANCHOR: "another one", POSITIVE: "tiny", "lang": "de", "label": 0},
    ]
    batch = SentenceCollator(tiny_encoder, max_length=6)(rows)
    assert batch[ANCHOR]["input_ids"].shape == batch[POSITIVE]["input_ids"].shape == (2, 6)
    assert batch["lang"] == ["en", "de"] and batch["label"].tolist() == [1, 0]
    tiny_encoder.prefix = "query: "
    with_prefix = SentenceCollator(tiny_encoder, max_length=32)([{ANCHOR: "x"}])
    decoded = tiny_encoder.tokenizer.decode(with_prefix[ANCHOR]["input_ids"][0], skip_special_tokens=True)
    assert decoded.startswith("query")


# ---- end to end --------------------------------------------------------------------------------------
def test_train_writes_run_dir_and_best_model_reloads_identically(tmp_path, data_root):
    from sentence_transformers import SentenceTransformer

    import datasets
    import sentkit

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 48)})
    config = tiny_config(tmp_path, model_dir)
    task = SmallSTS(data_root=data_root)
    run = train(config, data=data, eval_task=task)

    assert TrainConfig.from_yaml(run / "config.yaml") == config
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 3, 6]
    results = json.loads((run / "results.json").read_text())
    best_row = max(rows, key=lambda r: r["main_score"])
    assert results["best"]["step"] == best_row["step"]
    assert results["best"]["scores"]["main_score"] == pytest.approx(best_row["main_score"])
    assert results["objective"] == {"name": "simcse-unsup", "temperature": 0.05}
    assert results["global_step"] == 6 and "transformers" in results["versions"]
    assert latest_checkpoint(run).name == "checkpoint-6"

    # the saved best model is the one that was scored, and both loaders give the same vectors
    reloaded = sentkit.load_encoder(run / "best")
    assert SmallSTS(data_root=data_root).evaluate(reloaded)["main_score"] == pytest.approx(
        best_row["main_score"], abs=1e-3
    )
    probe = ["A man is playing a flute.", "A bowl of soup."]
    st = SentenceTransformer(str(run / "best"), device="cpu")
    np.testing.assert_allclose(st.encode(probe), reloaded.encode(probe), atol=1e-5)


def test_training_moves_weights_and_loss_terms_are_logged(tmp_path, data_root):
    import datasets
    from sentkit.training import trainable_encoder

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 32)})
    config = tiny_config(tmp_path, model_dir, max_steps=4, save_steps=4, eval_task="")
    run = train(config, data=data)
    state = json.loads((run / "checkpoint-4" / "trainer_state.json").read_text())
    logged = [h for h in state["log_history"] if "loss" in h]
    assert len(logged) == 4 and all("loss_contrastive" in h and h["sentences_per_s"] > 0 for h in logged)
    assert logged[0]["loss_contrastive"] == pytest.approx(logged[0]["loss"], rel=1e-4)
    # each term's chance value is logged beside it: ln(8 candidates) for in-batch negatives of batch 8
    assert all(h["chance_contrastive"] == pytest.approx(math.log(8), abs=1e-6) for h in logged)
    # no eval task: the final model is the one saved, and it differs from the start
    start = trainable_encoder(model_dir).model.embeddings.word_embeddings.weight
    final = trainable_encoder(str(run / "best")).model.embeddings.word_embeddings.weight
    assert not torch.equal(start, final)


def test_mismatched_config_refuses_to_resume(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 16)})
    train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2), data=data)
    with pytest.raises(ValueError, match=r"different config \(lr"):
        train(tiny_config(tmp_path, model_dir, max_steps=2, save_steps=2, lr=5e-4), data=data)


def test_objective_data_mismatch_is_explained(tmp_path, data_root):
    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 8)})
    with pytest.raises(ValueError, match=r"simcse-sup.*needs columns \['anchor', 'positive'\]"):
        train(tiny_config(tmp_path, model_dir, objective="simcse-sup"), data=data)


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_run_files_get_the_modes_the_umask_gives(tmp_path, data_root, mask):
    """safetensors writes 0600 files; best/ and checkpoints must look like any other file the user writes."""
    import os
    import stat

    import datasets

    model_dir = save_tiny_model(tmp_path / "tiny")
    data = datasets.Dataset.from_dict({ANCHOR: stsb_sentences(data_root, 16)})
    previous = os.umask(mask)
    try:
        run = train(tiny_config(tmp_path, model_dir, max_steps=1, save_steps=1), data=data)
    finally:
        os.umask(previous)
    files = ["best/model.safetensors", "best/config.json", "checkpoint-1/model.safetensors"]
    files += ["checkpoint-1/optimizer.pt", "checkpoint-1/trainer_state.json", "results.json", "config.yaml"]
    for name in files:
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o666 & ~mask, name
    for name in ("", "best", "best/1_Pooling", "checkpoint-1"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o777 & ~mask, name
