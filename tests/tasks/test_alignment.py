"""Alignment / uniformity (Wang & Isola 2020; EASE eqs. 5-6) against direct formulas and on STS-B dev."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sentkit.tasks import get_task
from sentkit.tasks.alignment import alignment, alignment_uniformity, uniformity


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_against_direct_formula():
    x = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 2.0, 2.0]])
    y = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 5.0], [0.0, 1.0, 1.0]])
    align_direct = np.mean([np.sum((_unit(a) - _unit(b)) ** 2) for a, b in zip(x, y)])
    z = np.vstack([x, y])
    terms = [
        math.exp(-2.0 * np.sum((_unit(z[i]) - _unit(z[j])) ** 2))
        for i in range(len(z))
        for j in range(i + 1, len(z))
    ]
    unif_direct = math.log(np.mean(terms))
    a, u = alignment_uniformity(x, y)
    assert a == pytest.approx(align_direct, rel=1e-12)
    assert u == pytest.approx(unif_direct, rel=1e-12)
    # block size must not change the value
    assert uniformity(z, block=2) == pytest.approx(unif_direct, rel=1e-12)


def test_known_values():
    # identical directions align perfectly; antipodal unit vectors are 2 apart: log exp(-2 * 4) = -8
    assert alignment(np.array([[1.0, 2.0]]), np.array([[2.0, 4.0]])) == pytest.approx(0.0)
    assert uniformity(np.array([[1.0, 0.0], [-3.0, 0.0]])) == pytest.approx(-8.0)
    # four orthonormal vectors: every pair is sqrt(2) apart, so log exp(-2 * 2) = -4
    assert uniformity(np.eye(4)) == pytest.approx(-4.0)
    # a collapsed embedding is perfectly "aligned" and has the worst uniformity, 0
    assert uniformity(np.ones((5, 3))) == pytest.approx(0.0, abs=1e-12)


def test_needs_two_vectors():
    with pytest.raises(ValueError):
        uniformity(np.ones((1, 3)))


class ConstantEncoder:
    name = "constant"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.ones((len(sentences), 8), dtype=np.float32)


class RandomEncoder:
    name = "random"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.random.default_rng(0).standard_normal((len(sentences), 64)).astype(np.float32)


def test_task_on_stsb_dev(data_root):
    task = get_task("alignment-uniformity")
    collapsed = task.evaluate(ConstantEncoder())
    assert collapsed["alignment"] == pytest.approx(0.0, abs=1e-9)
    assert collapsed["uniformity"] == pytest.approx(0.0, abs=1e-9)
    assert collapsed["main_score"] == pytest.approx(0.0, abs=1e-9)
    # STS-B dev: pairs with gold > 4 are the positives (counted independently of the reader)
    lines = (data_root / "sts" / "STSBenchmark" / "sts-dev.csv").read_text(encoding="utf-8").splitlines()
    assert task.meta["positive_pairs"] == sum(float(line.split("\t")[4]) > 4 for line in lines) > 200
    spread = task.evaluate(RandomEncoder())
    # random 64-d directions: squared distances near 2, so alignment ~2 and uniformity slightly above -4
    assert spread["alignment"] == pytest.approx(2.0, abs=0.1)
    assert -4.0 < spread["uniformity"] < -3.5
    assert spread["main_score"] == pytest.approx(-(spread["alignment"] + spread["uniformity"]))
