"""The AMR encoder's start and training, fast: the start model encodes text exactly as its base (own pooling,
no head), and the contrastive training learns a planted signal that the start cannot see."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from conftest import make_tiny_encoder

# The planted signal: each word of A has one synonym in B. An anchor is a graph over A words, its positive
# the same graph over their synonyms, its negative the graph over other words' synonyms: anchor and positive
# share no concept token, so only training can bring them together.
A = "dog tree house river music bread chair window garden letter horse cloud stone paper road apple".split()
B = "cat flower car mountain song cheese table door forest book bird rain metal glass street orange".split()
SYNONYM = dict(zip(A, B))


def _graph_of(sentence: str) -> str:
    first, second, third = sentence.split()
    return f"( {first}-01 :ARG0 ( {second} ) :ARG1 ( {third} ) )"


def toy_linearize(sentences, lang):
    return [_graph_of(s) for s in sentences]


def planted_examples(n: int, seed: int) -> list[dict[str, tuple[str, str, str]]]:
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        words = rng.sample(A, 6)
        anchor, other = words[:3], words[3:]
        examples.append(
            {
                "en": (
                    " ".join(anchor),
                    " ".join(SYNONYM[w] for w in anchor),
                    " ".join(SYNONYM[w] for w in other),
                )
            }
        )
    return examples


def margin_and_accuracy(transformer, examples) -> tuple[float, float]:
    """Mean cos(anchor, positive) - cos(anchor, negative) over graph triplets, and the share above 0."""
    slots = [[_graph_of(e["en"][k]) for e in examples] for k in range(3)]
    a, p, n = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in map(transformer.encode, slots))
    margins = (a * p).sum(1) - (a * n).sum(1)  # (n_examples,)
    return float(margins.mean()), float((margins > 0).mean())


def _save_base(path, pooling: str = "mean"):
    base = make_tiny_encoder(pooling)
    base.model.config.hidden_dropout_prob = 0.0
    base.model.config.attention_probs_dropout_prob = 0.0
    base.save(path)
    return base


def test_start_model_encodes_text_as_its_base_does(tmp_path):
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.amr.training import build_start_model

    base = _save_base(tmp_path / "base")  # a sentence-transformers folder declaring mean pooling
    start = AmrEncoder.from_pretrained(
        build_start_model(str(tmp_path / "base"), [":ARG0", "want-01"], tmp_path / "s")
    )
    assert start.transformer.pooling == "mean" and start.transformer.mlp is None
    text = ["a boy wants to go home", "the river is cold"]  # no added token: the same word pieces
    np.testing.assert_allclose(start.transformer.encode(text), base.encode(text), atol=1e-5)
    forced = build_start_model(str(tmp_path / "base"), [":ARG0"], tmp_path / "c", pooling="cls")
    assert AmrEncoder.from_pretrained(forced).transformer.pooling == "cls"
    with pytest.raises(ValueError, match="pooling must be auto or one of"):
        build_start_model(str(tmp_path / "base"), [], tmp_path / "x", pooling="cls_mlp")


def test_training_pooling_adds_no_head_unless_asked(tmp_path):
    from sentkit.amr.training import AmrTrainConfig, training_pooling
    from sentkit.training.run import trainable_encoder

    _save_base(tmp_path / "mean")
    _save_base(tmp_path / "cls", pooling="cls")
    for folder, pooling in (("mean", "mean"), ("cls", "cls")):
        trained = trainable_encoder(str(tmp_path / folder), training_pooling(pooling))
        assert trained.pooling == pooling and trained.mlp is None  # trained on the vectors it encodes
    assert trainable_encoder(str(tmp_path / "cls"), training_pooling("cls", mlp_head=True)).mlp is not None
    with pytest.raises(ValueError, match="set pooling='cls'"):
        training_pooling("mean", mlp_head=True)
    default = AmrTrainConfig()
    assert (default.pooling, default.mlp_head, default.text_langs) == ("auto", False, ("en",))


def test_amr_training_learns_a_planted_signal(tmp_path):
    """Fails if the graph encoder's contrastive training stops learning: the loss falls well below its start
    and held-out graph triplets (unseen word combinations) separate far better than at the start."""
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.amr.training import AmrTrainConfig, train_amr_encoder

    _save_base(tmp_path / "base")
    train, held_out = planted_examples(256, seed=0), planted_examples(64, seed=1)
    seen = {e["en"][0] for e in train}
    held_out = [e for e in held_out if e["en"][0] not in seen]
    config = AmrTrainConfig(base=str(tmp_path / "base"), max_steps=20, batch_size=16, lr=5e-3, min_count=3)
    best = train_amr_encoder(config, tmp_path / "amr", examples=train, linearize=toy_linearize)

    summary = json.loads((tmp_path / "amr" / "amr_training.json").read_text(encoding="utf-8"))
    assert summary["start_pooling"] == "mean" and summary["rows"] == 256
    state = json.loads(next((tmp_path / "amr" / "run").glob("checkpoint-*/trainer_state.json")).read_text())
    losses = [log["loss"] for log in state["log_history"] if "loss" in log]
    assert losses[-1] < 0.7 * losses[0]  # from about chance (ln 32 = 3.47) to about half of it
    start = AmrEncoder.from_pretrained(tmp_path / "amr" / "start").transformer
    trained = AmrEncoder.from_pretrained(best).transformer
    assert trained.pooling == "mean"
    start_margin, start_accuracy = margin_and_accuracy(start, held_out)
    margin, accuracy = margin_and_accuracy(trained, held_out)
    assert abs(start_margin) < 0.01 and start_accuracy < 0.5  # the start cannot tell synonyms apart
    assert margin > start_margin + 0.04 and accuracy > 0.85
