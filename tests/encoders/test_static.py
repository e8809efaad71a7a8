"""StaticAverageEncoder: the "avg." baseline equals a hand computation over non-special word pieces."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_tiny_encoder
from sentkit.encoders import load_encoder
from sentkit.encoders.static import StaticAverageEncoder


def hand_encoder(max_length: int = 128) -> StaticAverageEncoder:
    tok = make_tiny_encoder("cls").tokenizer
    emb = np.zeros((tok.vocab_size, 2), dtype=np.float32)
    emb[tok.convert_tokens_to_ids("hello")] = [1.0, 2.0]
    emb[tok.convert_tokens_to_ids("world")] = [3.0, 6.0]
    emb[tok.cls_token_id] = [100.0, 100.0]  # specials must not enter the average
    emb[tok.sep_token_id] = [-100.0, 100.0]
    return StaticAverageEncoder(emb, tok, max_length=max_length, name="avg:hand")


def test_average_equals_hand_computation():
    enc = hand_encoder()
    got = enc.encode(["hello world", "hello hello world", "world", ""], batch_size=3)
    expected = [[2.0, 4.0], [5 / 3, 10 / 3], [3.0, 6.0], [0.0, 0.0]]  # repeats count; empty -> zeros
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got.dtype == np.float32


def test_truncation_follows_max_length():
    # max_length 4 = [CLS] + 2 pieces + [SEP]: only "hello hello" of "hello hello world world" stays
    np.testing.assert_allclose(hand_encoder(max_length=4).encode(["hello hello world world"]), [[1.0, 2.0]])


def test_from_encoder_uses_the_input_embedding_matrix():
    base = make_tiny_encoder("mean")
    enc = StaticAverageEncoder.from_encoder(base)
    assert enc.name == "avg:tiny-bert" and enc.dim == 32
    sentence = "The cat sat on the mat."
    pieces = base.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    weight = base.model.embeddings.word_embeddings.weight.detach().numpy()
    np.testing.assert_allclose(enc.encode([sentence])[0], weight[pieces].mean(0), atol=1e-6)


def test_from_encoder_rejects_an_encoder_without_embeddings():
    class Frozen:
        name = "frozen"

    with pytest.raises(TypeError, match="avg: needs a transformer encoder"):
        StaticAverageEncoder.from_encoder(Frozen())


def test_load_encoder_avg_prefix(tmp_path):
    path = make_tiny_encoder("cls").save(tmp_path / "tiny")
    enc = load_encoder(f"avg:{path}")
    assert isinstance(enc, StaticAverageEncoder) and enc.name == "avg:tiny"
    assert enc.encode(["hello world"]).shape == (1, 32)
