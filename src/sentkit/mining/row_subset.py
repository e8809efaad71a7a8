"""One side's vector set without the rows that are not mined (blank texts, zero vectors).

A zero vector has cosine 0 with everything and a k-NN mean of 0, so its ratio margins are 0/0 (NaN); a blank
line is not a sentence, and blank lines' identical vectors would pair with each other. Such rows are left out
of the search on both sides; the rows kept keep their own ids (`FILE:ROW` counts every row of the file).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


class RowSubset:
    """The rows `kept` (sorted positions) of the vector set `vectors`, numbered 0..len(kept)-1."""

    def __init__(self, vectors, kept: np.ndarray) -> None:
        self.vectors = vectors
        self.kept = np.asarray(kept, dtype=np.int64)  # (n,) position in `vectors` of each row here
        self.model = vectors.model

    @property
    def n(self) -> int:
        return len(self.kept)

    @property
    def dim(self) -> int:
        return self.vectors.dim

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        start = 0
        if not len(self.kept):
            return
        between = getattr(self.vectors, "blocks_between", None)  # only the blocks holding kept rows
        blocks = between(int(self.kept[0]), int(self.kept[-1]) + 1) if between else self.vectors.blocks()
        for first, block in blocks:
            lo, hi = np.searchsorted(self.kept, [first, first + len(block)])
            if hi > lo:
                yield start, np.ascontiguousarray(block[self.kept[lo:hi] - first])  # (hi - lo, dim)
                start += int(hi - lo)

    def take(self, rows: np.ndarray) -> np.ndarray:
        return self.vectors.take(self.kept[np.asarray(rows, dtype=np.int64)])

    def ids(self, rows: Sequence[int]) -> list[str]:
        return self.vectors.ids(self.kept[np.asarray(rows, dtype=np.int64)])

    def texts(self, rows: Sequence[int]) -> list[str]:
        return self.vectors.texts(self.kept[np.asarray(rows, dtype=np.int64)])


def zero_rows(vectors) -> np.ndarray:
    """Positions of the rows of `vectors` whose vector is all zeros (one pass over its blocks)."""
    found = [start + np.flatnonzero(~block.any(axis=1)) for start, block in vectors.blocks()]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
