"""Encoders for task tests: vectors from a table, or a fixed random vector per distinct sentence."""

from __future__ import annotations

import zlib

import numpy as np


class TableEncoder:
    """Looks each sentence up in `table`; any other sentence gets a random vector seeded by its CRC-32.

    With an empty table this is a hashed random encoder: the same sentence always encodes the same way,
    and the vectors carry no meaning, so every task should score it at chance level.
    """

    name = "table"

    def __init__(self, table: dict[str, np.ndarray | list[float]] | None = None, dim: int = 2):
        self.table, self.dim = table or {}, dim
        self.calls: list[int] = []  # sentences per encode() call

    def encode(self, sentences, batch_size=64, show_progress=False):
        self.calls.append(len(sentences))
        rows = [
            self.table[s]
            if s in self.table
            else np.random.default_rng(zlib.crc32(s.encode())).standard_normal(self.dim)
            for s in sentences
        ]
        return np.asarray(rows, dtype=np.float32).reshape(len(sentences), -1)
