"""The papers' "avg." baseline: mean of a transformer's input word-piece embeddings (no contextualisation)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from sentkit.encoders.protocol import check_batch_size, tokenize_window
from sentkit.encoders.transformer import TransformerEncoder


class StaticAverageEncoder:
    """Average of the first-layer token embeddings over a sentence's non-special word pieces.

    The tokens are exactly those the base transformer sees (same prefix, truncation and
    max length); a sentence with no word pieces encodes to the zero vector. Languages and the
    record of truncated inputs work as in TransformerEncoder.
    """

    def __init__(
        self,
        embeddings: np.ndarray,
        tokenizer,
        max_length: int = 128,
        prefix: str = "",
        name: str = "avg",
        languages: Sequence[str] | None = None,
    ) -> None:
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)  # (vocab, dim)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.prefix = prefix
        self.name = name
        self.languages = tuple(languages) if languages is not None else None
        self.truncated = 0
        self.truncated_texts: set[str] = set()

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    @classmethod
    def from_encoder(cls, encoder: TransformerEncoder) -> StaticAverageEncoder:
        """Take the word-embedding matrix and tokenizer of a transformer encoder; named `avg:<its name>`."""
        if not isinstance(encoder, TransformerEncoder):
            raise TypeError(
                f"avg: needs a transformer encoder with an input embedding matrix, got {type(encoder).__name__}"
            )
        weight = encoder.model.get_input_embeddings().weight.detach().float().cpu().numpy()
        return cls(
            weight,
            encoder.tokenizer,
            encoder.max_length,
            encoder.prefix,
            name=f"avg:{encoder.name}",
            languages=encoder.languages,
        )

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:  # (n, dim) float32
        batch_size = check_batch_size(batch_size)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        starts = range(0, len(sentences), batch_size)
        for start in tqdm(starts, desc=f"encode {self.name}", disable=not show_progress, leave=False):
            texts = [self.prefix + s for s in sentences[start : start + batch_size]]
            enc, cut = tokenize_window(
                self.tokenizer, texts, self.max_length, return_special_tokens_mask=True
            )
            self.truncated += len(cut)
            self.truncated_texts.update(sentences[start + i] for i in cut)
            for row, (ids, special) in enumerate(zip(enc["input_ids"], enc["special_tokens_mask"])):
                pieces = [t for t, s in zip(ids, special) if not s]
                if pieces:
                    out[start + row] = self.embeddings[pieces].mean(0)
        return out
