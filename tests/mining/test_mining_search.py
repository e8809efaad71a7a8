"""Sharded k-NN: per-block top-k merged equals one global search; flat vs IVF-PQ chosen by size."""

from __future__ import annotations

import numpy as np
import pytest

import sentkit.mining.vectors as vectors_module
from sentkit.mining.search import IndexConfig, ivfpq_params, merge_topk, search
from sentkit.mining.vectors import ArrayVectors
from sentkit.tasks.knn_search import cosine_knn


def _vectors(array):
    return ArrayVectors(array, [f"r{i}" for i in range(len(array))], [""] * len(array))


def test_merge_topk_by_hand():
    best_s = np.array([[0.9, 0.5], [0.4, -np.inf]], dtype=np.float32)
    best_i = np.array([[3, 1], [0, -1]])
    merge_topk(
        best_s, best_i, np.array([[0.7, 0.2], [0.8, 0.4]], dtype=np.float32), np.array([[10, 11], [12, 13]])
    )
    np.testing.assert_array_equal(best_i, [[3, 10], [12, 0]])  # the tie at 0.4 keeps the earlier block's row
    np.testing.assert_array_equal(best_s, np.array([[0.9, 0.7], [0.8, 0.4]], dtype=np.float32))


@pytest.mark.parametrize("block_rows", [7, 64, 1000])
def test_sharded_flat_search_equals_one_global_search(monkeypatch, block_rows):
    monkeypatch.setattr(vectors_module, "ARRAY_BLOCK_ROWS", block_rows)  # keys and queries in uneven blocks
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(150, 16)).astype(np.float32), rng.normal(size=(230, 16)).astype(np.float32) * 3
    sims, idx, info = search(_vectors(x), _vectors(y), 5, IndexConfig(kind="flat"))
    ref_sims, ref_idx = cosine_knn(x, y, 5)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(sims, ref_sims, atol=1e-6)
    assert info["index"] == "flat" and info["keys"] == 230


def test_k_larger_than_a_block_or_the_keys():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 8)), rng.normal(size=(3, 8))
    sims, idx, _ = search(_vectors(x), _vectors(y), 10)
    assert idx.shape == (4, 3) and (idx >= 0).all()  # k is cut to the 3 keys there are
    np.testing.assert_array_equal(idx, cosine_knn(x, y, 3)[1])


def test_index_kind_switches_by_size_and_ivfpq_finds_most_neighbours():
    rng = np.random.default_rng(2)
    scale = 1 / np.sqrt(np.arange(1, 33))  # a decaying spectrum, like sentence embeddings
    y = (rng.normal(size=(3000, 32)) * scale).astype(np.float32)
    x = (y[:400] + 0.3 * rng.normal(size=(400, 32)) * scale).astype(np.float32)
    config = IndexConfig(flat_max=2999, nlist=16, nprobe=8)
    sims, idx, info = search(_vectors(x), _vectors(y), 4, config)
    assert info["index"] == "ivfpq" and info["factory"] == "IVF16,PQ4" and info["train_size"] == 3000
    assert search(_vectors(x), _vectors(y[:2999]), 4, config)[2]["index"] == "flat"
    ref_sims, ref_idx = cosine_knn(x, y, 4)
    # each noisy copy finds its original first; the other 3 exact neighbours are near-tied unrelated rows,
    # of which an approximate index finds some
    assert (idx[:, 0] == np.arange(400)).mean() > 0.95
    assert np.mean([len(set(a) & set(b)) / 4 for a, b in zip(idx, ref_idx)]) > 0.5
    # re-scored exactly: a neighbour the IVF-PQ found carries its exact cosine
    same = idx == ref_idx
    np.testing.assert_allclose(sims[same], ref_sims[same], atol=1e-5)


def test_ivfpq_parameters_follow_the_key_count():
    params = ivfpq_params(1_000_000, 384, IndexConfig())
    assert params == {"nlist": 4096, "pq_m": 48, "nbits": 8, "nprobe": 32, "train_size": 204_800}
    assert ivfpq_params(2000, 768, IndexConfig())["nlist"] == 51  # at most one list per 39 training keys
    with pytest.raises(ValueError, match="needs at least 1000 keys"):
        ivfpq_params(999, 64, IndexConfig())
