"""Offline contradiction generator: refill each masked chunk with another in-domain noun chunk of its kind.

Stands in for JCSE's fine-tuned T5 infiller (sec. 3.2) when no seq2seq checkpoint is at hand: a chunk
tagged as a disease entity is replaced by another disease chunk of the corpus, a NUM+NOUN chunk by
another NUM+NOUN chunk, drawn in proportion to corpus frequency and never the original text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from sentkit.training_data.jcse.chunk_masking import MaskedSentence
from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence


def coarse_kind(kind: str) -> str:
    """The fallback class of a chunk kind: "ENT" for any entity, else the POS of its last token."""
    return "ENT" if kind.startswith("ENT:") else kind.rsplit("+", 1)[-1]


class ChunkSwapGenerator:
    """k contradictions per anchor by frequency-weighted swaps of same-kind in-domain noun chunks.

    The inventory is tried from fine to coarse: exact kind, coarse kind (`coarse_kind`), any chunk;
    a level is used only when it holds a text other than the chunk being replaced.
    """

    name = "chunk-swap"

    def __init__(self, corpus: Sequence[ParsedSentence], min_count: int = 1) -> None:
        counts: dict[str, Counter] = {}
        for sentence in corpus:
            for chunk in sentence.chunks:
                for level in (chunk.kind, "~" + coarse_kind(chunk.kind), "*"):
                    counts.setdefault(level, Counter())[chunk.text] += 1
        if not counts:
            raise ValueError("the corpus has no noun chunks to draw replacements from")
        self._pools: dict[str, tuple[list[str], np.ndarray]] = {}
        for level, counter in counts.items():
            items = [(t, c) for t, c in counter.most_common() if c >= min_count]
            if items:
                texts, freq = zip(*items, strict=True)
                self._pools[level] = (list(texts), np.cumsum(np.asarray(freq, dtype=np.float64)))

    def replacement(self, chunk: NounChunk, rng: np.random.Generator) -> str | None:
        """A same-kind chunk text other than `chunk.text`, drawn by frequency; None when none exists."""
        for level in (chunk.kind, "~" + coarse_kind(chunk.kind), "*"):
            pool = self._pools.get(level)
            if pool is None or pool[0] == [chunk.text]:
                continue
            texts, cumulative = pool
            # rejection sampling keeps each draw O(log n); the original is redrawn, never returned
            for _ in range(64):
                text = texts[int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))]
                if text != chunk.text:
                    return text
        return None

    def generate(self, masked: Sequence[MaskedSentence], k: int = 4, seed: int = 0) -> list[list[str]]:
        """Up to k distinct contradictions per masked anchor (every chunk replaced), in input order."""
        rng = np.random.default_rng(seed)
        out = []
        for sentence in masked:
            found: dict[str, None] = {}
            for _ in range(10 * k):  # distinct draws; small inventories may give fewer than k
                fillers = [self.replacement(c, rng) for c in sentence.chunks]
                if any(f is None for f in fillers):
                    break
                candidate = sentence.fill(fillers)
                if candidate != sentence.anchor:
                    found.setdefault(candidate, None)
                if len(found) == k:
                    break
            out.append(list(found))
        return out
