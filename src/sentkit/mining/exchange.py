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


def exchanged(
    sims: np.ndarray, nn: np.ndarray, other_sims: np.ndarray, other_nn: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """(sims (n, k), nn (n, k), gained): each of the n query rows' k best of its own list (`sims`, `nn`: key
    rows, -1 none, best first) and of the other direction's pairs that name it (`other_nn[j, c] == q` makes
    key j a candidate of query q at `other_sims[j, c]`), ordered by similarity then key row; `gained` counts
    the list entries that came from the other direction. A pair on both lists keeps its own list's value."""
    n, k = nn.shape
    out_s, out_i = sims.copy(), nn.copy()
    rev_key, col = np.nonzero(other_nn >= 0)  # the other direction's query row is a key here
    rev_q = other_nn[rev_key, col]
    rev_s = other_sims[rev_key, col]
    # only a pair at least as similar as the query's k-th, and not on its list already, can enter it
    new = rev_s >= sims[rev_q, -1]
    rev_key, rev_q, rev_s = rev_key[new], rev_q[new], rev_s[new]
    new = ~(nn[rev_q] == rev_key[:, None]).any(axis=1)
    rev_key, rev_q, rev_s = rev_key[new].astype(nn.dtype), rev_q[new], rev_s[new]
    if not len(rev_q):
        return out_s, out_i, 0
    rows = np.unique(rev_q)  # the queries whose lists change
    q = np.concatenate([np.repeat(rows, k), rev_q])
    key = np.concatenate([nn[rows].ravel(), rev_key])
    sim = np.concatenate([sims[rows].ravel(), rev_s])
    from_other = np.concatenate([np.zeros(len(rows) * k, dtype=bool), np.ones(len(rev_q), dtype=bool)])
    order = np.lexsort((np.where(key < 0, np.iinfo(np.int64).max, key), -sim, q))  # best first, then key
    q, key, sim, from_other = q[order], key[order], sim[order], from_other[order]
    rank = np.arange(len(q)) - np.searchsorted(q, q, side="left")  # position in the query's merged list
    keep = rank < k
    out_s[q[keep], rank[keep]] = sim[keep]
    out_i[q[keep], rank[keep]] = key[keep]
    return out_s, out_i, int(from_other[keep].sum())


def both_exchanged(x_sims, x_nn, y_sims, y_nn) -> tuple[tuple, tuple, tuple[int, int]]:
    """((x_sims, x_nn), (y_sims, y_nn), (gained forward, gained backward)): the forward lists (each x's
    neighbours among the y rows) and the backward lists, each completed by the other's pairs (`exchanged`)."""
    xs, xn, gained_x = exchanged(x_sims, x_nn, y_sims, y_nn)
    ys, yn, gained_y = exchanged(y_sims, y_nn, x_sims, x_nn)
    return (xs, xn), (ys, yn), (gained_x, gained_y)
