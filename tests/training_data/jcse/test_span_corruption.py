"""T5 span corruption (15% noise, mean span 3) checked by counting, and its exact inverse."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.training_data.jcse.span_corruption import corrupt_spans, random_spans_mask


@pytest.mark.parametrize("length", [20, 40, 100, 512])
def test_noise_count_and_span_count(length):
    rng = np.random.default_rng(length)
    for _ in range(20):
        mask = random_spans_mask(length, rng)
        assert mask.sum() == round(0.15 * length)
        starts = np.flatnonzero(mask & ~np.r_[False, mask[:-1]])
        assert len(starts) == max(round(round(0.15 * length) / 3), 1)


def test_mean_span_length_is_three():
    rng = np.random.default_rng(0)
    lengths = []
    for _ in range(300):
        mask = random_spans_mask(200, rng)
        edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(int), 0]))
        lengths += list(edges[1::2] - edges[::2])
    assert abs(np.mean(lengths) - 3.0) < 0.05


def test_corruption_is_invertible():
    ids = list(range(10, 50))
    sentinels = [1000 + i for i in range(40)]
    inputs, targets = corrupt_spans(ids, sentinels, eos_id=1, rng=np.random.default_rng(3))
    assert inputs[-1] == targets[-1] == 1
    hidden = {}
    current = None
    for token in targets[:-1]:
        if token in sentinels:
            current = token
            hidden[current] = []
        else:
            hidden[current].append(token)
    rebuilt = [t for token in inputs[:-1] for t in (hidden[token] if token in sentinels else [token])]
    assert rebuilt == ids
    assert sum(len(v) for v in hidden.values()) == 6  # 15% of 40


def test_short_inputs():
    rng = np.random.default_rng(0)
    assert not random_spans_mask(1, rng).any()
    assert random_spans_mask(2, rng).sum() == 1
