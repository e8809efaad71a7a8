"""What an exported sentence-graph folder promises whichever runtime runs it: its file names, the graph's
inputs and output, and the batches it is fed.

Both runtimes (onnx/encoder.py, openvino/encoder.py) and both exporters read this; it imports neither.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from types import SimpleNamespace

import numpy as np

from sentkit.encoders.protocol import length_sorted_batches, padded_batch

META_FILE = "sentkit_onnx.json"  # the contract: prefix, max length, pooling, Dense layers, checksums
CACHE_KEY_FILE = "sentkit_cache_key.json"  # written beside an export in the sentkit cache (export_cache.py)
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"


def require_onnx() -> None:
    missing = [m for m in ("onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"ONNX export needs {' and '.join(missing)}: pip install 'sentkit[onnx]'")


def graph_feeds(encoder, sentences: Sequence[str], batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    """`{"input_ids", "attention_mask"}` int64 batches of `sentences` as the exported graph is fed: the
    encoder's prefix, tokenizer and truncation, length-sorted (the encoder's truncation counts untouched)."""
    view = SimpleNamespace(
        name=encoder.name,
        prefix=encoder.prefix,
        tokenizer=encoder.tokenizer,
        max_length=encoder.max_length,
        truncated=0,
        truncated_texts=set(),
    )
    pad = int(encoder.tokenizer.pad_token_id or 0)
    for _, features, rows, width in length_sorted_batches(view, list(sentences), batch_size):
        yield padded_batch(features, rows, width, {"input_ids": pad}, keys=INPUTS)
