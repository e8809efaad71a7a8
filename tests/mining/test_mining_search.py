"""k-NN for mining: blocked exact search (float32 and verified bfloat16) equals one global search, FAISS
factory strings re-scored exactly, recall measured and warned about, `--index` checked before any work."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import sentkit.mining.exact as exact_module
import sentkit.mining.vectors as vectors_module
from conftest import make_tiny_encoder
from sentkit.cli import main
from sentkit.errors import DataWarning, InvalidArgument
from sentkit.mining.approximate import search_params, train_size
from sentkit.mining.exact import (
    exact_scores,
    exact_search,
    merge_topk,
    product_error,
    resolve_device,
)
from sentkit.mining.index_spec import (
    fastscan_nlist,
    fastscan_nprobe,
    fastscan_pq_m,
    parse_index,
    preset_nlist,
    preset_pq_m,
)
from sentkit.mining.mine import MineConfig, mine
from sentkit.mining.recall import raise_hint
from sentkit.mining.search import (
    FLAT_MAX,
    GPU_FLAT_MAX,
    IndexConfig,
    approximate_knobs,
    flat_limit,
    resolve_kind,
    search,
)
from sentkit.mining.vectors import ArrayVectors


def _dense_knn(x, y, k):
    """The reference: every cosine of a dense float64 matrix, sorted (stable: ties keep the lower key row)."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)
    dense = x @ y.T  # (nx, ny)
    idx = np.argsort(-dense, axis=1, kind="stable")[:, :k]  # (nx, k)
    return np.take_along_axis(dense, idx, axis=1), idx


def _vectors(array):
    return ArrayVectors(array, [f"r{i}" for i in range(len(array))], [""] * len(array))


def _sentence_like(n_keys: int, n_queries: int, dim: int, seed: int = 0):
    """Keys with the shape of sentence vectors (a shared mean, a decaying spectrum, topical clusters) and
    queries that are noisy copies of the first keys (planted translations) or fresh rows of the clusters."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(np.arange(1, dim + 1))
    centres = rng.normal(size=(20, dim)) * scale
    keys = centres[rng.integers(0, 20, n_keys)] + rng.normal(size=(n_keys, dim)) * scale + 2 * scale
    half = n_queries // 2
    translations = keys[:half] + 0.4 * rng.normal(size=(half, dim)) * scale
    others = centres[rng.integers(0, 20, n_queries - half)] + rng.normal(size=(n_queries - half, dim)) * scale
    return np.vstack([translations, others + 2 * scale]).astype(np.float32), keys.astype(np.float32)


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles and key passes far smaller than the data, so every merge path runs."""
    monkeypatch.setattr(exact_module, "QUERY_TILE", 37)
    monkeypatch.setattr(exact_module, "KEY_TILE", 64)  # 4 groups of 16 columns: tile_topk's grouped path
    monkeypatch.setattr(exact_module, "SELECT_GROUPS", 4)
    monkeypatch.setattr(exact_module, "KEY_PASS_BYTES", 100 * 16 * 4)  # 100 keys of 16 dims a pass


def test_merge_topk_by_hand():
    best_s = np.array([[0.9, 0.5], [0.4, -np.inf]], dtype=np.float32)
    best_i = np.array([[3, 1], [0, -1]])
    merge_topk(
        best_s, best_i, np.array([[0.7, 0.2], [0.8, 0.4]], dtype=np.float32), np.array([[10, 11], [12, 13]])
    )
    np.testing.assert_array_equal(best_i, [[3, 10], [12, 0]])  # the tie at 0.4 keeps the earlier block's row
    np.testing.assert_array_equal(best_s, np.array([[0.9, 0.7], [0.8, 0.4]], dtype=np.float32))


@pytest.mark.parametrize("kind", ["flat", "faiss-flat", "Flat"])
@pytest.mark.parametrize("block_rows", [7, 64, 1000])
def test_blocked_exact_search_equals_one_global_search(monkeypatch, small_tiles, kind, block_rows):
    monkeypatch.setattr(vectors_module, "ARRAY_BLOCK_ROWS", block_rows)  # keys and queries in uneven blocks
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(150, 16)).astype(np.float32), rng.normal(size=(230, 16)).astype(np.float32) * 3
    sims, idx, info = search(_vectors(x), _vectors(y), 5, IndexConfig(kind=kind, exact_dtype="float32"))
    ref_sims, ref_idx = _dense_knn(x, y, 5)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(sims, ref_sims, atol=1e-6)
    assert info["keys"] == 230 and info["index"] == ("flat" if kind == "flat" else "faiss-flat")
    if kind == "flat":
        assert info["key_passes"] == 3 and info["dtype"] == "float32" and info["unverified_queries"] == 0


def test_k_larger_than_a_block_or_the_keys():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 8)), rng.normal(size=(3, 8))
    sims, idx, _ = search(_vectors(x), _vectors(y), 10)
    assert idx.shape == (4, 3) and (idx >= 0).all()  # k is cut to the 3 keys there are
    np.testing.assert_array_equal(idx, _dense_knn(x, y, 3)[1])


def test_product_error_bounds_hold():
    """The bounds the verification relies on: bfloat16 and float32 products against float64 sums."""
    import torch

    x, y = _sentence_like(3000, 400, 384, seed=3)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    truth = x.astype(np.float64) @ y.astype(np.float64).T
    for dtype, torch_dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        product = (torch.from_numpy(x).to(torch_dtype) @ torch.from_numpy(y).to(torch_dtype).T).double()
        err = np.abs(product.numpy() - truth).max()
        assert 0 < err < product_error(dtype, 384)
    assert product_error("bfloat16", 384) < 0.007  # loose enough for 12 extra candidates to settle it


def test_bfloat16_candidates_give_the_float32_search_exactly(small_tiles):
    x, y = _sentence_like(400, 160, 16)
    y[7] = y[3]  # a duplicate key: a tie, broken the same way (lower row first) by both paths
    s32, i32, info32 = exact_search(_vectors(x), _vectors(y), 4, "float32")
    s16, i16, info16 = exact_search(_vectors(x), _vectors(y), 4, "bfloat16")
    np.testing.assert_array_equal(i16, i32)
    np.testing.assert_array_equal(s16, s32)  # both scored by exact_scores: bit-identical
    assert info16["dtype"] == "bfloat16" and info16["candidates_per_query"] == 16
    assert info16["unverified_queries"] == info32["unverified_queries"] == 0
    # and the mined pairs: margins from the same k-NN lists, the same pairs and scores
    config = {d: MineConfig(index=IndexConfig(kind="flat", exact_dtype=d)) for d in ("float32", "bfloat16")}
    a, b = (mine(_vectors(x), _vectors(y), config[d]) for d in ("float32", "bfloat16"))
    assert len(a.src) > 100
    np.testing.assert_array_equal(a.src, b.src)
    np.testing.assert_array_equal(a.tgt, b.tgt)
    np.testing.assert_array_equal(a.score, b.score)
    assert (
        a.info["index"]["forward"]["dtype"] == "float32"
        and b.info["index"]["backward"]["dtype"] == "bfloat16"
    )


def test_near_ties_beyond_bfloat16_precision_are_searched_again_in_float32(small_tiles):
    rng = np.random.default_rng(5)
    base = rng.normal(size=16)
    # 200 keys near one direction: their similarities differ by less than bfloat16 products resolve
    y = (base + 0.03 * rng.normal(size=(200, 16))).astype(np.float32)
    x = (base + 0.03 * rng.normal(size=(30, 16))).astype(np.float32)
    s32, i32, _ = exact_search(_vectors(x), _vectors(y), 4, "float32")
    s16, i16, info = exact_search(_vectors(x), _vectors(y), 4, "bfloat16")
    assert info["float32_rechecked_queries"] > 0
    np.testing.assert_array_equal(i16, i32)
    np.testing.assert_array_equal(s16, s32)
    truth = (
        x.astype(np.float64)
        @ y.astype(np.float64).T
        / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1))
    )
    np.testing.assert_array_equal(i32[:, 0], truth.argmax(axis=1))


def test_exact_scores_do_not_depend_on_the_batch():
    rng = np.random.default_rng(2)
    q, c = rng.normal(size=(600, 24)).astype(np.float32), rng.normal(size=(600, 5, 24)).astype(np.float32)
    whole = exact_scores(q, c)
    np.testing.assert_array_equal(whole[100:101], exact_scores(q[100:101], c[100:101]))
    np.testing.assert_allclose(
        whole, np.einsum("rd,rcd->rc", q.astype(np.float64), c.astype(np.float64)), atol=1e-7
    )


@pytest.mark.parametrize(
    "text",
    ["auto", "flat", "faiss-flat", "ivfpq", "ivf-fastscan", "Flat", "IVF4096,Flat", "OPQ64,IVF16384,PQ64", "HNSW32",
     "IVF1024,PQ32", "IVF4096,PQ64", "IVF65536_HNSW32,PQ64", "HNSW32,SQ8", "PCA128,IVF1024,Flat",
     "IVF1024,PQ32x4fs,RFlat", "OPQ32_128,IVF1024,PQ32", "IVF1024,SQ8,Refine(SQfp16)"],
)  # fmt: skip
def test_index_accepts_presets_and_factory_strings(text):
    assert parse_index(text) == text


@pytest.mark.parametrize(
    ("text", "hint"),
    [("IVF4096,PQ", ""), ("IVF4096", ""), ("ivf4096,flat", "case-sensitive"), ("Auto", "lower-case: auto"),
     ("IVF4096,Flat;rm", ""), ("", ""), ("LSH", "")],
)  # fmt: skip
def test_index_refuses_other_strings_in_one_line(text, hint):
    with pytest.raises(InvalidArgument, match="is neither a preset") as err:
        parse_index(text)
    assert "\n" not in str(err.value) and hint in str(err.value)


def test_cli_refuses_a_bad_index_at_parse_time(tmp_path, capsys):
    argv = [
        "mine",
        "--src",
        "nowhere",
        "--tgt",
        "nowhere",
        "--model",
        "nothing",
        "--out",
        str(tmp_path / "p"),
    ]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--index", "IVF4096,PQ"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "argument --index: 'IVF4096,PQ' is neither a preset" in err
    for bad in ("1.5", "-0.1", "nan", "high"):
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--recall-target", bad])
        assert stop.value.code == 2
        err = capsys.readouterr().err.strip()
        assert (
            err.count("\n") == 0
            and f"argument --recall-target: expected a recall from 0 to 1, got {bad!r}" in err
        )


def test_a_factory_string_the_dim_cannot_take_is_refused_before_any_search():
    x, y = _sentence_like(200, 50, 20)
    for kind, expected in (
        ("IVF16,PQ8", "PQ8 needs the vector dim \\(20\\) to be a multiple of 8 \\(try PQ5\\)"),
        ("OPQ6,IVF16,PQ6", "OPQ6 needs its output dim \\(20\\) to be a multiple of 6"),
    ):
        with pytest.raises(InvalidArgument, match=expected):
            mine(_vectors(x), _vectors(y), MineConfig(index=IndexConfig(kind=kind)))
    with pytest.raises(InvalidArgument, match="64 lists need at least 64 rows"):
        search(_vectors(x), _vectors(y[:50]), 4, IndexConfig(kind="IVF64,Flat"))


@pytest.mark.parametrize("kind", ["IVF16,Flat", "HNSW16", "IVF16,PQ8", "IVF16,PQ8x4fs"])
def test_factory_indexes_are_rescored_exactly_and_their_recall_measured(kind):
    x, y = _sentence_like(3000, 600, 32, seed=4)
    config = IndexConfig(kind=kind, nprobe=8, recall_queries=200, seed=3)
    sims, idx, info = search(_vectors(x), _vectors(y), 4, config)
    ref_sims, ref_idx = exact_search(_vectors(x), _vectors(y), 4, "float32")[:2]
    assert info["factory"] == kind and info["index"] == "approximate"
    # every returned neighbour carries its exact similarity (not the index's code distance)
    yn = y / np.linalg.norm(y, axis=1, keepdims=True)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(sims, np.einsum("nd,nkd->nk", xn, yn[idx]), atol=1e-6)
    assert (np.diff(sims, axis=1) <= 0).all()
    recall = info["recall"]
    assert recall["queries"] == 200 and recall["seed"] == 3 and recall["k"] == 4
    picked = np.sort(np.random.default_rng(3).choice(600, size=200, replace=False))
    by_hand = np.mean([len(set(a) & set(b)) / 4 for a, b in zip(idx[picked], ref_idx[picked])])
    assert recall["recall_at_k"] == pytest.approx(by_hand, abs=1e-4)
    assert recall["recall_at_k"] > 0.25  # 4-bit fast-scan codes at refine 4 find the fewest


def test_auto_is_exact_up_to_flat_max_squared_then_the_fastscan_preset():
    config = IndexConfig(flat_max=1000)
    assert resolve_kind(config, 1000, 1000, 384)[0] == "flat"
    assert resolve_kind(config, 500, 2000, 384)[0] == "flat"  # the product of the sides counts
    kind, why = resolve_kind(config, 1001, 1000, 384)
    assert kind == "IVF25,PQ192x4fs" and "exceeds --flat-max 1000 squared" in why  # 64 lists, at most n / 39
    on_cpu = IndexConfig(exact_device="cpu")
    assert resolve_kind(on_cpu, 250_000, 250_000, 384)[0] == "flat"
    assert resolve_kind(on_cpu, 1_000_000, 1_000_000, 384)[0] == "IVF2048,PQ192x4fs"
    assert resolve_kind(IndexConfig(nlist=4096, pq_m=96), 10**6, 10**6, 384)[0] == "IVF4096,PQ96x4fs"
    assert resolve_kind(IndexConfig(kind="ivfpq"), 10**6, 10**6, 384)[0] == "OPQ64,IVF16384,PQ64"
    assert resolve_kind(IndexConfig(kind="ivfpq", nlist=4096, pq_m=48), 10**6, 10**6, 384)[0] == (
        "OPQ48,IVF4096,PQ48"
    )


def test_exact_search_runs_where_asked_and_auto_searches_exactly_further_on_a_gpu(monkeypatch):
    import torch

    with pytest.raises(InvalidArgument, match="must be one of auto, cpu, cuda, got 'gpu'"):
        resolve_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(InvalidArgument, match="--exact-device cuda: torch sees no GPU") as err:
        resolve_device("cuda")
    assert "\n" not in str(err.value)
    x, y = _sentence_like(300, 40, 16)
    with pytest.raises(InvalidArgument, match="no GPU"):  # refused before any search
        mine(_vectors(x), _vectors(y), MineConfig(index=IndexConfig(exact_device="cuda")))
    assert exact_search(_vectors(x), _vectors(y), 4, "float32", "auto")[2]["device"] == "cpu"
    assert flat_limit(IndexConfig()) == FLAT_MAX == 250_000
    assert resolve_kind(IndexConfig(), 10**6, 10**6, 384)[0] == "IVF2048,PQ192x4fs"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what auto sees on a GPU host
    assert flat_limit(IndexConfig()) == GPU_FLAT_MAX == 2_000_000
    assert (
        flat_limit(IndexConfig(flat_max=7)) == 7 and flat_limit(IndexConfig(exact_device="cpu")) == FLAT_MAX
    )
    kind, why = resolve_kind(IndexConfig(), 10**6, 10**6, 384)
    assert kind == "flat" and "within --flat-max 2000000 squared" in why
    assert resolve_kind(IndexConfig(), 3 * 10**6, 3 * 10**6, 384)[0] == "IVF4096,PQ192x4fs"


def test_mine_refuses_a_gpu_it_does_not_have_before_loading_the_model(tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("de.txt", "en.txt"):
        (tmp_path / name).write_text("eins\nzwei\n")
    argv = [
        "mine",
        "--src",
        str(tmp_path / "de.txt"),
        "--tgt",
        str(tmp_path / "en.txt"),
        "--model",
        "no-such-model",
    ]
    assert main([*argv, "--out", str(tmp_path / "p.tsv"), "--exact-device", "cuda"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--exact-device cuda: torch sees no GPU" in err
    assert "no-such-model" not in err and not (tmp_path / "p.tsv").exists()


def test_preset_parameters_follow_the_key_count():
    assert preset_nlist(1_000_000) == 16384  # 16 sqrt(n) = 16,000: the nearest power of two
    assert preset_nlist(300_000) == 7692  # 8192 would leave fewer than 39 training rows per list
    assert preset_nlist(10**10) == 65536
    assert (preset_pq_m(384), preset_pq_m(768), preset_pq_m(300), preset_pq_m(32)) == (64, 64, 60, 16)
    assert train_size(1_000_000, "OPQ64,IVF16384,PQ64") == 819_200  # 50 rows per list
    assert train_size(300_000, "IVF1024,Flat") == 65_536
    assert train_size(10**8, "IVF65536,PQ64") == 2_000_000
    assert train_size(5000, "HNSW32") == 5000 and train_size(10**6, "IVF64,Flat", asked=1234) == 1234


def test_hnsw_search_width_follows_what_the_graph_returns():
    import faiss

    rows = np.random.default_rng(0).standard_normal((2000, 16)).astype(np.float32)
    # an HNSW index returns the candidates itself: its list is at least the candidates fetched
    graph = faiss.index_factory(16, "HNSW32", faiss.METRIC_INNER_PRODUCT)
    graph.add(rows)
    assert search_params(graph, "HNSW32", None, None, fetch=256) == {"ef_search": 256}
    assert faiss.downcast_index(graph).hnsw.efSearch == 256
    # an HNSW coarse quantizer only names the lists to probe: at least nprobe, whatever is fetched
    ivf = faiss.index_factory(16, "IVF32_HNSW32,Flat", faiss.METRIC_INNER_PRODUCT)
    ivf.train(rows)
    quantizer = faiss.downcast_index(faiss.extract_index_ivf(ivf).quantizer)
    assert search_params(ivf, "IVF32_HNSW32,Flat", 8, None, fetch=256) == {"nprobe": 8, "ef_search": 128}
    assert quantizer.hnsw.efSearch == 128 and faiss.extract_index_ivf(ivf).nprobe == 8
    assert search_params(ivf, "IVF32_HNSW32,Flat", 8, 200, fetch=16)["ef_search"] == 200  # --ef-search


@pytest.mark.parametrize(
    ("n", "lists", "nprobe", "train"),
    [
        (1_000_000, 2048, 96, 79_872),  # 2 sqrt(n) = 2,000 -> 2,048 lists, 96 probed; 39 training rows each
        (4_000_000, 4096, 192, 159_744),
        (300_000, 1024, 48, 65_536),  # 1,095 -> 1,024; training at least 65,536 rows
        (20_000, 256, 12, 20_000),  # 283 -> 256 lists (20,000 / 39 = 512 allows them); all rows train
        (3_000, 76, 8, 3_000),  # 110 -> 128, but at most 3,000 / 39 = 76 lists
    ],
)
def test_fastscan_preset_derives_lists_probes_refine_and_training_from_n(n, lists, nprobe, train):
    config = IndexConfig()
    factory = resolve_kind(config, n, n, 384)[0] if n > 250_000 else f"IVF{fastscan_nlist(n)},PQ192x4fs"
    assert factory == f"IVF{lists},PQ192x4fs"
    assert approximate_knobs(config, factory, n) == {"nprobe": nprobe, "refine": 64, "train_rows": train}
    asked = IndexConfig(nprobe=5, refine=3, train_size=1234)
    assert approximate_knobs(asked, factory, n) == {"nprobe": 5, "refine": 3, "train_rows": 1234}


def test_fastscan_sub_quantizers_and_factory_strings_keep_their_defaults():
    assert [fastscan_pq_m(dim) for dim in (384, 768, 300, 32)] == [192, 384, 150, 16]
    assert [fastscan_nprobe(n) for n in (4096, 2048, 1000, 100, 4)] == [192, 96, 46, 8, 4]
    # a factory string or the ivfpq preset: FAISS-string defaults (nprobe 128 in approximate.py, refine 4)
    for config in (IndexConfig(kind="IVF1024,PQ96x4fs"), IndexConfig(kind="ivfpq")):
        knobs = approximate_knobs(config, "IVF1024,PQ96x4fs", 10**6)
        assert knobs == {"nprobe": None, "refine": 4, "train_rows": None}


def test_low_recall_warns_with_what_to_raise():
    rng = np.random.default_rng(6)
    y = rng.normal(size=(4000, 32)).astype(np.float32)  # no structure: the worst case for an inverted file
    x = rng.normal(size=(2000, 32)).astype(np.float32)
    lines = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mined = mine(
            _vectors(x),
            _vectors(y),
            MineConfig(index=IndexConfig(kind="IVF64,Flat", nprobe=1, recall_queries=300)),
            lines.append,
        )
    recall = mined.info["index"]["forward"]["recall"]
    assert recall["recall_at_k"] < 0.5 and recall["queries"] == 300
    # the lists the margins use (completed by the backward search's pairs) and the index's own
    assert recall["recall_at_k"] > recall["index_recall_at_k"]
    assert mined.info["index"]["forward"]["from_other_direction"] > 0
    assert lines[0] == (
        f"recall@4 of IVF64,Flat (forward) against exact search: {recall['recall_at_k']:.3f} on 300 sampled "
        f"queries (the index alone: {recall['index_recall_at_k']:.3f})"
    )
    low = [
        str(w.message) for w in caught if issubclass(w.category, DataWarning) and "recall@" in str(w.message)
    ]
    assert len(low) == 2 and "\n" not in low[0]
    assert low[0].endswith("below 0.9: raise --nprobe (now 1), or use --index flat")
    info = {"factory": "OPQ64,IVF16384,PQ64", "nprobe": 128, "refine": 4}
    assert raise_hint(info) == "raise --nprobe (now 128) or --refine (now 4), or use --index flat"
    assert (
        raise_hint({"factory": "HNSW32", "ef_search": 128})
        == "raise --ef-search (now 128), or use --index flat"
    )


def test_mine_command_records_recall_in_the_sidecar(tmp_path, capsys):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    words = ["dog", "cat", "coffee", "Berlin", "river", "seven", "green", "table", "music", "rain"]
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(words, size=5)) for _ in range(300)]
    src, tgt = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("\n".join(lines) + "\n")
    tgt.write_text("\n".join(lines[::-1]) + "\n")
    out = tmp_path / "pairs.tsv"
    argv = ["mine", "--src", str(src), "--tgt", str(tgt), "--model", str(model), "--out", str(out)]
    assert (
        main([*argv, "--index", "IVF8,Flat", "--nprobe", "2", "--recall-queries", "100", "--seed", "5"]) == 0
    )
    printed = capsys.readouterr().out
    assert "recall@4 of IVF8,Flat (forward) against exact search: " in printed and "(backward)" in printed
    sidecar = json.loads((tmp_path / "pairs.tsv.json").read_text())
    for direction in ("forward", "backward"):
        index = sidecar["index"][direction]
        assert index["factory"] == "IVF8,Flat" and index["nprobe"] == 2
        assert {"k": 4, "queries": 100, "seed": 5} == {
            key: index["recall"][key] for key in ("k", "queries", "seed")
        }
        assert 0 <= index["recall"]["recall_at_k"] <= 1
    assert sidecar["config"]["index"]["recall_queries"] == 100


@pytest.mark.slow
def test_the_ivfpq_preset_builds_stopes_index_and_measures_its_recall():
    x, y = _sentence_like(3000, 400, 32, seed=7)
    sims, idx, info = search(_vectors(x), _vectors(y), 4, IndexConfig(kind="ivfpq", recall_queries=100))
    assert info["factory"] == "OPQ16,IVF76,PQ16"  # 16 sqrt(3000) -> 1024 lists, at most 3000 / 39
    assert info["nprobe"] == 76 and info["train_size"] == 3000 and info["fetched_per_query"] == 16
    assert info["recall"]["queries"] == 100 and info["recall"]["recall_at_k"] > 0.9
    ref_sims, ref_idx = exact_search(_vectors(x), _vectors(y), 4, "float32")[:2]
    np.testing.assert_array_equal(sims[idx == ref_idx], ref_sims[idx == ref_idx])  # re-scored exactly


@pytest.mark.parametrize(("n", "kk"), [(1024, 6), (1024, 64), (1000, 6), (48, 4)])
def test_tile_topk_equals_torch_topk(n, kk):
    import torch

    from sentkit.mining.exact import tile_topk

    gen = torch.Generator().manual_seed(n + kk)
    sims = torch.randn(50, n, generator=gen)
    sims[3, :] = 0.5  # a row of ties: any kk columns, all of value 0.5
    v, i = tile_topk(sims, kk)
    ref_v, _ = torch.topk(sims, kk, dim=1)
    assert torch.equal(v, ref_v)
    assert torch.equal(torch.gather(sims, 1, i), v)  # the rows returned hold those values
    assert (i[3].unique().numel() == kk) and (i >= 0).all() and (i < n).all()


def test_rescored_topk_equals_rescoring_every_candidate():
    from sentkit.mining.approximate import candidate_products, rescored_topk

    rng = np.random.default_rng(5)
    keys = rng.normal(size=(500, 32)).astype(np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    keys[1:40] = keys[0]  # 40 identical rows: ties the float32 ranking cannot order
    q = keys[rng.integers(0, 500, 60)] + 0.3 * rng.normal(size=(60, 32)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[:10] = keys[0]  # these queries' best 40 candidates are tied
    cand = np.stack([rng.permutation(500)[:48] for _ in range(60)])
    cand[:10, :40] = np.arange(40)[::-1]
    cand[20, 30:] = -1  # probed lists ran out
    full = exact_scores(q, keys[np.maximum(cand, 0)])
    full[cand < 0] = -np.inf
    order = np.lexsort((cand, -full), axis=1)[:, :4]
    gathered = []

    def rows_of(c):
        gathered.append(c.size)
        return keys[np.maximum(c, 0)]

    # products from the gathered rows, and from FAISS reading the rows in place: the same neighbours
    for approx in (None, candidate_products(q, keys, cand)):
        gathered.clear()
        sims, rows = rescored_topk(q, cand, 4, rows_of, approx)
        np.testing.assert_array_equal(rows, np.take_along_axis(cand, order, axis=1))
        np.testing.assert_array_equal(sims, np.take_along_axis(full, order, axis=1))
        # tied scores: the lowest key rows among the 40 identical ones (a row may be fetched twice)
        assert (rows[:10, 0] == 0).all() and (rows[:10] < 40).all()
        assert (np.diff(rows[:10], axis=1) >= 0).all()
    # with the products given, the rows gathered are the best k + 4 of each query, then every candidate of
    # the queries with a near-tie beyond them: the 10 tied queries at least, far from all 60
    assert gathered[0] == 60 * 8 and len(gathered) == 2 and 10 * 48 <= gathered[1] < 60 * 48


def test_candidate_products_are_the_float32_products_with_none_at_minus_infinity():
    from sentkit.mining.approximate import candidate_products

    rng = np.random.default_rng(6)
    keys = rng.normal(size=(300, 24)).astype(np.float32)
    q = rng.normal(size=(7, 24)).astype(np.float32)
    cand = rng.integers(0, 300, size=(7, 11))
    cand[2, 5:] = -1
    got = candidate_products(q, keys, cand)
    want = np.einsum("rd,rcd->rc", q.astype(np.float64), keys[np.maximum(cand, 0)].astype(np.float64))
    ok = cand >= 0
    assert np.isneginf(got[~ok]).all() and np.isfinite(got[ok]).all() and (~ok).sum() == 6
    np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-5)


def test_choose_nprobe_doubles_to_the_target_stops_at_a_plateau_or_the_lists():
    from sentkit.mining.nprobe_tuning import choose_nprobe

    curve = {8: 0.60, 16: 0.80, 32: 0.93, 64: 0.96, 128: 0.99}
    probe, ladder = choose_nprobe(8, 128, 0.95, curve.__getitem__)
    assert probe == 64 and [s["nprobe"] for s in ladder] == [8, 16, 32, 64]
    flat = {8: 0.60, 16: 0.70, 32: 0.703, 64: 0.99}  # the codes limit recall: 32 gains 0.003 over 16
    assert choose_nprobe(8, 128, 0.95, flat.__getitem__)[0] == 16
    assert choose_nprobe(8, 20, 0.99, {8: 0.5, 16: 0.7, 20: 0.9}.__getitem__) == (
        20,
        [
            {"nprobe": 8, "recall_at_k": 0.5},
            {"nprobe": 16, "recall_at_k": 0.7},
            {"nprobe": 20, "recall_at_k": 0.9},
        ],
    )
    assert choose_nprobe(200, 64, 0.95, {64: 0.97}.__getitem__)[0] == 64  # never above the list count


def test_without_nprobe_an_ivf_index_probes_enough_lists_for_the_recall_target():
    rng = np.random.default_rng(6)
    y = rng.normal(size=(4000, 32)).astype(np.float32)  # no structure: neighbours spread over every list
    x = rng.normal(size=(1000, 32)).astype(np.float32)
    fixed = search(_vectors(x), _vectors(y), 4, IndexConfig(kind="IVF64,Flat", nprobe=1, recall_queries=300))[
        2
    ]
    assert fixed["recall"]["recall_at_k"] < 0.5 and "nprobe_tuning" not in fixed
    config = IndexConfig(kind="IVF64,Flat", recall_queries=300, recall_target=0.9)
    _, _, tuned = search(_vectors(x), _vectors(y), 4, config)
    tuning = tuned["nprobe_tuning"]
    assert tuning["target"] == 0.9 and tuning["queries"] == 500
    steps = [s["nprobe"] for s in tuning["ladder"]]
    assert steps[0] == 64 and tuned["nprobe"] == tuning["chosen"] == 64  # 128 asked, capped at the 64 lists
    # the fast-scan preset starts at 3/64 of the lists (at least 8) and doubles while the sampled recall is short
    config = IndexConfig(kind="ivf-fastscan", recall_queries=300, recall_target=0.95)
    _, _, tuned = search(_vectors(x), _vectors(y), 4, config)
    ladder = tuned["nprobe_tuning"]["ladder"]
    steps = [s["nprobe"] for s in ladder]
    assert steps[0] == 8 and all(b == min(2 * a, tuned["nlist"]) for a, b in zip(steps, steps[1:]))
    assert ladder[0]["recall_at_k"] < 0.95 and tuned["nprobe"] == steps[-1] > 8
    assert ladder[-1]["recall_at_k"] >= 0.95 or steps[-1] == tuned["nlist"]
    assert tuned["recall"]["recall_at_k"] > 0.85  # graded on other queries than the ones it was chosen on
