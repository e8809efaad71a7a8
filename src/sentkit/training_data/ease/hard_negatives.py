"""EASE's hard negative entity (Nishikawa et al. 2022, sec. 3.2): an entity of the same type as the
positive that is not linked anywhere on the sentence's page."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np


class HardNegativeMiner:
    """Draws, for a positive entity id, a same-type entity id absent from a given page's entity ids."""

    def __init__(self, entity_types: Mapping[int, str], seed: int = 0) -> None:
        self.entity_types = dict(entity_types)
        by_type: dict[str, list[int]] = {}
        for entity, kind in sorted(self.entity_types.items()):
            by_type.setdefault(kind, []).append(entity)
        self.by_type = {kind: np.asarray(ids, dtype=np.int64) for kind, ids in by_type.items()}
        self.rng = np.random.default_rng(seed)

    def sample(self, positive: int, page_entities: Collection[int]) -> int | None:
        """A same-type entity not in `page_entities` (nor the positive itself); None when there is none."""
        pool = self.by_type.get(self.entity_types.get(positive, ""))
        if pool is None:
            return None
        # rejection sampling first: pages link few entities of any one type, so a draw rarely collides
        for _ in range(8):
            candidate = int(pool[self.rng.integers(len(pool))])
            if candidate != positive and candidate not in page_entities:
                return candidate
        allowed = [int(e) for e in pool if e != positive and int(e) not in page_entities]
        return int(allowed[self.rng.integers(len(allowed))]) if allowed else None
