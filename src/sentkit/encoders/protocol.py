"""What evaluation needs from any encoder: sentences in, one float32 row per sentence out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from tqdm.auto import tqdm

# length_sorted_batches tokenizes and sorts this many sentences at a time (bounds the token ids held)
SORT_WINDOW = 16384


@runtime_checkable
class Encoder(Protocol):
    """`languages`: the encoder's training languages (ISO 639-1) or None when it does not say;
    `truncated_texts`: the inputs it cut at its window so far (optional; tasks count them)."""

    name: str

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:  # (n, dim) float32
        ...


def checked_encode(
    encoder: Encoder, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
) -> np.ndarray:
    """`encoder.encode`, checked where vectors leave for a file or a task: one finite float32 row per
    sentence. NaN or Infinity (NaN weights, an overflow) raises NonFiniteVectors naming the model."""
    from sentkit.errors import NonFiniteVectors

    vectors = np.asarray(
        encoder.encode(sentences, batch_size=batch_size, show_progress=show_progress), dtype=np.float32
    )
    if not len(sentences):
        return vectors
    if vectors.ndim != 2 or vectors.shape[0] != len(sentences):
        raise RuntimeError(f"encoder returned shape {vectors.shape} for {len(sentences)} sentences")
    bad_rows = int((~np.isfinite(vectors)).any(axis=1).sum())
    if bad_rows:
        raise NonFiniteVectors(
            f"model {encoder.name!r} produced non-finite vectors (NaN or Infinity) for {bad_rows} of "
            f"{len(sentences)} sentences; are its weights NaN?"
        )
    return vectors


def lowercase_inputs(tokenizer) -> None:
    """Lowercase every input first (a model's `do_lower_case: true`), as sentence-transformers 6 does: a
    Lowercase step put before the fast tokenizer's normaliser, unless it has one.

    transformers 5 rebuilds a BERT tokenizer's normaliser from its own settings when it is loaded again, so
    the step is redone at each load from the model's files, not kept in the saved tokenizer.
    """
    from tokenizers.normalizers import Lowercase
    from tokenizers.normalizers import Sequence as NormalizerSequence

    backend = tokenizer.backend_tokenizer
    current = backend.normalizer
    steps = list(current) if isinstance(current, NormalizerSequence) else [current] if current else []
    if not any(isinstance(step, Lowercase) for step in steps):
        backend.normalizer = NormalizerSequence([Lowercase(), *steps])


def check_batch_size(batch_size: int) -> int:
    """`batch_size` as an int, or a ValueError: zero or negative sizes would return uninitialised rows."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def length_order(sentences: Sequence[str]) -> np.ndarray:
    """Indices that sort sentences longest first, so each batch pads to a similar length."""
    return np.argsort([-len(s) for s in sentences], kind="stable")


def tokenize_window(tokenizer, texts: Sequence[str], max_length: int, **kwargs):
    """Tokenize with truncation at `max_length`, and say which rows lost tokens to it.

    Tokenizes at max_length + 1 first (a row that reaches it was longer than the window), then re-tokenizes
    only those rows at max_length, so the ids equal a plain truncating call. Returns (features, cut rows).
    """
    features = tokenizer(list(texts), truncation=True, max_length=max_length + 1, **kwargs)
    cut = [i for i, ids in enumerate(features["input_ids"]) if len(ids) > max_length]
    if cut:
        again = tokenizer([texts[i] for i in cut], truncation=True, max_length=max_length, **kwargs)
        for key in again.keys():
            for j, i in enumerate(cut):
                features[key][i] = again[key][j]
    return features, cut


def length_sorted_batches(
    encoder, sentences: Sequence[str], batch_size: int, show_progress: bool = False
) -> Iterator[tuple[np.ndarray, dict, np.ndarray, int]]:
    """The batches an encoder runs: `(positions, features, rows, width)` per batch, longest first.

    Sentences are prefixed with `encoder.prefix`, tokenized a window at a time (truncating at
    `encoder.max_length`; cut inputs are added to `encoder.truncated` / `truncated_texts`) and sorted by
    token count, so a batch pads little. `features` is the window's unpadded tokenizer output, `rows` the
    batch's indices into it, `positions` the same rows as indices into `sentences`, `width` the longest row.
    """
    batch_size = check_batch_size(batch_size)
    window = max(batch_size, SORT_WINDOW // batch_size * batch_size)
    with tqdm(
        total=-(-len(sentences) // batch_size),
        desc=f"encode {encoder.name}",
        disable=not show_progress,
        leave=False,
    ) as bar:
        for first in range(0, len(sentences), window):
            texts = [encoder.prefix + s for s in sentences[first : first + window]]
            features, cut = tokenize_window(encoder.tokenizer, texts, encoder.max_length)
            encoder.truncated += len(cut)
            encoder.truncated_texts.update(sentences[first + i] for i in cut)
            lengths = np.array([len(ids) for ids in features["input_ids"]])
            order = np.argsort(-lengths, kind="stable")
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                yield first + rows, features, rows, int(lengths[rows].max())
                bar.update()


def padded_batch(
    features,
    rows: np.ndarray,
    width: int,
    fill: dict[str, int],
    left: bool = False,
    keys: Sequence[str] = ("input_ids", "attention_mask", "token_type_ids"),
) -> dict[str, np.ndarray]:
    """Rows `rows` of unpadded tokenizer output as (len(rows), width) int64 arrays, one per key present;
    padding is `fill[key]` (0 when not given), on the left when `left`, as a tokenizer pads."""
    batch = {}
    for key in keys:
        if key not in features:
            continue
        out = np.full((len(rows), width), fill.get(key, 0), dtype=np.int64)  # (batch, seq)
        for r, i in enumerate(rows):
            values = features[key][i]
            if left:
                out[r, width - len(values) :] = values
            else:
                out[r, : len(values)] = values
        batch[key] = out
    return batch
