"""Bitext mining on vectors with the structure of real sentence vectors: which `sentkit mine --index` to default to.

Inputs: bench/real_sentences.py's cache (sentences.txt, pairs.tsv and one shard folder per model). The texts
are split into halves A and B (no translation component crosses them; defaults are chosen on A, reported on
B), and per model and half these sets are mined (bench/mine_real_sets.py builds them):

- `real`: the half's real translation pairs, one-to-one (non-English source, English target), with every
  unpaired text of the half on one side or the other;
- `realistic-N`: N rows a side, new points mixed from the half's real vectors and their same-side
  neighbours (`--construction mixtures`; `copies` copies real vectors instead), perturbed so that the set's
  nearest-neighbour cosines follow the real ones, a fraction of source rows with a planted translation whose
  cosine follows the model's real translation pairs;
- `structureless-N`: bench/bitext_mining.py's planted synthetic vectors (the worst case: no real structure).

Each index (`--index`, FAISS factory strings or sentkit presets, each IVF one at every `--nprobe`) mines the
set the way `sentkit mine` does (sentkit.mining.search both ways, re-scored exactly, each direction's lists
completed by the other's, ratio margin over k, max retrieval); the index's own lists are scored too.
Against exact search it reports: recall@k on sampled queries each direction, how often the planted
partner is among the k neighbours (exact and index), planted-pair F1 at the best threshold (exact and index),
the error of the margin's k-NN means, train/add/search seconds and peak RSS. Above `--exact-max` rows a side
both F1s are estimates from one sample of source and target rows (the sample's rows, their translations,
their k-NN and their candidates' k-NN, all exact for the exact estimate; marked `~`). Sentence-transformers'
mining recipe (its parallel-sentence-mining example: IVF-Flat with keys/1000 lists, nprobe 3, k 4, ratio
margin, max) runs on the same vectors, its time and F1 as ratios to each sentkit run. Writes
bench/out/mine_real.json.

    python -m bench.research.mine_real --half A --sets real,realistic-250000,realistic-1000000
    python -m bench.research.mine_real --small    # a tiny synthetic cache: the script runs
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from bench.bitext_mining import planted_bitext
from bench.common import StageMeter, provenance, write_result
from bench.mine_real_sets import (
    CONSTRUCTIONS,
    VectorSet,
    cache_folder,
    halves,
    inverse_gold,
    model_vectors,
    real_rows,
    real_statistics,
    realistic_set,
)
from sentkit.errors import InvalidArgument
from sentkit.mining.exact import UnitRows, exact_search
from sentkit.mining.exchange import both_exchanged
from sentkit.mining.index_spec import ivf_lists, parse_index
from sentkit.mining.margin import candidate_scores, ratio_margin
from sentkit.mining.retrieval import select_pairs
from sentkit.mining.search import IndexConfig, resolve_kind, search
from sentkit.provenance import cpu_flags
from sentkit.tasks.bitext import best_threshold, prf_at_threshold

OUT = Path(__file__).resolve().parents[1] / "out" / "mine_real.json"
MODELS = "e5-small-m@int8,minilm-en@int8"
INDEXES = (
    "auto",
    "IVF4096,Flat",
    "OPQ64,IVF16384,PQ64",
    "IVF4096,PQ96x4fs",
    "IVF16384_HNSW32,PQ64x4fs",
    "HNSW32",
)
ST_RECIPE = {
    "source": "sentence-transformers examples/.../parallel-sentence-mining/bitext_mining.py",
    "index": "IndexIVFFlat, inner product, on L2-normalised vectors, trained on all keys",
    "nlist": "min(32768, keys // 1000)",
    "nprobe": 3,
    "k": 4,
    "margin": "ratio: cos / ((forward k-NN mean + backward k-NN mean) / 2), FAISS's similarities",
    "retrieval": "max: forward and backward best proposals, best first, one-to-one",
}


# ---- scoring: full and sampled F1 ---------------------------------------------------------------------------
def planted_f1(src: np.ndarray, tgt: np.ndarray, score: np.ndarray, gold: np.ndarray, n_gold: int) -> dict:
    """Precision, recall and F1 (percent) of mined pairs against the planted ones, at the best threshold."""
    correct = gold[src] == tgt
    p, r, f = prf_at_threshold(score, correct, n_gold, best_threshold(score, correct, n_gold))
    return {"precision": round(p, 2), "recall": round(r, 2), "f1": round(f, 2), "planted": n_gold}


def full_f1(neighbours, gold: np.ndarray) -> dict:
    """`sentkit mine`'s pairs (ratio margin, max retrieval) from full k-NN lists, scored."""
    x_scores, y_scores = candidate_scores(neighbours, "margin")
    src, tgt, score = select_pairs(neighbours, x_scores, y_scores, "max")
    return planted_f1(src, tgt, score, gold, int((gold >= 0).sum())) | {"estimate": False}


class FullLists:
    """k-NN of given query rows, looked up in full (n, k) lists."""

    def __init__(self, sims: np.ndarray, nn: np.ndarray) -> None:
        self.sims, self.nn = sims, nn

    def __call__(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.sims[rows], self.nn[rows]


class ExactLists:
    """Exact k-NN of given rows of unit `queries` over `keys`, each row searched once and remembered."""

    def __init__(self, queries: np.ndarray, keys: np.ndarray, k: int) -> None:
        self.queries, self.keys, self.k = queries, UnitRows(keys), min(k, len(keys))
        self.sims = np.zeros((len(queries), self.k), dtype=np.float32)
        self.nn = np.full((len(queries), self.k), -1, dtype=np.int64)
        self.done = np.zeros(len(queries), dtype=bool)
        self.searched = 0

    def __call__(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        todo = np.unique(rows[~self.done[rows]])
        if len(todo):
            s, i, _ = exact_search(UnitRows(self.queries[todo]), self.keys, self.k, "float32")
            self.sims[todo], self.nn[todo], self.done[todo] = s, i, True
            self.searched += len(todo)
        return self.sims[rows], self.nn[rows]


def f1_sample(gold: np.ndarray, ny: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(source rows, target rows), sorted: `size` random rows a side, each side's planted partners added."""
    rng = np.random.default_rng(seed)
    rx = rng.choice(len(gold), size=min(size, len(gold)), replace=False)
    ry = rng.choice(ny, size=min(size, ny), replace=False)
    inverse = inverse_gold(gold, ny)
    sx = np.union1d(rx, inverse[ry][inverse[ry] >= 0])
    sy = np.union1d(ry, gold[rx][gold[rx] >= 0])
    return sx, sy


def one_to_one(src: np.ndarray, tgt: np.ndarray, score: np.ndarray):
    """Proposals best first (stable), each kept when neither its source nor its target is taken yet."""
    taken_s, taken_t, keep = set(), set(), []
    for i in np.argsort(-score, kind="stable").tolist():
        s, t = int(src[i]), int(tgt[i])
        if s in taken_s or t in taken_t:
            continue
        taken_s.add(s), taken_t.add(t), keep.append(i)
    keep = np.array(keep, dtype=np.int64)
    return src[keep], tgt[keep], score[keep]


def sampled_f1(sx: np.ndarray, sy: np.ndarray, forward, backward, gold: np.ndarray) -> dict:
    """The F1 of `sentkit mine`'s pairs estimated on sampled source rows `sx` and target rows `sy` (closed
    under the planted pairs): each sampled row's k-NN (`forward(rows)`, `backward(rows)`: (sims, nn)), their
    candidates' k-NN means (so every margin is the one full mining computes), the sampled rows' best
    proposals matched one-to-one best first, scored against the planted pairs inside the sample. With the
    whole set as the sample it is full mining's F1."""
    xs, xn = forward(sx)
    ys, yn = backward(sy)
    t_rows, s_rows = np.unique(xn[xn >= 0]), np.unique(yn[yn >= 0])
    t_mean = backward(t_rows)[0].mean(axis=1)
    s_mean = forward(s_rows)[0].mean(axis=1)
    x_scores = ratio_margin(xs, xs.mean(axis=1)[:, None], t_mean[np.searchsorted(t_rows, xn)])
    y_scores = ratio_margin(ys, ys.mean(axis=1)[:, None], s_mean[np.searchsorted(s_rows, yn)])
    fb, bb = x_scores.argmax(axis=1), y_scores.argmax(axis=1)
    src = np.concatenate([sx, yn[np.arange(len(sy)), bb]])
    tgt = np.concatenate([xn[np.arange(len(sx)), fb], sy])
    score = np.concatenate([x_scores[np.arange(len(sx)), fb], y_scores[np.arange(len(sy)), bb]])
    src, tgt, score = one_to_one(src, tgt, score)
    n_gold = int((gold[sx] >= 0).sum())
    record = planted_f1(src, tgt, score, gold, n_gold)
    return record | {"estimate": True, "sample_source_rows": len(sx), "sample_target_rows": len(sy)}


# ---- sentence-transformers' recipe -----------------------------------------------------------------------------
def st_knn(queries: np.ndarray, keys: np.ndarray, k: int, nprobe: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The recipe's k-NN: an IVF-Flat inner-product index of min(32768, keys // 1000) lists (at least 1),
    trained on all keys, nprobe lists probed; FAISS's similarities as they come."""
    import faiss

    lists = max(1, min(32768, len(keys) // 1000))
    index = faiss.IndexIVFFlat(
        faiss.IndexFlatIP(keys.shape[1]), keys.shape[1], lists, faiss.METRIC_INNER_PRODUCT
    )
    index.nprobe = nprobe
    index.train(keys)
    index.add(keys)
    return index.search(queries, k)


def st_margin(
    x: np.ndarray, y: np.ndarray, x_nn: np.ndarray, x_mean: np.ndarray, y_mean: np.ndarray
) -> np.ndarray:
    """(n, k) ratio margins of each x row with its candidates x_nn: x.y / ((x_mean + y_mean[cand]) / 2);
    a missing candidate (-1: the probed lists ran out) scores -inf."""
    safe = np.maximum(x_nn, 0)
    cos = np.einsum("nd,nkd->nk", x, y[safe])
    out = cos / ((x_mean[:, None] + y_mean[safe]) / 2)
    out[x_nn < 0] = -np.inf
    return out


def _knn_mean(sims: np.ndarray, nn: np.ndarray) -> np.ndarray:
    found = nn >= 0
    return np.where(found, sims, 0).sum(axis=1) / np.maximum(found.sum(axis=1), 1)


def st_pca(x: np.ndarray, y: np.ndarray, dims: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The recipe's optional PCA: components fitted on 20,000 rows of both sides, applied without centring
    (a bias-free dense layer on the model's output), then the rows normalised again."""
    rng = np.random.default_rng(seed)
    train = np.concatenate(
        [
            x[rng.choice(len(x), min(10_000, len(x)), replace=False)],
            y[rng.choice(len(y), min(10_000, len(y)), replace=False)],
        ]
    )
    _, _, vt = np.linalg.svd(train - train.mean(axis=0), full_matrices=False)
    comp = vt[:dims].T.astype(np.float32)  # (d, dims)
    px, py = x @ comp, y @ comp
    return px / np.linalg.norm(px, axis=1, keepdims=True), py / np.linalg.norm(py, axis=1, keepdims=True)


def st_recipe(x: np.ndarray, y: np.ndarray, k: int = 4, nprobe: int = 3):
    """(neighbours, src, tgt, score) of the recipe on unit rows x, y (own implementation of its steps)."""
    x_sims, x_nn = st_knn(x, y, k, nprobe)
    y_sims, y_nn = st_knn(y, x, k, nprobe)
    x_mean, y_mean = _knn_mean(x_sims, x_nn), _knn_mean(y_sims, y_nn)
    fwd = st_margin(x, y, x_nn, x_mean, y_mean)
    bwd = st_margin(y, x, y_nn, y_mean, x_mean)
    fb, bb = fwd.argmax(axis=1), bwd.argmax(axis=1)
    src = np.concatenate([np.arange(len(x)), y_nn[np.arange(len(y)), bb]])
    tgt = np.concatenate([x_nn[np.arange(len(x)), fb], np.arange(len(y))])
    score = np.concatenate([fwd.max(axis=1), bwd.max(axis=1)])
    ok = (src >= 0) & (tgt >= 0)
    pairs = one_to_one(src[ok], tgt[ok], score[ok])
    return (x_sims, x_nn, y_sims, y_nn), (fwd, bwd), pairs


# ---- one set: exact reference, every index, the recipe --------------------------------------------------------
def neighbour_metrics(q: np.ndarray, exact, sims: np.ndarray, nn: np.ndarray, partner: np.ndarray) -> dict:
    """On sampled queries `q` with exact (sims, nn): recall@k (a neighbour tying the k-th exact one counts),
    how often the planted partner is among the k (exact, index), the k-NN mean's error (index - exact)."""
    e_sims, e_nn = exact
    found = (nn[q] >= 0) & (sims[q] >= e_sims[:, -1:])
    has = partner[q] >= 0
    err = sims[q].mean(axis=1) - e_sims.mean(axis=1)
    return {
        "queries": len(q),
        "recall_at_k": round(float(found.mean()), 4),
        "planted_in_knn_exact": round(float((e_nn[has] == partner[q][has, None]).any(axis=1).mean()), 4)
        if has.any()
        else None,
        "planted_in_knn_index": round(float((nn[q][has] == partner[q][has, None]).any(axis=1).mean()), 4)
        if has.any()
        else None,
        "knn_mean_error_mean": round(float(err.mean()), 5),
        "knn_mean_error_abs_p99": round(float(np.quantile(np.abs(err), 0.99)), 5),
        "knn_mean_error_abs_max": round(float(np.abs(err).max()), 5),
    }


def index_grid(indexes: list[str], nprobes: list[int | None]) -> list[tuple[str, int | None]]:
    """(index, nprobe) runs: every IVF index (or preset that may resolve to one) at each nprobe."""
    runs = []
    for kind in indexes:
        probes = nprobes if (ivf_lists(kind) or kind in ("auto", "ivfpq", "ivf-fastscan")) else [None]
        runs.extend((kind, p) for p in probes)
    return runs


def run_set(name: str, vs: VectorSet, args) -> dict:
    x, y, gold = vs.x, vs.y, vs.gold
    nx, ny, k = len(x), len(y), args.k
    partner_y = inverse_gold(gold, ny)
    full = max(nx, ny) <= args.exact_max
    print(
        f"{name}: {nx} x {ny}, {int((gold >= 0).sum())} planted pairs, F1 {'full' if full else 'estimated'}",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    qx = np.sort(rng.choice(nx, size=min(args.queries, nx), replace=False))
    qy = np.sort(rng.choice(ny, size=min(args.queries, ny), replace=False))
    meter = StageMeter()
    X, Y = UnitRows(x), UnitRows(y)
    flat = IndexConfig(kind="flat", exact_dtype=args.exact_dtype, seed=args.seed)
    if full:
        with meter.stage("exact_forward"):
            ex_s, ex_n, ex_fwd = search(X, Y, k, flat)
        with meter.stage("exact_backward"):
            ey_s, ey_n, ex_bwd = search(Y, X, k, flat)
        exact_lists = (FullLists(ex_s, ex_n), FullLists(ey_s, ey_n))
        exact_f1 = full_f1((ex_s, ex_n, ey_s, ey_n), gold)
        sx = sy = None
    else:
        exact_lists = (ExactLists(x, y, k), ExactLists(y, x, k))
        sx, sy = f1_sample(gold, ny, args.f1_sample, args.seed + 1)
        with meter.stage("exact_sampled"):
            exact_f1 = sampled_f1(sx, sy, *exact_lists, gold)
            exact_lists[0](qx), exact_lists[1](qy)
        ex_fwd = ex_bwd = None
    exact_q = (exact_lists[0](qx), exact_lists[1](qy))
    exact = {"f1": exact_f1, "stages": dict(meter.stages), "forward": ex_fwd, "backward": ex_bwd}
    print(f"  exact: F1 {'~' if exact_f1['estimate'] else ''}{exact_f1['f1']}", flush=True)
    runs, seen = [], {}
    for kind, nprobe in index_grid(args.index, args.nprobe):
        config = IndexConfig(
            kind=kind,
            nprobe=nprobe,
            refine=args.refine,
            flat_max=args.flat_max,
            seed=args.seed,
            exact_dtype=args.exact_dtype,
            recall_queries=args.queries,
        )
        key = same_search_key(config, X.n, Y.n, X.dim)
        if key in seen:  # e.g. auto resolving to a factory string of the grid: the same search again
            runs.append(seen[key] | {"index": kind, "nprobe": nprobe, "same_as": seen[key]["index"]})
            print(f"  {kind}: the same search as {seen[key]['index']}", flush=True)
            continue
        runs.append(run_index(config, X, Y, gold, partner_y, (qx, qy), exact_q, exact, (sx, sy), full, args))
        if key is not None:
            seen[key] = runs[-1]
    result = {
        "set": name,
        "source_rows": nx,
        "target_rows": ny,
        "planted_pairs": int((gold >= 0).sum()),
        "f1_is_estimate": not full,
        "info": vs.info,
        "exact": exact,
        "runs": runs,
    }
    if not args.skip_st:
        result["st_recipe"] = run_st(vs, partner_y, (qx, qy), exact_q, (sx, sy), full, runs, args)
    return result


def same_search_key(config: IndexConfig, nx: int, ny: int, dim: int) -> tuple | None:
    """What decides the searches of a config: the resolved index of each direction and, for IVF, nprobe."""
    try:
        fwd, bwd = resolve_kind(config, nx, ny, dim)[0], resolve_kind(config, ny, nx, dim)[0]
    except InvalidArgument:
        return None
    return fwd, bwd, config.nprobe if (ivf_lists(fwd) or ivf_lists(bwd)) else None


def run_index(config, X, Y, gold, partner_y, queries, exact_q, exact, sample, full, args) -> dict:
    label = config.kind + (f" nprobe {config.nprobe}" if config.nprobe else "")
    record = {"index": config.kind, "nprobe": config.nprobe}
    try:
        kind_fwd, why = resolve_kind(config, X.n, Y.n, X.dim)
        kind_bwd, _ = resolve_kind(config, Y.n, X.n, X.dim)
    except InvalidArgument as err:
        print(f"  {label}: skipped ({err})", flush=True)
        return record | {"skipped": str(err)}
    record |= {"resolved": [kind_fwd, kind_bwd], "why": why}
    if kind_fwd == kind_bwd == "flat" and full:  # the exact reference already ran this search
        record |= {"same_as_exact": True, "f1": exact["f1"], "stages": exact["stages"]}
        print(f"  {label}: exact search (the reference run)", flush=True)
        return record
    meter = StageMeter()
    try:
        with meter.stage("knn_forward"):
            x_s, x_n, fwd = search(X, Y, args.k, config)
        with meter.stage("knn_backward"):
            y_s, y_n, bwd = search(Y, X, args.k, config)
    except InvalidArgument as err:
        print(f"  {label}: skipped ({err})", flush=True)
        return record | {"skipped": str(err)}
    own = (x_s, x_n, y_s, y_n)  # the indexes' own lists
    with meter.stage("exchange"):  # as sentkit mine does: each direction's lists completed by the other's
        (ex_x_s, ex_x_n), (ex_y_s, ex_y_n), (gained_fwd, gained_bwd) = both_exchanged(*own)
    neighbours = (ex_x_s, ex_x_n, ex_y_s, ex_y_n)
    with meter.stage("margin_max"):
        f1_all = full_f1(neighbours, gold)
    qx, qy = queries
    record |= {
        "forward": fwd,
        "backward": bwd,
        "stages": meter.stages,
        "mining_s": round(sum(s["wall_s"] for s in meter.stages.values()), 2),
        # inside mining_s: the index's recall check (exact search of sampled queries), each direction
        "recall_check_s": round(sum(i.get("recall", {}).get("exact_s", 0) for i in (fwd, bwd)), 2),
        "peak_rss_mib": max(s["peak_rss_mib"] for s in meter.stages.values()),
        "from_other_direction": {"forward": gained_fwd, "backward": gained_bwd},
        "sample_forward": neighbour_metrics(qx, exact_q[0], ex_x_s, ex_x_n, gold),
        "sample_backward": neighbour_metrics(qy, exact_q[1], ex_y_s, ex_y_n, partner_y),
        # the same before the exchange: what the index alone found
        "sample_forward_index_only": neighbour_metrics(qx, exact_q[0], x_s, x_n, gold),
        "sample_backward_index_only": neighbour_metrics(qy, exact_q[1], y_s, y_n, partner_y),
    }
    if full:
        record["f1"] = f1_all
        record["f1_index_lists_only"] = full_f1(own, gold)
    else:
        record["f1"] = sampled_f1(*sample, FullLists(*neighbours[:2]), FullLists(*neighbours[2:]), gold)
        record["f1_full_index_only"] = f1_all
        record["f1_index_lists_only"] = sampled_f1(*sample, FullLists(x_s, x_n), FullLists(y_s, y_n), gold)
    record["f1_minus_exact"] = round(record["f1"]["f1"] - exact["f1"]["f1"], 2)
    record["f1_index_lists_only_minus_exact"] = round(
        record["f1_index_lists_only"]["f1"] - exact["f1"]["f1"], 2
    )
    print(
        f"  {label}: recall@{args.k} {record['sample_forward']['recall_at_k']}/{record['sample_backward']['recall_at_k']}, "
        f"F1 {'~' if record['f1']['estimate'] else ''}{record['f1']['f1']} (exact {exact['f1']['f1']}; "
        f"index lists alone {record['f1_index_lists_only']['f1']}, recall@{args.k} "
        f"{record['sample_forward_index_only']['recall_at_k']}/{record['sample_backward_index_only']['recall_at_k']}), "
        f"{record['mining_s']} s",
        flush=True,
    )
    return record


def run_st(vs: VectorSet, partner_y, queries, exact_q, sample, full, runs, args) -> dict:
    x, y = vs.x, vs.y
    if args.st_pca:
        x, y = st_pca(x, y, args.st_pca, args.seed)
    meter = StageMeter()
    with meter.stage("st_recipe"):
        neighbours, _, (src, tgt, score) = st_recipe(x, y, args.k)
    seconds = meter.stages["st_recipe"]["wall_s"]
    if full:
        f1 = planted_f1(src, tgt, score, vs.gold, int((vs.gold >= 0).sum())) | {"estimate": False}
    else:
        f1 = sampled_f1(*sample, FullLists(*neighbours[:2]), FullLists(*neighbours[2:]), vs.gold)
    record = {
        "settings": ST_RECIPE | {"pca": args.st_pca or None},
        "stages": meter.stages,
        "f1": f1,
        "sample_forward": neighbour_metrics(queries[0], exact_q[0], *neighbours[:2], vs.gold),
        "sample_backward": neighbour_metrics(queries[1], exact_q[1], *neighbours[2:], partner_y),
    }
    for run in runs:
        if "f1" in run and run["stages"]:
            mined_s = run.get("mining_s") or sum(s["wall_s"] for s in run["stages"].values())
            run["st_time_ratio"] = round(seconds / mined_s, 3) if mined_s else None
            run["st_f1_ratio"] = round(f1["f1"] / run["f1"]["f1"], 3) if run["f1"]["f1"] else None
    print(
        f"  sentence-transformers recipe: F1 {'~' if f1['estimate'] else ''}{f1['f1']}, {seconds} s",
        flush=True,
    )
    return record


# ---- inputs ------------------------------------------------------------------------------------------------


def build_sets(vectors: np.ndarray, half_mask, other, english, args):
    """(name, VectorSet) of each of `args.sets`, built one at a time (a 1M set is 3 GB)."""
    rows = real_rows(half_mask, other, english, args.seed)
    real = VectorSet(vectors[rows["src"]], vectors[rows["tgt"]], rows["gold"], {"counts": rows["counts"]})
    print(f"real set of half {args.half}: {rows['counts']}", flush=True)
    stats = real_statistics(real, args.queries, args.seed)
    real.info["nn_cos_quantiles"] = [
        round(float(v), 4) for v in np.quantile(stats["nn_cos"], [0.05, 0.25, 0.5, 0.75, 0.95])
    ]
    real.info["pair_cos_quantiles"] = [
        round(float(v), 4) for v in np.quantile(stats["pair_cos"], [0.05, 0.25, 0.5, 0.75, 0.95])
    ]
    for name in args.sets:
        if name == "real":
            yield name, real
            continue
        kind, n = name.rsplit("-", 1)
        if kind == "realistic":
            vs = realistic_set(
                real,
                int(n),
                stats,
                args.paired,
                args.calibration_rounds,
                args.queries,
                args.seed,
                args.construction,
            )
            print(f"{name}: calibration {vs.info['calibration'][-1]}", flush=True)
        else:
            x, y, gold = planted_bitext(int(n), vectors.shape[1], args.paired, args.noise, args.seed)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            y /= np.linalg.norm(y, axis=1, keepdims=True)
            vs = VectorSet(
                x, y, gold, {"what": "planted_bitext: the worst case, no real structure", "noise": args.noise}
            )
        yield name, vs
        del vs


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help="bench/real_sentences.py's output folder")
    parser.add_argument("--models", default=MODELS, help="shard folders of the cache, comma-separated")
    parser.add_argument("--half", default="A", choices=["A", "B"])
    parser.add_argument(
        "--sets",
        default=None,
        help="real, realistic-N, structureless-N (default: real,realistic-1000000; with --small: "
        "real,realistic-3000,structureless-2000)",
    )
    parser.add_argument(
        "--index", action="append", type=parse_index, help=f"repeatable (default: {'; '.join(INDEXES)})"
    )
    parser.add_argument(
        "--nprobe",
        default="",
        help="IVF lists probed, comma-separated (each IVF index at each); empty (default): chosen for "
        "sentkit mine's recall target, as `sentkit mine` does without --nprobe",
    )
    parser.add_argument(
        "--refine", type=int, default=None, help="candidates per neighbour re-scored (default: the index's)"
    )
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--exact-max", type=int, default=250_000, help="above: F1s estimated from a sample")
    parser.add_argument("--flat-max", type=int, default=250_000, help="auto: exact up to this squared")
    parser.add_argument("--exact-dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--queries", type=int, default=1000, help="sampled queries each direction")
    parser.add_argument("--f1-sample", type=int, default=2000, help="rows a side of the F1 estimate")
    parser.add_argument(
        "--paired", type=float, default=0.1, help="planted fraction (realistic, structureless)"
    )
    parser.add_argument("--noise", type=float, default=1.0, help="structureless translation noise")
    parser.add_argument("--calibration-rounds", type=int, default=2)
    parser.add_argument(
        "--construction",
        default="mixtures",
        choices=CONSTRUCTIONS,
        help="realistic-N rows: new points mixed from real neighbours, or copies of real vectors",
    )
    parser.add_argument(
        "--st-pca", type=int, default=0, help="the recipe's PCA dims (its script: 128; 0: off)"
    )
    parser.add_argument("--skip-st", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="FAISS/torch threads (default: all cores)")
    parser.add_argument("--small", action="store_true", help="a tiny synthetic cache; runs in seconds")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.sets is None:
        args.sets = "real,realistic-3000,structureless-2000" if args.small else "real,realistic-1000000"
    import faiss

    if args.threads:
        import torch

        faiss.omp_set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    args.index = args.index or list(INDEXES)
    args.nprobe = [int(p) for p in args.nprobe.split(",")] if args.nprobe else [None]
    args.sets = args.sets.split(",")
    for name in args.sets:
        if name != "real" and not (
            name.rpartition("-")[0] in ("realistic", "structureless") and name.rpartition("-")[2].isdigit()
        ):
            raise InvalidArgument(f"--sets: {name!r} is not real, realistic-N or structureless-N")
    started = time.perf_counter()
    cache = None if args.small else cache_folder(args.cache)
    names = ["small-synthetic"] if args.small else args.models.split(",")
    models, rows_used = {}, {}
    for model in names:
        vectors, *pairs, rows_used[model] = model_vectors(cache, model, args.seed)
        half_mask = halves(len(vectors), *pairs, args.seed) == "AB".index(args.half)
        models[model] = [run_set(name, vs, args) for name, vs in build_sets(vectors, half_mask, *pairs, args)]
        del vectors
        print_table(model, models[model], args.k)
    result = {
        "what": "sentkit mine's indexes on real, realistic and structureless sets, against exact search and "
        "sentence-transformers' mining recipe",
        "cache": str(cache) if cache else "small synthetic",
        "half": args.half,
        "settings": {key: (str(v) if isinstance(v, Path) else v) for key, v in vars(args).items()},
        "st_recipe": ST_RECIPE,
        "cpu_flags": cpu_flags(),
        "threads": args.threads or os.cpu_count(),
        "models": models,
        "rows_used": rows_used,
        "total_s": round(time.perf_counter() - started, 1),
        "load_average": os.getloadavg(),
        **provenance(faiss=faiss.__version__),
    }
    return write_result(args.out, result)


def print_table(model: str, sets: list[dict], k: int) -> None:
    print(f"\n{model}  (~: F1 estimated from a sample; ST: sentence-transformers' recipe / this run)")
    print(
        f"{'set':<22} {'index':<28} {'rec@' + str(k) + ' f/b':>11} {'planted ex/ix':>13} {'F1 ix':>7} {'F1 ex':>7} "
        f"{'mean err':>9} {'train s':>8} {'add s':>7} {'search s':>9} {'RSS MiB':>8} {'ST t':>6} {'ST F1':>6}"
    )
    for s in sets:
        for r in s["runs"] + (
            [{"index": "sentence-transformers", **s["st_recipe"]}] if "st_recipe" in s else []
        ):
            if "skipped" in r:
                print(f"{s['set']:<22} {r['index']:<28} skipped")
                continue
            fwd, bwd = r.get("sample_forward"), r.get("sample_backward")
            idx = (r["index"] + (f" np{r['nprobe']}" if r.get("nprobe") else ""))[:28]
            mark = "~" if r["f1"]["estimate"] else ""
            times = [
                sum(i.get(key, 0) or 0 for i in (r.get("forward") or {}, r.get("backward") or {}))
                for key in ("train_s", "add_s", "search_s")
            ]
            rss = r.get("peak_rss_mib") or max(v["peak_rss_mib"] for v in r["stages"].values())
            rec = f"{fwd['recall_at_k']:.3f}/{bwd['recall_at_k']:.3f}" if fwd else "exact"
            planted = (
                f"{fwd['planted_in_knn_exact'] or 0:.2f}/{fwd['planted_in_knn_index'] or 0:.2f}"
                if fwd
                else ""
            )
            err = f"{fwd['knn_mean_error_abs_p99']:.4f}" if fwd else ""
            print(
                f"{s['set']:<22} {idx:<28} {rec:>11} {planted:>13} {mark + str(r['f1']['f1']):>7} "
                f"{mark + str(s['exact']['f1']['f1']):>7} {err:>9} {times[0]:8.1f} {times[1]:7.1f} {times[2]:9.1f} "
                f"{rss:8.0f} {r.get('st_time_ratio', ''):>6} {r.get('st_f1_ratio', ''):>6}"
            )


if __name__ == "__main__":
    main()
