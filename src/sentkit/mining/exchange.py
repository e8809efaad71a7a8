"""Neighbour lists completed by the other direction's: a pair either search found is a neighbour both ways.

Mining searches twice, each side's rows against the other's. When x's search finds y among x's k nearest,
x is a candidate neighbour of y too, with the same exact similarity. An exact search already holds every
such pair wherever it belongs in y's list; an approximate one misses some, and each miss lowers a k-NN mean
(raising the margins around it) and can lose the pair itself. Merging each row's own list with the rows
whose lists named it brings both directions' lists closer to the exact ones at no search cost: no vector is
read, only the two (n, k) lists.
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 19  # rows of the other direction's lists read at a time


def exchanged(
    sims: np.ndarray, nn: np.ndarray, other_sims: np.ndarray, other_nn: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """(sims (n, k), nn (n, k), gained): each of the n query rows' k best of its own list (`sims`, `nn`: key
    rows, -1 none, best first) and of the other direction's pairs that name it (`other_nn[j, c] == q` makes
    key j a candidate of query q at `other_sims[j, c]`), ordered by similarity then key row; `gained` counts
    the list entries that came from the other direction. A pair on both lists keeps its own list's value."""
    out_s, out_i = np.empty_like(sims), np.empty_like(nn)
    gained = exchanged_into(sims, nn, other_sims, other_nn, out_s, out_i)
    return out_s, out_i, gained


def exchanged_into(sims, nn, other_sims, other_nn, out_s, out_i, chunk: int | None = None) -> int:
    """`exchanged`, written into `out_s`, `out_i` (arrays or memory maps of the lists' shape), reading every
    list `chunk` rows at a time, so the lists may stay on disk; returns `gained`. The other direction's pairs
    are merged one chunk after another: under the order (similarity, then key row) the k best of a union are
    the k best of the k best of its parts, so the lists are `exchanged`'s whatever the chunk."""
    n, k = nn.shape
    chunk = chunk or CHUNK
    for start in range(0, n, chunk):
        out_s[start : start + chunk], out_i[start : start + chunk] = (
            sims[start : start + chunk],
            nn[start : start + chunk],
        )
    for start in range(0, len(other_nn), chunk):
        _merge_chunk(
            out_s,
            out_i,
            nn,
            np.asarray(other_sims[start : start + chunk]),
            np.asarray(other_nn[start : start + chunk]),
            start,
        )
    gained = 0
    for start in range(0, n, chunk):  # entries not on the row's own list came from the other direction
        own, now = np.asarray(nn[start : start + chunk]), np.asarray(out_i[start : start + chunk])
        mine = (now[:, :, None] == own[:, None, :]).any(axis=2)  # (c, k)
        gained += int(((now >= 0) & ~mine).sum())
    return gained


def _merge_chunk(out_s, out_i, own_nn, other_sims: np.ndarray, other_nn: np.ndarray, first: int) -> None:
    """Merge the pairs of the other direction's rows first.. (`other_sims`, `other_nn`) into the lists; a pair
    already on a row's own list (`own_nn`) keeps its own value."""
    k = out_i.shape[1]
    rev_key, col = np.nonzero(other_nn >= 0)  # the other direction's query row is a key here
    rev_q = other_nn[rev_key, col]
    rev_s = other_sims[rev_key, col]
    rev_key = rev_key + first
    # only a pair at least as similar as the query's k-th, and not on its list already, can enter it
    new = rev_s >= np.asarray(out_s[rev_q, -1])
    rev_key, rev_q, rev_s = rev_key[new], rev_q[new], rev_s[new]
    new = ~(np.asarray(own_nn[rev_q]) == rev_key[:, None]).any(axis=1)
    rev_key, rev_q, rev_s = rev_key[new].astype(out_i.dtype), rev_q[new], rev_s[new]
    if not len(rev_q):
        return
    rows = np.unique(rev_q)  # the queries whose lists change
    q = np.concatenate([np.repeat(rows, k), rev_q])
    key = np.concatenate([np.asarray(out_i[rows]).ravel(), rev_key])
    sim = np.concatenate([np.asarray(out_s[rows]).ravel(), rev_s])
    order = np.lexsort((np.where(key < 0, np.iinfo(np.int64).max, key), -sim, q))  # best first, then key
    q, key, sim = q[order], key[order], sim[order]
    rank = np.arange(len(q)) - np.searchsorted(q, q, side="left")  # position in the query's merged list
    keep = rank < k
    out_s[q[keep], rank[keep]] = sim[keep]
    out_i[q[keep], rank[keep]] = key[keep]


def both_exchanged(x_sims, x_nn, y_sims, y_nn, outputs=None) -> tuple[tuple, tuple, tuple[int, int]]:
    """((x_sims, x_nn), (y_sims, y_nn), (gained forward, gained backward)): the forward lists (each x's
    neighbours among the y rows) and the backward lists, each completed by the other's pairs (`exchanged`);
    `outputs`: the four arrays to write them into (memory maps of a work folder), else new arrays."""
    if outputs is None:
        outputs = tuple(np.empty_like(a) for a in (x_sims, x_nn, y_sims, y_nn))
    xs, xn, ys, yn = outputs
    gained_x = exchanged_into(x_sims, x_nn, y_sims, y_nn, xs, xn)
    gained_y = exchanged_into(y_sims, y_nn, x_sims, x_nn, ys, yn)
    return (xs, xn), (ys, yn), (gained_x, gained_y)
