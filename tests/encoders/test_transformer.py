"""TransformerEncoder: pooling against a direct computation, padding, ordering and save/reload parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import sentkit.encoders.protocol as protocol_module
from conftest import make_tiny_encoder, minilm_dir
from sentkit.encoders.transformer import TransformerEncoder

# character order and word-piece order disagree here ("antidisestablishmentarianism" is short in
# characters but many pieces), so a length-sorting bug shows up as a wrong row
SENTENCES = [
    "A man is playing a guitar.",
    "antidisestablishmentarianism xylophonists",
    "Hi.",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "",
    "Two dogs run.",
    "Électricité, naïveté & coöperation!",
]


def direct_vectors(enc: TransformerEncoder, sentences: list[str], pooling: str) -> np.ndarray:
    """Each sentence alone (no padding at all), pooled by hand; eval mode, so no dropout."""
    enc.eval()
    rows = []
    with torch.no_grad():
        for s in sentences:
            batch = enc.tokenizer([s], truncation=True, max_length=enc.max_length, return_tensors="pt")
            hidden = enc.model(**batch).last_hidden_state[0]  # (seq, hidden)
            rows.append(hidden.mean(0) if pooling == "mean" else hidden[0])
    return torch.stack(rows).numpy()


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_pooling_matches_direct_computation(pooling):
    enc = make_tiny_encoder(pooling)
    got = enc.encode(SENTENCES, batch_size=3)
    assert got.dtype == np.float32 and got.shape == (len(SENTENCES), 32)
    np.testing.assert_allclose(got, direct_vectors(enc, SENTENCES, pooling), atol=1e-5)


def test_mean_pooling_ignores_padding_in_forward():
    enc = make_tiny_encoder("mean").eval()
    batch = enc.tokenize(["Hi.", "A much longer sentence with many more word pieces in it."])
    assert batch["attention_mask"][0].sum() < batch["attention_mask"].shape[1]  # row 0 is padded
    with torch.no_grad():
        pooled = enc(batch)
    np.testing.assert_allclose(
        pooled.numpy(),
        direct_vectors(enc, ["Hi.", "A much longer sentence with many more word pieces in it."], "mean"),
        atol=1e-5,
    )


def test_cls_mlp_head_is_used_in_training_mode_only():
    enc = make_tiny_encoder("cls_mlp")
    for module in enc.modules():  # no dropout, so train and eval differ only by the head
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    batch = enc.tokenize(SENTENCES[:3])
    enc.train()
    with torch.no_grad():
        cls = enc.model(**batch).last_hidden_state[:, 0]  # (batch, hidden)
        trained = enc(batch)
        np.testing.assert_allclose(trained.numpy(), enc.mlp(cls).numpy(), atol=1e-6)
        assert not torch.allclose(trained, cls, atol=1e-3)
    encoded = enc.encode(SENTENCES[:3])
    np.testing.assert_allclose(encoded, cls.numpy(), atol=1e-5)
    assert enc.training  # encode restores the mode it found


def test_batch_order_invariance():
    enc = make_tiny_encoder("mean")
    base = enc.encode(SENTENCES, batch_size=2)
    perm = np.random.default_rng(0).permutation(len(SENTENCES))
    permuted = enc.encode([SENTENCES[i] for i in perm], batch_size=3)
    np.testing.assert_allclose(permuted, base[perm], atol=1e-5)
    one_by_one = enc.encode(SENTENCES, batch_size=1)
    np.testing.assert_allclose(one_by_one, base, atol=1e-5)


def test_sort_window_boundaries(monkeypatch):
    enc = make_tiny_encoder("mean")
    whole = enc.encode(SENTENCES, batch_size=2)
    monkeypatch.setattr(protocol_module, "SORT_WINDOW", 4)  # windows of 4 sentences: 4 + 3
    np.testing.assert_allclose(enc.encode(SENTENCES, batch_size=2), whole, atol=1e-6)


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_matches_tokenizer_padding(side):
    enc = make_tiny_encoder("cls")
    enc.tokenizer.padding_side = side
    features = enc.tokenizer(SENTENCES, truncation=True, max_length=enc.max_length)
    idx = np.array([3, 0, 2])
    length = max(len(features["input_ids"][i]) for i in idx)
    ours = enc._pad(features, idx, length)
    theirs = enc.tokenizer([SENTENCES[i] for i in idx], padding=True, return_tensors="pt")
    assert set(ours) == set(theirs) - {"special_tokens_mask"}
    for key, value in ours.items():
        assert torch.equal(value, theirs[key]), key


def test_empty_input_gives_empty_matrix():
    assert make_tiny_encoder("mean").encode([]).shape == (0, 32)


@pytest.mark.parametrize("pooling", ["cls", "mean", "cls_mlp"])
def test_save_reload_matches_sentence_transformers(pooling, tmp_path):
    from sentence_transformers import SentenceTransformer

    enc = make_tiny_encoder(pooling)
    expected = enc.encode(SENTENCES)
    path = enc.save(tmp_path / "model")
    reloaded = TransformerEncoder.from_pretrained(path)
    assert reloaded.pooling == ("mean" if pooling == "mean" else "cls")
    assert reloaded.max_length == enc.max_length
    np.testing.assert_allclose(reloaded.encode(SENTENCES), expected, atol=1e-5)
    st = SentenceTransformer(str(path), device="cpu")
    np.testing.assert_allclose(st.encode(SENTENCES, convert_to_numpy=True), expected, atol=1e-5)


def test_packaged_minilm_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    from sentkit.encoders import load_encoder

    torch.set_num_threads(min(2, torch.get_num_threads()))
    enc = load_encoder("minilm-en")
    assert isinstance(enc, TransformerEncoder)
    assert (enc.name, enc.dim, enc.pooling, enc.max_length) == ("minilm-en", 384, "mean", 256)
    st = SentenceTransformer(str(minilm_dir()), device="cpu")
    ours = enc.encode(SENTENCES, batch_size=4)
    np.testing.assert_allclose(ours, st.encode(SENTENCES, batch_size=4), atol=1e-5)
    # a paraphrase is closer than an unrelated sentence: the weights really are the trained ones
    a, b, c = enc.encode(["A man is playing a guitar.", "Someone plays the guitar.", "Stocks fell sharply."])
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    assert cos(a, b) > 0.6 > cos(a, c)
