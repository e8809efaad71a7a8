"""The vector sets of bench/research/mine_real.py: halves of the real texts, the real set, the realistic set.

**Halves.** The translation pairs (pairs.tsv) join texts into components (a sentence, its translations,
their other translations, ...). A seeded hash of each component's first row puts the whole component in
half A or half B, so no translation crosses the halves: index defaults chosen on A are reported on B
without A's pairs having been seen.

**The real set** (one half): every English text keeps one seeded partner among its translations (a greedy
one-to-one matching over the pairs in seeded order); the non-English member goes to the source side, the
English one to the target side. Texts in a pair that was not chosen are left out (each would be a second
correct answer); every text in no pair goes to the source or the target side by a seeded coin.

**The realistic set** (N rows a side, beyond the real count): each row is a perturbed point of a base,
x' = normalize(b + s g), with g Gaussian with the real vectors' covariance (so the noise lies where real
sentence vectors vary, as PQ and IVF see them), its component along b removed, and s set per row so that
cos(b, x') is exactly a drawn value c. Source rows start from the real set's unpaired source texts and target
rows from its unpaired target texts (so no real translation is hidden across the sides). The base b of a row
is one of two constructions (`construction`):

- `mixtures` (the default): a new point on the real vectors' own neighbourhoods, b = normalize(w0 u +
  w1 v1 + w2 v2), u a random real text of the side, v1 and v2 two distinct texts among u's `NEIGHBOURS`
  nearest on the same side, (w0, w1, w2) uniform on the simplex. Each text has 28 neighbour pairs and the
  weights are continuous, so every row is its own point however far N exceeds the real count (at 1M rows a
  side from about 117,000 texts a side, 0.3-0.4% of rows had a twin: docs/scale.md).
- `copies`: b = u itself. Past about two rows per real text, matching the real nearest-neighbour cosines
  forces c towards 1 and every row gets near-identical twins (the copies of its base); kept to reproduce
  results built that way.

A fraction of source rows get a planted translation y = normalize(x' + s' g') at a random target row, s' set
so that cos(x', y) is drawn from the model's real translation-pair cosines. The cosines c are calibrated so
that the set's nearest-neighbour cosines (unpaired source rows to their nearest target row) follow the real
set's: they start at the real distribution's quantiles and each round adds, per quantile level, the gap
between the real and the built quantile, then the set is rebuilt with the same noise (`rounds` 0: the
cosines c follow the real nearest-neighbour cosines themselves). The set's record gives, for built and real
rows alike, the cosine of sampled source rows to their nearest *other source row*: twins show there.
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.bitext_mining import planted_bitext
from sentkit.errors import InvalidArgument
from sentkit.mining.exact import UnitRows, exact_search
from sentkit.mining.vectors import ShardVectors

LEVELS = np.linspace(0.0, 1.0, 101)  # quantile levels of the copy-cosine calibration
COPY_COS_MAX = 0.9999
GENERATE_CHUNK = 20_000
TWIN_COS = 0.999  # a row with another row of its side above this cosine has a twin
NEIGHBOURS = 8  # a mixture's partners come from its base text's NEIGHBOURS nearest on the same side
CONSTRUCTIONS = ("mixtures", "copies")


# ---- translation pairs and halves ----------------------------------------------------------------------
def read_pairs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(other (p,), english (p,)) rows of each translation pair of pairs.tsv: Tatoeba's rows are
    xxx, eng; XNLI's are en, xx."""
    other, english = [], []
    with open(path, encoding="utf-8", newline="") as fh:
        for number, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if len(row) != 3:
                raise InvalidArgument(f"{path}:{number}: expected row_a<TAB>row_b<TAB>source, got {row!r}")
            a, b, source = int(row[0]), int(row[1]), row[2]
            if source.startswith("tatoeba:"):
                other.append(a), english.append(b)
            elif source.startswith("xnli:"):
                other.append(b), english.append(a)
            else:
                raise InvalidArgument(f"{path}:{number}: unknown source {source!r} (tatoeba:* or xnli:*)")
    return np.array(other, dtype=np.int64), np.array(english, dtype=np.int64)


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) component label of each row in the graph whose edges are the pairs (a[i], b[i])."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64 of uint64 values (a seeded hash that does not depend on how components are numbered)."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def halves(n: int, a: np.ndarray, b: np.ndarray, seed: int = 0) -> np.ndarray:
    """(n,) 0 for half A, 1 for half B: a seeded hash of each pair component's first row."""
    labels = components(n, a, b)
    first = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    with np.errstate(over="ignore"):
        bit = _mix(_mix(first.astype(np.uint64)) ^ np.uint64(seed)) >> np.uint64(63)
    return bit.astype(np.int8)[labels]


# ---- the real set ----------------------------------------------------------------------------------------
@dataclass
class VectorSet:
    """Unit source rows x, unit target rows y and gold[i]: the target row of source row i's translation
    (-1: none); `info` says how the set was built."""

    x: np.ndarray
    y: np.ndarray
    gold: np.ndarray
    info: dict = field(default_factory=dict)


def real_rows(half_mask: np.ndarray, other: np.ndarray, english: np.ndarray, seed: int = 0) -> dict:
    """The real set's rows (see the module docstring): `src` and `tgt` (sorted text rows), `gold` (source
    position -> target position or -1) and the counts."""
    rng = np.random.default_rng(seed)
    inside = half_mask[other] & half_mask[english]
    o, e = other[inside], english[inside]
    used = np.zeros(len(half_mask), dtype=bool)
    chosen = []
    for i in rng.permutation(len(o)).tolist():
        if not used[o[i]] and not used[e[i]]:
            used[o[i]] = used[e[i]] = True
            chosen.append(i)
    chosen = np.array(chosen, dtype=np.int64)
    in_pair = np.zeros(len(half_mask), dtype=bool)
    in_pair[o] = in_pair[e] = True
    unpaired = half_mask & ~in_pair
    coin = rng.random(len(half_mask)) < 0.5
    src = np.sort(np.concatenate([o[chosen], np.flatnonzero(unpaired & coin)]))
    tgt = np.sort(np.concatenate([e[chosen], np.flatnonzero(unpaired & ~coin)]))
    gold = np.full(len(src), -1, dtype=np.int64)
    gold[np.searchsorted(src, o[chosen])] = np.searchsorted(tgt, e[chosen])
    counts = {
        "half_texts": int(half_mask.sum()),
        "translation_pairs_in_half": len(o),
        "planted_pairs": len(chosen),
        "left_out_texts": int((in_pair & half_mask).sum() - 2 * len(chosen)),
        "unpaired_to_source": int((unpaired & coin).sum()),
        "unpaired_to_target": int((unpaired & ~coin).sum()),
        "source_rows": len(src),
        "target_rows": len(tgt),
    }
    return {"src": src, "tgt": tgt, "gold": gold, "counts": counts}


def nn_cosines(x: np.ndarray, y: np.ndarray, rows: np.ndarray, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """((len(rows),) cosine of each source row `rows` of unit x with its nearest unit y row, (len(rows),)
    mean cosine of its k nearest): exact search."""
    sims, _, _ = exact_search(UnitRows(x[rows]), UnitRows(y), k, "float32")
    return sims[:, 0], sims.mean(axis=1)


def same_side_nn(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows),) cosine of each row `rows` of unit x with its nearest other row of x (a twin shows as
    a cosine near 1)."""
    sims, nn, _ = exact_search(UnitRows(x[rows]), UnitRows(x), 2, "float32")
    return np.where(nn[:, 0] == rows, sims[:, 1], sims[:, 0])


def unpaired_sample(gold: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Up to `size` sorted source rows without a planted translation, drawn with `rng`."""
    free = np.flatnonzero(gold < 0)
    return np.sort(rng.choice(free, size=min(size, len(free)), replace=False))


def real_statistics(real: VectorSet, sample: int, seed: int) -> dict:
    """The real set's nearest-neighbour cosines (`sample` unpaired source rows to their nearest target row)
    and the cosines of all its translation pairs, each sorted."""
    rows = unpaired_sample(real.gold, sample, np.random.default_rng(seed))
    if not len(rows):
        raise InvalidArgument(
            "the real set has no unpaired source rows to measure nearest-neighbour cosines on"
        )
    src = np.flatnonzero(real.gold >= 0)
    pair_cos = np.einsum("nd,nd->n", real.x[src], real.y[real.gold[src]])
    nn, knn_mean = nn_cosines(real.x, real.y, rows)
    return {
        "nn_cos": np.sort(nn),
        "knn_mean": np.sort(knn_mean),
        "pair_cos": np.sort(pair_cos),
        "same_side_nn": np.sort(same_side_nn(real.x, rows)),
    }


# ---- the realistic set -------------------------------------------------------------------------------------
def noise_factor(vectors: np.ndarray, rows: int = 20_000, seed: int = 0) -> np.ndarray:
    """(d, d) L with L L^T the covariance of (a sample of) the rows: L z is Gaussian noise shaped like them."""
    rng = np.random.default_rng(seed)
    sample = vectors[np.sort(rng.choice(len(vectors), size=min(rows, len(vectors)), replace=False))]
    cov = np.cov(sample.astype(np.float64), rowvar=False)
    cov += np.eye(len(cov)) * 1e-6 * np.trace(cov) / len(cov)  # full rank even from few rows
    return np.linalg.cholesky(cov).astype(np.float32)


def perturb_into(
    out: np.ndarray,
    base: np.ndarray,
    pick: np.ndarray,
    cos: np.ndarray,
    factor: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """out[i] = cos[i] b + sqrt(1 - cos[i]^2) u[i] with b = base[pick[i]] and u[i] the unit part of shaped
    Gaussian noise orthogonal to b: normalize(b + s g) with s such that cos(b, out[i]) = cos[i]."""
    for start in range(0, len(pick), GENERATE_CHUNK):
        rows = slice(start, start + GENERATE_CHUNK)
        b = base[pick[rows]]
        g = rng.standard_normal(b.shape, dtype=np.float32) @ factor.T  # (c, d)
        g -= np.einsum("cd,cd->c", g, b)[:, None] * b
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        c = cos[rows, None].astype(np.float32)
        out[rows] = c * b + np.sqrt(1 - c * c) * g


def mixture_bases(
    base: np.ndarray, n: int, rng: np.random.Generator, neighbours: int = NEIGHBOURS
) -> np.ndarray:
    """(n, d) unit points normalize(w0 u + w1 v1 + w2 v2): u a random row of unit `base`, v1 != v2 two of
    u's `neighbours` nearest other rows, w uniform on the simplex (module docstring)."""
    if len(base) < 3:
        raise InvalidArgument(f"mixtures need at least 3 real texts on a side, got {len(base)}")
    m = min(neighbours, len(base) - 1)
    _, nn, _ = exact_search(UnitRows(base), UnitRows(base), m + 1, "float32")
    own = np.arange(len(base))[:, None]
    # drop each row itself, wherever its duplicates put it in its own list
    keep = nn != own
    keep[keep.all(axis=1), m] = False  # self not listed (ties with duplicates): the farthest goes
    near = nn[keep].reshape(len(base), m)
    u = rng.integers(len(base), size=n)
    first = rng.integers(m, size=n)
    second = (first + 1 + rng.integers(max(m - 1, 1), size=n)) % m  # != first when m > 1
    w = rng.dirichlet(np.ones(3), size=n).astype(np.float32)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, GENERATE_CHUNK):
        r = slice(start, start + GENERATE_CHUNK)
        b = (
            w[r, :1] * base[u[r]]
            + w[r, 1:2] * base[near[u[r], first[r]]]
            + w[r, 2:] * base[near[u[r], second[r]]]
        )
        out[r] = b / np.linalg.norm(b, axis=1, keepdims=True)
    return out


def realistic_set(
    real: VectorSet,
    n: int,
    stats: dict,
    paired: float = 0.1,
    rounds: int = 2,
    sample: int = 1000,
    seed: int = 0,
    construction: str = "mixtures",
) -> VectorSet:
    """N x N rows built from the real set `real` and its `stats` (real_statistics) by `construction`
    (CONSTRUCTIONS); module docstring."""
    if construction not in CONSTRUCTIONS:
        raise InvalidArgument(f"construction must be one of {', '.join(CONSTRUCTIONS)}, got {construction!r}")
    rng = np.random.default_rng(seed)
    x_base = real.x[real.gold < 0]
    matched = np.zeros(len(real.y), dtype=bool)
    matched[real.gold[real.gold >= 0]] = True
    y_base = real.y[~matched]
    if not len(x_base) or not len(y_base):
        raise InvalidArgument("the realistic set copies unpaired real texts; this half has none on a side")
    picked = [
        b[np.sort(rng.choice(len(b), size=min(10_000, len(b)), replace=False))] for b in (x_base, y_base)
    ]
    factor = noise_factor(np.concatenate(picked), seed=seed)
    if construction == "mixtures":
        x_base, y_base = (mixture_bases(b, n, rng) for b in (x_base, y_base))
        bx = by = np.arange(n)
    else:
        bx, by = rng.integers(len(x_base), size=n), rng.integers(len(y_base), size=n)
    px, py = rng.random(n), rng.random(n)  # quantile level of each row's copy cosine
    n_pairs = int(round(paired * n))
    gold = np.full(n, -1, dtype=np.int64)
    planted = rng.choice(n, size=n_pairs, replace=False)
    gold[planted] = rng.choice(n, size=n_pairs, replace=False)
    pair_cos = np.quantile(stats["pair_cos"], rng.random(n_pairs))
    measure = unpaired_sample(gold, sample, rng)
    noise_seeds = rng.integers(2**63, size=3)
    target = np.quantile(stats["nn_cos"], LEVELS)
    copy_q = np.minimum(target, COPY_COS_MAX)
    x = np.empty((n, real.x.shape[1]), dtype=np.float32)
    y = np.empty_like(x)
    history = []
    for round_ in range(rounds + 1):
        x_cos, y_cos = np.interp(px, LEVELS, copy_q), np.interp(py, LEVELS, copy_q)
        perturb_into(x, x_base, bx, x_cos, factor, np.random.default_rng(noise_seeds[0]))
        perturb_into(y, y_base, by, y_cos, factor, np.random.default_rng(noise_seeds[1]))
        part = np.empty((n_pairs, x.shape[1]), dtype=np.float32)
        perturb_into(part, x, planted, pair_cos, factor, np.random.default_rng(noise_seeds[2]))
        y[gold[planted]] = part
        nn, knn_mean = nn_cosines(x, y, measure)
        built = np.quantile(nn, LEVELS)
        history.append(_quantile_record(copy_q, built, target))
        if round_ == rounds:
            history[-1]["knn_mean_built"] = _at(np.quantile(knn_mean, LEVELS))
            history[-1]["knn_mean_real"] = _at(np.quantile(stats["knn_mean"], LEVELS))
            break
        copy_q = np.maximum.accumulate(np.clip(copy_q + (target - built), -1.0, COPY_COS_MAX))
    twins = same_side_nn(x, measure)
    info = {
        "n": n,
        "construction": construction,
        "paired": paired,
        "planted_pairs": n_pairs,
        "source_texts": int((real.gold < 0).sum()),
        "target_texts": int((~matched).sum()),
        "same_side_nn_built": _at(np.quantile(twins, LEVELS)),
        "same_side_nn_real": _at(np.quantile(stats["same_side_nn"], LEVELS)),
        "twins_built": round(float(np.mean(twins > TWIN_COS)), 4),
        "twins_real": round(float(np.mean(stats["same_side_nn"] > TWIN_COS)), 4),
        "nn_cos_sample": len(measure),
        "calibration": history,
    }
    return VectorSet(x, y, gold, info)


REPORTED = [5, 25, 50, 75, 95]  # quantile levels (percent) in the calibration record


def _at(quantiles: np.ndarray) -> list[float]:
    return [round(float(quantiles[i]), 4) for i in REPORTED]


def _quantile_record(copy_q: np.ndarray, built: np.ndarray, target: np.ndarray) -> dict:
    return {
        "levels_percent": REPORTED,
        "copy_cos": _at(copy_q),
        "nn_cos_built": _at(built),
        "nn_cos_real": _at(target),
        "max_gap": round(float(np.abs(built - target)[5:96].max()), 4),
    }


def inverse_gold(gold: np.ndarray, ny: int) -> np.ndarray:
    """(ny,) each target row's planted source row, -1 none: `gold` (source row -> target row) read backward."""
    inverse = np.full(ny, -1, dtype=np.int64)
    inverse[gold[gold >= 0]] = np.flatnonzero(gold >= 0)
    return inverse


def load_model_vectors(folder: Path) -> np.ndarray:
    """Every row of a shard folder, L2-normalised, in one (n, d) float32 array. A folder still being
    encoded (or stopped) gives its encoded prefix: the finished shards that run on from row 1 (a warning says
    how many rows that is); the caller drops the pairs beyond it."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("complete"):
        vectors = ShardVectors(folder)
        out = np.empty((vectors.n, vectors.dim), dtype=np.float32)
        for start, block in vectors.blocks():
            out[start : start + len(block)] = block
        return out
    blocks, row = [], 1
    for shard in sorted(manifest["shards"], key=lambda s: (s["input"], s["first_row"])):
        if shard["input"] != 0 or shard["first_row"] != row:
            break
        blocks.append(np.load(folder / shard["name"]).astype(np.float32))
        row += shard["rows"]
    if not blocks:
        raise InvalidArgument(f"{folder}: no finished shard from row 1 yet")
    out = np.concatenate(blocks)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    print(
        f"warning: {folder} is not complete: using its encoded prefix, the first {len(out):,} texts",
        file=sys.stderr,
        flush=True,
    )
    return out


def cache_folder(asked: Path | None) -> Path:
    """The real-vector cache (--cache, else bench/real_sentences.py's default), refused without pairs.tsv."""
    from bench.real_sentences import default_cache

    cache = asked or default_cache()
    if not (cache / "pairs.tsv").is_file():
        raise InvalidArgument(f"--cache {cache}: no pairs.tsv; run bench/real_sentences.py first")
    return cache


def model_vectors(cache: Path | None, model: str, seed: int = 0) -> tuple:
    """(vectors, other, english, used): a model's unit vectors from the cache (None: the small synthetic
    cache) and the translation pairs among the rows it holds (a folder still being encoded holds a prefix)."""
    if cache is None:
        tables, other, english = small_cache(seed)
        vectors = next(iter(tables.values()))
        return vectors, other, english, {"texts": len(vectors), "translation_pairs": len(other)}
    other, english = read_pairs(cache / "pairs.tsv")
    vectors = load_model_vectors(cache / model.replace("/", "_"))
    inside = (other < len(vectors)) & (english < len(vectors))
    used = {"texts": len(vectors), "translation_pairs": int(inside.sum())}
    return vectors, other[inside], english[inside], used


def small_cache(seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """A tiny stand-in for the cache: 4,000 structured 32-d vectors, 500 Tatoeba-like pairs and 100 English
    rows with 3 XNLI-like partners each."""
    rng = np.random.default_rng(seed)
    base, _, _ = planted_bitext(4000, 32, 0.0, 1.0, seed)
    other = np.concatenate([np.arange(0, 1000, 2), 1000 + np.arange(300)])
    english = np.concatenate([np.arange(1, 1000, 2), 1300 + np.repeat(np.arange(100), 3)])
    base[other] = base[english] + 0.5 * rng.standard_normal((len(other), 32)).astype(np.float32) * base.std(
        axis=0
    )
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    return {"small-synthetic": base}, other, english
