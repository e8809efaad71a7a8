"""Exact cosine k-NN as blocked matrix products (torch), near the machine's matrix-product speed.

The keys are held one pass at a time (consecutive rows, up to KEY_PASS_BYTES of float32). For each tile of
QUERY_TILE queries and KEY_TILE keys one matrix product gives every similarity, and a top-k selection
(`tile_topk`) keeps the best `k + extra` per query, merged over the pass's key tiles: the product is the
work, the selection a small part of it (about a tenth of a float32 product's time). Every tile's product
is written into one buffer, allocated once per query tile and pass (a fresh result per product would pay
its page faults each time). The candidates are re-scored with `exact_scores` (the one similarity every
search path reports), sorted by score then key row, and merged over the passes into each query's top k.

Verified candidates: a key outside a query's candidates has a product value at most the last candidate's,
so its exact similarity is at most that value plus the product's error bound (`product_error`). When the
query's k-th exact similarity exceeds this, the k found are the exact top k. bfloat16 products (about twice
as fast on CPUs with native support) only choose candidates: queries that fail the check (near-ties within
the bound) are searched again with float32 products, so the neighbours equal the float32 search's (ties
aside) and every score is a float32-vector similarity.

Device: the products and selections run where torch runs them, the CPU or a CUDA GPU (`device`; auto: a GPU
when torch sees one). On a GPU the tiles are larger, bfloat16 is the product dtype wherever the GPU supports
it, and TF32 is switched off for float32 products (its 10-bit inputs would break the float32 error bound);
the candidates come back to the CPU and are re-scored there by `exact_scores`, so a GPU search reports the
same neighbours and the same scores as a CPU search of the same vectors.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from sentkit.devices import torch_device
from sentkit.errors import InvalidArgument

DTYPES = ("auto", "float32", "bfloat16")
DEVICES = ("auto", "cpu", "cuda")
KEY_PASS_BYTES = 1 << 30  # float32 keys held at once (a 1M x 384 side takes two passes over the queries)
QUERY_TILE = 2048  # queries per product
KEY_TILE = 16384  # keys per product: a (2048, 16384) float32 similarity tile is 128 MiB
# on a GPU a (2048, 16384) product takes tens of microseconds, less than launching the selections around it:
# (8192, 65536) tiles give each launch 16 x the work, in a 2 GiB float32 (1 GiB bfloat16) similarity buffer
GPU_TILES = (8192, 65536)
EXTRA = {"float32": 2, "bfloat16": 12}  # candidates beyond k, so the check passes for all but near-ties
SELECT_GROUPS = 16  # strided column groups of tile_topk
RESCORE_ROWS = 512  # queries re-scored at a time (bounds the float64 gather: rows x candidates x dim)


class UnitRows:
    """Rows already L2-normalised (a sample taken from a vector set) as a vector set: searched as they are,
    since normalising again could move their last bits and with them the scores."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = np.ascontiguousarray(rows, dtype=np.float32)

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def dim(self) -> int:
        return int(self.rows.shape[1])

    def blocks(self):
        yield 0, self.rows

    def take(self, rows: np.ndarray) -> np.ndarray:
        return self.rows[np.asarray(rows)]


def product_error(dtype: str, dim: int) -> float:
    """A bound on |product value - exact similarity| for unit vectors of `dim` dimensions."""
    # float32 sums: at most dim x 2^-24 of sum |x_i y_i| <= 1; doubled to cover the re-score's own rounding
    accumulate = dim * 2.0**-23
    if dtype == "float32":
        return accumulate
    # bfloat16: each input rounded to 8 significant bits (2^-9 relative each, so 2^-8 on the sum of products),
    # the float32 sum rounded to bfloat16 on output (2^-9 of |s| <= 1), and a little for the slack above
    return 2.0**-8 + 2.0**-9 + accumulate + 2.0**-16


def exact_scores(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """(b, c) similarities of each query (b, d) with its candidate rows (b, c, d): float32 vectors summed
    in float64 and rounded to float32, so a pair's score does not depend on which search found it."""
    out = np.empty(candidates.shape[:2], dtype=np.float32)
    for start in range(0, len(queries), RESCORE_ROWS):
        rows = slice(start, start + RESCORE_ROWS)
        q = queries[rows].astype(np.float64)  # (r, d)
        out[rows] = np.einsum("rd,rcd->rc", q, candidates[rows].astype(np.float64))  # (r, c)
    return out


def merge_topk(best_s: np.ndarray, best_i: np.ndarray, new_s: np.ndarray, new_i: np.ndarray) -> None:
    """Merge a block's (n, kb) results into the running (n, k) top k, in place; ties keep the earlier block."""
    s = np.concatenate([best_s, new_s], axis=1)  # (n, k + kb)
    i = np.concatenate([best_i, new_i], axis=1)
    order = np.argsort(-s, axis=1, kind="stable")[:, : best_s.shape[1]]  # (n, k)
    best_s[:] = np.take_along_axis(s, order, axis=1)
    best_i[:] = np.take_along_axis(i, order, axis=1)


def key_passes(keys, max_bytes: int | None = None):
    """(first row, float32 (rows, dim) array) of consecutive keys, each pass at most `max_bytes`
    (KEY_PASS_BYTES)."""
    pass_rows = max(1, (max_bytes or KEY_PASS_BYTES) // (4 * keys.dim))
    buf, filled, pass_start = None, 0, 0
    for _, block in keys.blocks():
        pos = 0
        if buf is None and len(block) == min(pass_rows, keys.n - pass_start):  # a whole pass: no copy
            yield pass_start, np.ascontiguousarray(block, dtype=np.float32)
            pass_start += len(block)
            continue
        while pos < len(block):
            if buf is None:
                buf, filled = np.empty((min(pass_rows, keys.n - pass_start), keys.dim), dtype=np.float32), 0
            take = min(len(buf) - filled, len(block) - pos)
            buf[filled : filled + take] = block[pos : pos + take]
            filled, pos = filled + take, pos + take
            if filled == len(buf):
                yield pass_start, buf
                pass_start, buf = pass_start + len(buf), None


def resolve_device(device: str) -> str:
    """ "cpu" or "cuda" for `device` (auto: "cuda" when torch sees a CUDA GPU); "cuda" without one is refused
    in one line."""
    if device not in DEVICES:
        raise InvalidArgument(f"exact search device must be one of {', '.join(DEVICES)}, got {device!r}")
    return torch_device(device, "--exact-device")


def exact_search(
    queries, keys, k: int, dtype: str = "auto", device: str = "cpu"
) -> tuple[np.ndarray, np.ndarray, dict]:
    """(sims (nq, k'), rows (nq, k'), info) with k' = min(k, keys.n), best first (ties: lower key row
    first); `queries` and `keys` are vector sets (sentkit.mining.vectors); the products run on `device`
    (DEVICES). See the module docstring."""
    import torch

    from sentkit.mining.gemm import exact_dtype_choice

    if dtype not in DTYPES:
        raise InvalidArgument(f"exact search dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    device = resolve_device(device)
    reason = "asked for"
    if dtype == "auto":
        dtype, reason = exact_dtype_choice(device)
    with _full_float32(device):
        best_s, best_i, counts, seconds = _search(queries, keys, min(k, keys.n), dtype, device)
    gflop = 2 * queries.n * keys.n * keys.dim / 1e9
    info = {
        "index": "flat",
        "factory": "Flat",
        "path": "blocked matrix product (torch), top-k per tile, candidates re-scored",
        "device": device,
        "dtype": dtype,
        "dtype_reason": reason,
        "torch_threads": torch.get_num_threads(),
        "key_passes": counts["passes"],
        "candidates_per_query": min(k, keys.n) + EXTRA[dtype],
        "float32_rechecked_queries": counts["rechecked"],
        # queries whose k-th neighbour is tied (within float32 rounding) with keys beyond the candidates
        "unverified_queries": counts["unverified"],
        "keys": keys.n,
        "gflop": round(gflop, 3),
        "search_s": round(seconds, 2),
        "gflops": round(gflop / seconds, 1) if seconds > 0 else None,
    }
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    return best_s, best_i, info


def cosine_knn(queries: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k keys most cosine-similar to each query, arrays in memory: (sims (n, k'), rows (n, k')), best first,
    k' = min(k, len(keys)). `exact_search` with float32 products on the CPU, so an evaluation task (BUCC,
    Tatoeba, k-NN) finds and scores neighbours exactly as `sentkit mine` does."""
    from sentkit.mining.vectors import normalized

    q, kv = np.asarray(queries), np.asarray(keys)
    if q.ndim != 2 or kv.ndim != 2:
        raise ValueError(f"expected 2-d arrays (n, dim), got shapes {q.shape} and {kv.shape}")
    if q.shape[1] != kv.shape[1]:
        raise ValueError(f"queries have dim {q.shape[1]}, keys have dim {kv.shape[1]}")
    sims, rows, _ = exact_search(UnitRows(normalized(q)), UnitRows(normalized(kv)), k, "float32", "cpu")
    return sims, rows


@contextlib.contextmanager
def _full_float32(device: str):
    """float32 products at full precision on a GPU (TF32 off) for the duration; nothing on the CPU."""
    if device != "cuda":
        yield
        return
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _search(queries, keys, k: int, dtype: str, device: str):
    """The blocked search of exact_search: (best sims, best rows, counts, seconds)."""
    import torch

    query_tile = GPU_TILES[0] if device == "cuda" else QUERY_TILE
    best_s = np.full((queries.n, k), -np.inf, dtype=np.float32)  # (nq, k)
    best_i = np.full((queries.n, k), -1, dtype=np.int64)
    counts = {"passes": 0, "rechecked": 0, "unverified": 0}
    start = time.perf_counter()
    for pass_start, keys32 in key_passes(keys):
        counts["passes"] += 1
        keys_f32 = torch.from_numpy(keys32).to(device)
        keys_c = keys_f32.to(torch.bfloat16) if dtype == "bfloat16" else keys_f32
        for q_start, q_block in queries.blocks():
            for t in range(0, len(q_block), query_tile):
                q32 = np.ascontiguousarray(q_block[t : t + query_tile])
                sims, rows, ok = _pass_topk(q32, keys32, keys_c, k, dtype)
                if dtype == "bfloat16" and not ok.all():  # near-ties within the bound: float32 products
                    redo = ~ok
                    sims[redo], rows[redo], ok[redo] = _pass_topk(q32[redo], keys32, keys_f32, k, "float32")
                    counts["rechecked"] += int(redo.sum())
                counts["unverified"] += int((~ok).sum())
                at = slice(q_start + t, q_start + t + len(q32))
                merge_topk(best_s[at], best_i[at], sims, rows + pass_start)
    return best_s, best_i, counts, time.perf_counter() - start


def _pass_topk(q32: np.ndarray, keys32: np.ndarray, keys_c, k: int, dtype: str):
    """(sims (b, k'), pass rows (b, k'), verified (b,)) of a query tile against one pass of keys, k' =
    min(k, pass rows); verified: no key beyond the candidates can enter the top k (module docstring)."""
    import torch

    n = len(keys32)
    kk = min(n, k + EXTRA[dtype])
    qc = torch.from_numpy(q32).to(keys_c.device)
    if dtype == "bfloat16":
        qc = qc.to(torch.bfloat16)
    approx, cand = _candidates(qc, keys_c, kk)  # (b, kk) each, largest product first
    exact = exact_scores(q32, keys32[cand])  # (b, kk)
    order = np.lexsort((cand, -exact), axis=1)[:, :k]  # (b, k') by score, then key row
    sims, rows = np.take_along_axis(exact, order, axis=1), np.take_along_axis(cand, order, axis=1)
    if kk == n:  # every key of the pass was a candidate
        return sims, rows, np.ones(len(q32), dtype=bool)
    return sims, rows, sims[:, -1] > approx[:, -1] + product_error(dtype, keys32.shape[1])


def _candidates(qc, keys_c, kk: int) -> tuple[np.ndarray, np.ndarray]:
    """The kk largest products of each query with the keys and their rows, largest first: one product and
    one selection per key tile, the tiles' candidates then cut to kk."""
    import torch

    values, rows = [], []
    key_tile = GPU_TILES[1] if qc.is_cuda else KEY_TILE
    # one similarity buffer, written by every tile's product: a fresh (b, KEY_TILE) result per product
    # costs its page faults (128 MiB per float32 tile), about a fifth of the product's own time
    buffer = torch.empty(len(qc) * min(key_tile, len(keys_c)), dtype=qc.dtype, device=qc.device)
    for start in range(0, len(keys_c), key_tile):
        tile = keys_c[start : start + key_tile]
        sims = torch.mm(qc, tile.T, out=buffer[: len(qc) * len(tile)].view(len(qc), len(tile)))  # (b, tile)
        v, i = tile_topk(sims, min(kk, sims.shape[1]))  # (b, kk) each
        values.append(v)
        rows.append(i + start)
    v, r = torch.cat(values, dim=1), torch.cat(rows, dim=1)  # (b, tiles x kk)
    if v.shape[1] > kk:
        v, j = torch.topk(v, kk, dim=1)  # (b, kk)
        r = torch.gather(r, 1, j)
    return v.float().cpu().numpy(), r.cpu().numpy()


def tile_topk(sims, kk: int):
    """torch.topk(sims, kk, dim=1) for a (b, n) tile, about twice as fast: the columns fall into
    SELECT_GROUPS strided groups (j, j + n/g, j + 2n/g, ...); the kk groups with the largest maxima hold
    the kk largest values (a group ranked below them has kk larger maxima above its own), so only their
    kk x g values are ranked. Values beyond the kk returned are at most the kk-th (what the check needs)."""
    import torch

    b, n = sims.shape
    g = SELECT_GROUPS
    if n % g or n // g < kk:
        return torch.topk(sims, kk, dim=1)
    width = n // g
    group_max = sims.view(b, g, width).amax(dim=1)  # (b, width): max of column j, j + width, ...
    _, best = torch.topk(group_max, kk, dim=1)  # (b, kk) groups
    columns = (best[:, :, None] + width * torch.arange(g, device=sims.device)).reshape(
        b, kk * g
    )  # (b, kk x g)
    v, j = torch.topk(torch.gather(sims, 1, columns), kk, dim=1)  # (b, kk)
    return v, torch.gather(columns, 1, j)
