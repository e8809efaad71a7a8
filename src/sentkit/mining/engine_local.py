"""The in-process engine of `sentkit mine`: one key part, the whole searched side, in this process."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from sentkit.mining.key_part import KeyPart, SearchPlan


class LocalEngine:
    """Searches each direction's keys in this process (key_part.KeyPart over the whole side)."""

    kind = "local"

    def __init__(self) -> None:
        self.part: KeyPart | None = None

    def open(self, keys, plan: SearchPlan, trained: np.ndarray | None) -> None:
        """Hold `keys` (the direction's searched side) for the searches that follow."""
        self.part = KeyPart(keys, 0, plan, trained)

    def tuning_search(self, queries: np.ndarray, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
        return self.part.tuning_search(queries, nprobe)

    def exact(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.part.exact(queries)

    def search_blocks(
        self, blocks: Iterable[tuple[int, np.ndarray]], nprobe: int | None
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(block id, sims, rows) of each (block id, unit query rows), in order."""
        for block, queries in blocks:
            yield (block, *self.part.search(queries, nprobe))

    def close(self) -> list[dict]:
        """The part's record; the keys are let go."""
        records = [self.part.record()] if self.part is not None else []
        self.part = None
        return records

    def record(self) -> dict:
        return {"kind": self.kind, "workers": 1, "key_parts": 1}

    def shutdown(self) -> None:
        self.part = None
