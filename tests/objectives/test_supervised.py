"""Supervised contrastive loss with weighted hard negatives (SimCSE eq. 5 / JCSE eqs. 4-5) vs direct formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentkit.datasets.columns import ANCHOR, NEGATIVE, POSITIVE
from sentkit.objectives.simcse import info_nce
from sentkit.objectives.supervised import SupervisedSimCSE, weighted_hard_negative_loss


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _numpy_jcse(a, p, n, t, alpha, offset=0):
    """JCSE eq. 5 written out: -log e^{s_ii+} / sum_j (e^{s_ij+} + alpha^[i=j] e^{s_ij-})."""
    a, p, n = _unit(a), _unit(p), _unit(n)
    total = 0.0
    for i in range(len(a)):
        own = offset + i
        num = math.exp(a[i] @ p[own] / t)
        den = sum(math.exp(a[i] @ p[j] / t) for j in range(len(p)))
        den += sum((alpha if j == own else 1.0) * math.exp(a[i] @ n[j] / t) for j in range(len(n)))
        total += -math.log(num / den)
    return total / len(a)


@pytest.fixture
def triplet():
    g = torch.Generator().manual_seed(1)
    return tuple(torch.randn(4, 6, generator=g, dtype=torch.float64) for _ in range(3))


def test_no_negatives_and_weight_one_is_simcse(triplet):
    a, p, _ = triplet
    got = weighted_hard_negative_loss(a, p, None, 0.05, hard_negative_weight=1.0)
    assert got.item() == pytest.approx(info_nce(a, p, 0.05).item(), abs=1e-9)


@pytest.mark.parametrize("alpha", [1.0, 0.25, 3.0])
def test_weighting_term_matches_direct_formula(triplet, alpha):
    a, p, n = triplet
    expected = _numpy_jcse(a.numpy(), p.numpy(), n.numpy(), 0.5, alpha)
    got = weighted_hard_negative_loss(a, p, n, 0.5, hard_negative_weight=alpha)
    assert got.item() == pytest.approx(expected, rel=1e-9)


def test_weight_zero_drops_only_the_own_hard_negative(triplet):
    a, p, n = triplet
    expected = _numpy_jcse(a.numpy(), p.numpy(), n.numpy(), 0.5, 0.0)
    got = weighted_hard_negative_loss(a, p, n, 0.5, hard_negative_weight=0.0)
    assert got.item() == pytest.approx(expected, rel=1e-9)
    assert torch.isfinite(got)
    with pytest.raises(ValueError, match="hard_negative_weight"):
        weighted_hard_negative_loss(a, p, n, 0.5, hard_negative_weight=-1.0)


def test_larger_weight_raises_the_loss(triplet):
    a, p, n = triplet
    losses = [weighted_hard_negative_loss(a, p, n, 0.05, w).item() for w in (0.5, 1.0, 2.0)]
    assert losses[0] < losses[1] < losses[2]


def test_offset_selects_this_process_rows():
    g = torch.Generator().manual_seed(2)
    a = torch.randn(2, 5, generator=g, dtype=torch.float64)
    p = torch.randn(6, 5, generator=g, dtype=torch.float64)
    n = torch.randn(6, 5, generator=g, dtype=torch.float64)
    expected = _numpy_jcse(a.numpy(), p.numpy(), n.numpy(), 0.1, 2.0, offset=4)
    got = weighted_hard_negative_loss(a, p, n, 0.1, 2.0, offset=4)
    assert got.item() == pytest.approx(expected, rel=1e-9)


def test_objective_on_pairs_and_triplets(tiny_encoder):
    anchors = ["A man plays a guitar.", "A cat sleeps.", "Kids play football."]
    positives = ["Someone is playing music.", "An animal is resting.", "Children are playing a game."]
    negatives = ["Nobody plays anything.", "The cat is running.", "The park is empty."]
    tokens = tiny_encoder.tokenize(anchors + positives + negatives)
    views = {
        c: {k: v[i * 3 : (i + 1) * 3] for k, v in tokens.items()}
        for i, c in enumerate((ANCHOR, POSITIVE, NEGATIVE))
    }
    objective = SupervisedSimCSE(tiny_encoder).eval()
    with torch.no_grad():
        za, zp, zn = (tiny_encoder(views[c]) for c in (ANCHOR, POSITIVE, NEGATIVE))
        pairs_only = {ANCHOR: views[ANCHOR], POSITIVE: views[POSITIVE]}
        assert objective(pairs_only)["contrastive"].item() == pytest.approx(info_nce(za, zp).item(), abs=1e-5)
        full = objective(views)["contrastive"].item()
        expected = _numpy_jcse(za.double().numpy(), zp.double().numpy(), zn.double().numpy(), 0.05, 1.0)
        assert full == pytest.approx(expected, rel=1e-4)
