"""bench/research/mine_real.py's pieces on tiny inputs: halves, the real and realistic sets, the F1 estimator, the
sentence-transformers recipe, and the script end to end (--small)."""

from __future__ import annotations

import math

import bench.mine_real_sets as sets
import numpy as np
import pytest
from bench.bitext_mining import planted_bitext
from bench.research import mine_real


def test_halves_never_split_a_translation_component():
    rng = np.random.default_rng(3)
    n = 5000
    # chains and stars: 0-1-2-...-39 is one component, as are English rows with many partners
    a = np.concatenate([np.arange(39), rng.integers(100, n, 1500)])
    b = np.concatenate([np.arange(1, 40), rng.integers(100, n, 1500)])
    half = sets.halves(n, a, b, seed=0)
    assert np.all(half[a] == half[b])
    assert len(set(half[:40].tolist())) == 1
    labels = sets.components(n, a, b)
    for label in np.unique(labels)[:200]:
        assert len(set(half[labels == label].tolist())) == 1
    first = np.unique(labels, return_index=True)[1]  # one row of each component
    assert 0.45 < half[first].mean() < 0.55  # components go to either half alike
    other_seed = sets.halves(n, a, b, seed=1)
    assert np.all(other_seed[a] == other_seed[b]) and np.mean(other_seed != half) > 0.3


def test_real_set_keeps_one_partner_per_english_row_and_leaves_the_others_out():
    n = 20
    # english row 0 has partners 1, 2, 3 (XNLI-like); 4-5 and 6-7 are Tatoeba-like; 8..19 are unpaired
    other = np.array([1, 2, 3, 4, 6])
    english = np.array([0, 0, 0, 5, 7])
    rows = sets.real_rows(np.ones(n, dtype=bool), other, english, seed=0)
    src, tgt, gold = rows["src"], rows["tgt"], rows["gold"]
    pairs = {(int(src[i]), int(tgt[gold[i]])) for i in np.flatnonzero(gold >= 0)}
    assert (4, 5) in pairs and (6, 7) in pairs and len(pairs) == 3
    (kept,) = [o for o, e in pairs if e == 0]
    left_out = {1, 2, 3} - {kept}
    assert not left_out & (set(src.tolist()) | set(tgt.tolist()))
    assert set(src.tolist()) | set(tgt.tolist()) == set(range(n)) - left_out
    assert not set(src.tolist()) & set(tgt.tolist())
    c = rows["counts"]
    assert c["left_out_texts"] == 2 and c["planted_pairs"] == 3
    assert c["unpaired_to_source"] + c["unpaired_to_target"] == 12
    assert c["source_rows"] == 3 + c["unpaired_to_source"]


def _real_set(seed: int = 0) -> sets.VectorSet:
    tables, other, english = sets.small_cache(seed)
    vectors = tables["small-synthetic"]
    rows = sets.real_rows(np.ones(len(vectors), dtype=bool), other, english, seed)
    return sets.VectorSet(vectors[rows["src"]], vectors[rows["tgt"]], rows["gold"])


@pytest.mark.parametrize("construction", ["mixtures", "copies"])
def test_realistic_set_matches_the_real_cosine_distributions(construction):
    real = _real_set()
    stats = sets.real_statistics(real, 1000, seed=0)
    built = sets.realistic_set(real, 5000, stats, 0.1, 2, 800, 0, construction)
    assert built.info["construction"] == construction
    x, y, gold = built.x, built.y, built.gold
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-5) and np.allclose(
        np.linalg.norm(y, axis=1), 1, atol=1e-5
    )
    src = np.flatnonzero(gold >= 0)
    assert len(src) == 500 and len(set(gold[src].tolist())) == 500
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    planted = np.einsum("nd,nd->n", x[src], y[gold[src]])
    assert np.abs(np.quantile(planted, levels) - np.quantile(stats["pair_cos"], levels)).max() < 0.02
    # nearest-neighbour cosines of rows the calibration did not measure
    fresh = sets.unpaired_sample(gold, 800, np.random.default_rng(99))
    nn, _ = sets.nn_cosines(x, y, fresh)
    assert np.abs(np.quantile(nn, levels) - np.quantile(stats["nn_cos"], levels)).max() < 0.03
    if construction == "mixtures":
        return
    # without calibration the copies' own cosines follow the real ones and the set's come out lower
    raw = sets.realistic_set(real, 5000, stats, 0.1, 0, 800, 0, "copies")
    raw_nn, _ = sets.nn_cosines(raw.x, raw.y, fresh)
    assert np.median(raw_nn) < np.median(stats["nn_cos"]) - 0.01


def test_mixtures_lie_between_a_text_and_two_of_its_neighbours():
    # 360 unit vectors one degree apart on a circle: each row's two nearest are the rows one degree away
    angle = np.deg2rad(np.arange(360.0))
    base = np.stack([np.cos(angle), np.sin(angle)], axis=1).astype(np.float32)
    mixed = sets.mixture_bases(base, 5000, np.random.default_rng(0), neighbours=2)
    assert np.allclose(np.linalg.norm(mixed, axis=1), 1, atol=1e-5)
    # every mixture is within a degree of some base row, and strictly between base rows for most
    degrees = np.rad2deg(np.arctan2(mixed[:, 1], mixed[:, 0])) % 360
    off = np.abs((degrees + 0.5) % 1 - 0.5)  # distance to the nearest whole degree
    assert np.all(np.abs(degrees - np.round(degrees)) % 360 <= 1.0 + 1e-3)
    assert np.mean(off > 0.05) > 0.8  # new points, not copies
    # with one neighbour left (3 rows), the mixture still uses two distinct partners
    tri = base[[0, 120, 240]]
    three = sets.mixture_bases(tri, 200, np.random.default_rng(1), neighbours=8)
    assert np.all(np.abs(three @ tri.T).max(axis=1) < 1.0)
    # exact duplicates: a row may be listed after its twin, or not at all in its own list
    doubled = np.concatenate([tri, tri, base[60:63]])
    mixed = sets.mixture_bases(doubled, 500, np.random.default_rng(2), neighbours=2)
    assert np.allclose(np.linalg.norm(mixed, axis=1), 1, atol=1e-5)
    with pytest.raises(sets.InvalidArgument, match="at least 3"):
        sets.mixture_bases(base[:2], 10, np.random.default_rng(0))


def test_mixtures_make_no_twins_where_copies_do():
    # real-like rows: 700 and 600 points of a smooth 8-dimensional manifold in 64 dims (sentence vectors
    # lie near a low-dimensional surface, so their nearest neighbours are close: median cosine ~0.9),
    # grown to 6,000 rows a side
    rng = np.random.default_rng(5)
    wave = rng.standard_normal((8, 64)).astype(np.float32) * 1.5
    phase = rng.uniform(0, 2 * np.pi, 64).astype(np.float32)

    def manifold(n):
        v = np.cos(rng.random((n, 8)).astype(np.float32) @ wave + phase) + 0.5
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    x, y = manifold(700), manifold(600)
    y[:200] = x[:200] + 0.05 * rng.standard_normal((200, 64)).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    gold = np.full(700, -1)
    gold[:200] = np.arange(200)
    real = sets.VectorSet(x, y, gold)
    stats = sets.real_statistics(real, 300, seed=0)
    assert 0.85 < np.median(stats["nn_cos"]) < 0.95
    built = {
        c: sets.realistic_set(real, 6000, stats, 0.1, 2, 500, 0, construction=c).info
        for c in sets.CONSTRUCTIONS
    }
    assert built["copies"]["twins_real"] == 0 == built["mixtures"]["twins_real"]
    # off the surface the copies lose their neighbours, so the calibration pushes a quarter of them to
    # cosine 0.9999 with their text: each then has a twin among that text's other copies
    assert built["copies"]["twins_built"] > 0.15
    assert built["mixtures"]["twins_built"] < 0.02
    assert built["mixtures"]["calibration"][-1]["max_gap"] < 0.03
    with pytest.raises(sets.InvalidArgument, match="construction must be one of"):
        sets.realistic_set(real, 100, stats, construction="clones")


def test_sampled_f1_of_the_whole_set_is_the_full_f1():
    x, y, gold = planted_bitext(600, 16, paired=0.3, noise=0.8, seed=1)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    from sentkit.mining.exact import UnitRows, exact_search

    xs, xn, _ = exact_search(UnitRows(x), UnitRows(y), 4, "float32")
    ys, yn, _ = exact_search(UnitRows(y), UnitRows(x), 4, "float32")
    full = mine_real.full_f1((xs, xn, ys, yn), gold)
    assert 20 < full["f1"] < 95  # a case where mining makes mistakes and the max matching has conflicts
    everything = np.arange(600)
    lists = mine_real.sampled_f1(
        everything, everything, mine_real.FullLists(xs, xn), mine_real.FullLists(ys, yn), gold
    )
    exact = mine_real.ExactLists(x, y, 4), mine_real.ExactLists(y, x, 4)
    searched = mine_real.sampled_f1(everything, everything, *exact, gold)
    for estimate in (lists, searched):
        assert (estimate["precision"], estimate["recall"], estimate["f1"], estimate["planted"]) == (
            full["precision"],
            full["recall"],
            full["f1"],
            full["planted"],
        )
    # a sample: closed under the planted pairs, and its exact rows are searched once each
    sx, sy = mine_real.f1_sample(gold, 600, 100, seed=0)
    assert set(gold[sx][gold[sx] >= 0].tolist()) <= set(sy.tolist())
    part = mine_real.sampled_f1(sx, sy, *(mine_real.ExactLists(x, y, 4), mine_real.ExactLists(y, x, 4)), gold)
    assert part["planted"] == int((gold[sx] >= 0).sum()) and 0 < part["f1"] <= 100


def test_st_recipe_margins_equal_a_hand_computation():
    """2-d unit vectors at the angles below: each cosine is cos(angle difference), and the 2 nearest
    neighbours, read off by hand, are listed."""

    def unit(degrees):
        return np.array(
            [[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in degrees], dtype=np.float32
        )

    xa, ya = [0, 50, 100, 170], [10, 45, 120, 200]
    x_nn = [[0, 1], [1, 0], [2, 1], [3, 2]]  # by angle difference: x0 (10, 45), x1 (5, 40), ...
    y_nn = [[0, 1], [1, 0], [2, 3], [3, 2]]
    cos = lambda a, b: math.cos(math.radians(a - b))  # noqa: E731
    x_mean = [sum(cos(xa[i], ya[j]) for j in x_nn[i]) / 2 for i in range(4)]
    y_mean = [sum(cos(ya[j], xa[i]) for i in y_nn[j]) / 2 for j in range(4)]
    neighbours, (fwd, bwd), (src, tgt, score) = mine_real.st_recipe(unit(xa), unit(ya), k=2)
    assert neighbours[1].tolist() == x_nn and neighbours[3].tolist() == y_nn
    for i in range(4):
        for c, j in enumerate(x_nn[i]):
            assert fwd[i, c] == pytest.approx(cos(xa[i], ya[j]) / ((x_mean[i] + y_mean[j]) / 2), abs=1e-5)
    for j in range(4):
        for c, i in enumerate(y_nn[j]):
            assert bwd[j, c] == pytest.approx(cos(ya[j], xa[i]) / ((y_mean[j] + x_mean[i]) / 2), abs=1e-5)
    assert sorted(zip(src.tolist(), tgt.tolist())) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert np.all(np.diff(score) <= 0)


def test_index_grid_probes_only_ivf_indexes():
    grid = mine_real.index_grid(["auto", "IVF64,Flat", "HNSW32"], [8, 32])
    assert grid == [("auto", 8), ("auto", 32), ("IVF64,Flat", 8), ("IVF64,Flat", 32), ("HNSW32", None)]


def test_main_reads_a_cache_of_pairs_and_shard_folders(tmp_path):
    from bench.mine_scale import write_side

    tables, other, english = sets.small_cache(0)
    write_side(tmp_path / "tiny@model", tables["small-synthetic"], "text", 1000)
    lines = [f"{o}\t{e}\ttatoeba:xxx-eng\n" for o, e in zip(other[:500], english[:500])]
    lines += [f"{e}\t{o}\txnli:xx-en\n" for o, e in zip(other[500:], english[500:])]  # XNLI: English first
    (tmp_path / "pairs.tsv").write_text("".join(lines))
    argv = ["--cache", str(tmp_path), "--models", "tiny@model", "--sets", "real", "--index", "IVF16,Flat"]
    argv += [
        "--nprobe",
        "4",
        "--queries",
        "200",
        "--skip-st",
        "--half",
        "B",
        "--out",
        str(tmp_path / "r.json"),
    ]
    result = mine_real.main(argv)
    (real,) = result["models"]["tiny@model"]
    half = sets.halves(4000, other, english, seed=0) == 1
    expected = sets.real_rows(half, other, english, seed=0)["counts"]
    assert real["info"]["counts"] == expected and result["half"] == "B"
    assert real["planted_pairs"] == expected["planted_pairs"] > 100
    assert real["exact"]["f1"]["f1"] > 80  # the pairs are noisy copies: exact search finds them
    (tmp_path / "pairs.tsv").write_text("1\t2\tbucc:de-en\n")
    with pytest.raises(mine_real.InvalidArgument, match="pairs.tsv:1: unknown source"):
        mine_real.main(argv)
