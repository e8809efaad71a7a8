"""Noun-chunk masking with a unique sentinel per chunk (JCSE sec. 3.2), and refilling the masks.

A `MaskedSentence` keeps the text between chunks (`segments`, one more than the chunks) so that any
filled sentence differs from its anchor only inside the masked chunks, by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sentkit.training_data.jcse.domain_corpus import NounChunk, ParsedSentence

T5_SENTINEL = "<extra_id_{}>"  # T5 / mT5 span-corruption sentinels, numbered from 0 within a sentence


@dataclass(frozen=True)
class MaskedSentence:
    """An anchor split around its masked chunks: segments[0] chunk[0] segments[1] ... chunk[-1] segments[-1]."""

    anchor: str
    segments: tuple[str, ...]
    chunks: tuple[NounChunk, ...]

    def masked_text(self, sentinel: str = T5_SENTINEL) -> str:
        """The anchor with chunk i replaced by `sentinel.format(i)` (T5: <extra_id_0>, <extra_id_1>, ...)."""
        parts = [self.segments[0]]
        for i, segment in enumerate(self.segments[1:]):
            parts += [sentinel.format(i), segment]
        return "".join(parts)

    def fill(self, fillers: Sequence[str]) -> str:
        """The sentence with chunk i replaced by fillers[i]."""
        if len(fillers) != len(self.chunks):
            raise ValueError(f"expected {len(self.chunks)} fillers, got {len(fillers)}")
        parts = [self.segments[0]]
        for filler, segment in zip(fillers, self.segments[1:], strict=True):
            parts += [filler, segment]
        return "".join(parts)

    def differs_only_inside_chunks(self, sentence: str) -> bool:
        """True when `sentence` = the anchor's segments with non-empty text in every chunk slot,
        at least one slot different from the original chunk."""
        pattern = "".join(
            re.escape(seg) + ("(.+?)" if i < len(self.chunks) else "") for i, seg in enumerate(self.segments)
        )
        match = re.fullmatch(pattern, sentence, flags=re.DOTALL)
        if match is None:
            return False
        return any(got != chunk.text for got, chunk in zip(match.groups(), self.chunks, strict=True))


def mask_noun_chunks(sentence: ParsedSentence, max_chunks: int | None = None) -> MaskedSentence | None:
    """Mask every noun chunk of a parsed sentence (or its first `max_chunks`); None when it has none."""
    chunks = sentence.chunks[:max_chunks] if max_chunks else sentence.chunks
    if not chunks:
        return None
    segments, cursor = [], 0
    for chunk in chunks:
        if chunk.start < cursor or sentence.text[chunk.start : chunk.end] != chunk.text:
            raise ValueError(f"chunk {chunk} does not fit sentence {sentence.text!r} in order")
        segments.append(sentence.text[cursor : chunk.start])
        cursor = chunk.end
    segments.append(sentence.text[cursor:])
    return MaskedSentence(sentence.text, tuple(segments), tuple(chunks))
