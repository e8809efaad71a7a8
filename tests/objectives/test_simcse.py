"""Unsupervised SimCSE: InfoNCE known answers, the two dropout views, and a loss that falls on real text."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentkit.datasets.columns import ANCHOR
from sentkit.objectives.simcse import UnsupervisedSimCSE, cosine_logits, info_nce


def _numpy_info_nce(a, b, t, offset=0):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    logits = a @ b.T / t
    out = []
    for i in range(len(a)):
        out.append(-logits[i, offset + i] + np.log(np.exp(logits[i]).sum()))
    return float(np.mean(out))


def test_info_nce_by_hand_on_orthogonal_pairs():
    # cos = identity, t = 1: each row is -log(e / (e + 1)) = log(1 + 1/e)
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert info_nce(a, a.clone(), temperature=1.0).item() == pytest.approx(
        math.log(1 + math.exp(-1)), abs=1e-6
    )


def test_info_nce_matches_numpy_on_3x2_vectors():
    a = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 1.0]])
    b = np.array([[2.0, 0.5], [0.0, 1.0], [-0.5, 0.2]])
    expected = _numpy_info_nce(a, b, 0.5)
    got = info_nce(torch.tensor(a), torch.tensor(b), temperature=0.5).item()
    assert got == pytest.approx(expected, abs=1e-6)
    # scaling a vector leaves a cosine loss unchanged
    assert info_nce(torch.tensor(a) * 7, torch.tensor(b), 0.5).item() == pytest.approx(expected, abs=1e-6)


def test_info_nce_offset_points_at_this_process_rows():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, generator=g)
    b = torch.randn(7, 4, generator=g)
    expected = _numpy_info_nce(a.numpy(), b.numpy(), 0.05, offset=2)
    assert info_nce(a, b, 0.05, offset=2).item() == pytest.approx(expected, rel=1e-5)


def test_cosine_logits_are_float32_under_bf16():
    a = torch.randn(2, 8).bfloat16()
    assert cosine_logits(a, a, 0.05).dtype == torch.float32


def _anchor_batch(encoder, sentences):
    tokens = encoder.tokenize(sentences)
    return {ANCHOR: dict(tokens)}


def test_views_differ_only_by_dropout(tiny_encoder):
    sentences = ["A man is playing a guitar.", "A woman slices an onion.", "Two dogs run."]
    objective = UnsupervisedSimCSE(tiny_encoder)
    batch = _anchor_batch(tiny_encoder, sentences)
    objective.eval()  # no dropout: both views identical, so the loss is InfoNCE of z against itself
    with torch.no_grad():
        z = tiny_encoder(batch[ANCHOR])
        assert objective(batch)["contrastive"].item() == pytest.approx(info_nce(z, z, 0.05).item(), abs=1e-5)
    objective.train()
    torch.manual_seed(0)
    with torch.no_grad():
        train_loss = objective(batch)["contrastive"].item()
    assert train_loss != pytest.approx(info_nce(z, z, 0.05).item(), abs=1e-4)


def _heldout_loss(objective, batch, seed=123):
    torch.manual_seed(seed)  # same dropout masks before and after training
    objective.train()
    with torch.no_grad():
        return objective(batch)["contrastive"].item()


def test_loss_falls_and_heldout_contrastive_loss_improves(data_root):
    from conftest import make_tiny_encoder
    from sentkit.datasets.stsb import read_stsb

    torch.manual_seed(0)
    pairs = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-train.csv")
    sentences = list(dict.fromkeys(pairs.sent1))
    train, heldout = sentences[:48], sentences[48:112]
    encoder = make_tiny_encoder("cls_mlp")
    objective = UnsupervisedSimCSE(encoder)
    held = _anchor_batch(encoder, heldout)
    before = _heldout_loss(objective, held)
    optimizer = torch.optim.AdamW(objective.parameters(), lr=1e-3)
    losses = []
    for _epoch in range(3):
        for start in range(0, len(train), 16):
            loss = objective(_anchor_batch(encoder, train[start : start + 16]))["contrastive"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.3, losses
    after = _heldout_loss(objective, held)
    assert after < before - 0.3, (before, after)
