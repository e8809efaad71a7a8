"""An exported ONNX folder (see export.py) as an encoder.

`OnnxEncoder` tokenizes with the exported tokenizer exactly as `TransformerEncoder` does (same prefix, same
truncation accounting), sorts each window of sentences by token count so a batch pads little, and runs the
graph with onnxruntime on `threads` intra-op threads (openvino/encoder.py runs an OpenVINO folder the same
way). The runtime knows no exporter: export.py imports this module, never the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentkit.encoders.onnx.contract import INPUTS, META_FILE, require_onnx
from sentkit.encoders.protocol import length_sorted_batches, lowercase_inputs, padded_batch
from sentkit.errors import DataFormatError


class OnnxEncoder:
    """Sentence vectors from an exported folder: `encode(sentences, batch_size) -> (n, dim) float32`."""

    runtime = "onnxruntime"

    def __init__(self, folder: str | Path, threads: int | None = None, name: str | None = None) -> None:
        self.require()
        from transformers import AutoTokenizer

        self.folder = Path(folder)
        meta_path = self.folder / META_FILE
        try:
            self.meta = json.loads(meta_path.read_text())
        except FileNotFoundError:
            raise DataFormatError(meta_path, None, "an ONNX folder written by `sentkit export`") from None
        except ValueError as err:
            raise DataFormatError(meta_path, None, f"JSON ({err})") from None
        self.name = name or str(self.meta.get("source") or self.folder.name)
        self.prefix = self.meta["prefix"]
        self.max_length = int(self.meta["max_length"])
        self.pooling = self.meta["pooling"]
        self.normalize = bool(self.meta["normalize"])
        self.dim = int(self.meta["dim"])
        langs = self.meta.get("languages")
        self.languages = tuple(langs) if langs is not None else None
        self.truncated = 0
        self.truncated_texts: set[str] = set()
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder))
        if self.meta.get("do_lower_case"):
            lowercase_inputs(self.tokenizer)
        if threads is None:
            import torch

            threads = torch.get_num_threads()
        self.threads = int(threads)
        self.run = self.open(self.folder / self.meta["model_file"])
        # what a results file records about how the vectors were computed (evaluate.py)
        self.runtime_info = {
            "runtime": self.runtime,
            "threads": self.threads,
            "int8": self.meta.get("int8"),
            "check": self.meta.get("check"),
        }

    def require(self) -> None:
        require_onnx()

    def open(self, path: Path):
        """A function from a feed dict to the sentence vectors (n, dim) of one batch."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # the CPU provider's "some nodes were not assigned" notes are expected
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return lambda feed: self.session.run(None, feed)[0]

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors in input order; inputs longer than `max_length` tokens are cut and recorded."""
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        pad = self.meta["pad_token_id"]
        for positions, features, rows, width in length_sorted_batches(
            self, sentences, batch_size, show_progress
        ):
            # right-padded whatever the tokenizer's side: the graph pools [CLS] from position 0
            feed = padded_batch(features, rows, width, {"input_ids": pad}, keys=INPUTS)
            out[positions] = self.run(feed)
        return out
