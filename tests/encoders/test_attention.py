"""Attention dispatch: eager for short CPU batches of SDPA models, same vectors, the model's choice restored."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from conftest import make_tiny_encoder
from sentkit.encoders.attention import (
    EAGER_MAX_TOKENS,
    attention_implementation,
    inference_attention,
    short_batch_attention,
)


def _sdpa_encoder():
    enc = make_tiny_encoder("mean").eval()
    enc.model.set_attn_implementation("sdpa")
    return enc


def test_inference_attention_rule():
    model = _sdpa_encoder().model
    cpu = torch.device("cpu")
    assert inference_attention(model, EAGER_MAX_TOKENS, cpu) == "eager"
    assert inference_attention(model, EAGER_MAX_TOKENS + 1, cpu) is None  # SDPA's block kernel wins there
    assert inference_attention(model, 8, torch.device("cuda")) is None  # a GPU keeps its fused kernel
    model.set_attn_implementation("eager")
    assert inference_attention(model, 8, cpu) is None  # nothing to switch
    model.set_attn_implementation("sdpa")

    class Fixed(type(model)):  # a model class written before transformers' attention interface
        @classmethod
        def _can_set_attn_implementation(cls) -> bool:
            return False

    model.__class__ = Fixed
    assert inference_attention(model, 8, cpu) is None
    assert inference_attention(torch.nn.Linear(2, 2), 8, cpu) is None  # not a transformers model


def test_attention_implementation_switches_and_restores_on_error():
    model = _sdpa_encoder().model
    with attention_implementation(model, "eager"):
        assert model.config._attn_implementation == "eager"
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(RuntimeError), attention_implementation(model, "eager"):
        raise RuntimeError("a failing batch")
    assert model.config._attn_implementation == "sdpa"
    with attention_implementation(model, None):
        assert model.config._attn_implementation == "sdpa"


def test_encode_runs_short_batches_eager_long_ones_sdpa_with_the_same_vectors(monkeypatch):
    enc = _sdpa_encoder()
    enc.max_length = 128  # the tiny BERT's position table; the long sentence below fits uncut
    short = ["Hi.", "Two dogs run.", "A man is playing a guitar."]
    long = [" ".join(["word"] * (EAGER_MAX_TOKENS + 5))]  # one batch wider than EAGER_MAX_TOKENS tokens
    seen = []
    forward = enc.forward

    def spy(batch):
        seen.append((batch["input_ids"].shape[1], enc.model.config._attn_implementation))
        return forward(batch)

    monkeypatch.setattr(enc, "forward", spy)
    got = enc.encode(short + long, batch_size=2)  # batches: (long, guitar), then (dogs, Hi.)
    assert [impl for _, impl in seen] == ["sdpa", "eager"]
    assert seen[0][0] > EAGER_MAX_TOKENS >= seen[1][0]
    assert enc.model.config._attn_implementation == "sdpa"
    monkeypatch.setattr(enc, "forward", forward)
    with torch.no_grad():  # the whole input through SDPA in one batch, pooled by forward()
        want = enc(enc.tokenize(short + long)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_switched_batch_holds_other_threads_off_the_model():
    model = _sdpa_encoder().model
    cpu = torch.device("cpu")
    seen: list[str] = []

    def long_batch():
        with short_batch_attention(model, EAGER_MAX_TOKENS + 1, cpu):
            seen.append(model.config._attn_implementation)

    with short_batch_attention(model, 8, cpu):
        assert model.config._attn_implementation == "eager"
        other = threading.Thread(target=long_batch)
        other.start()
        other.join(timeout=0.3)
        assert other.is_alive() and seen == []  # waits: it would otherwise run its SDPA batch on eager
    other.join(timeout=10)
    assert seen == ["sdpa"]
