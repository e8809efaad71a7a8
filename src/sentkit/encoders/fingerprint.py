"""What identifies an encoder's output: a digest of its weights and of every setting that shapes its vectors.

Encoded shards record it, so a rerun with another model, another checkpoint under the same folder name,
another export or an edited model file refuses to mix vectors into the same output. Besides the weights it
covers the pipeline as loaded: pooling (mode, include_prompt), the Dense layers' configs (their activation is
not a weight), normalisation, the prompt, max length, lower-casing, the transformers model config, and the
tokenizer (its full tokenizers-library definition or vocabulary files, special tokens and settings). An ONNX
export is known by its graph file's sha256 and its recorded settings; a static encoder by its embedding
table; any other encoder by the bytes of its vectors for a few fixed sentences.

Paths and names are left out (the same model loaded from another directory has the same fingerprint); a
library upgrade that changes a tokenizer's or config's saved form changes the fingerprint, which is the safe
direction.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

# the encoder attributes besides the weights that change what a sentence encodes to
_SHAPING = ("pooling", "max_length", "prefix", "normalize", "combine", "include_prompt", "lowercase")
# what an ONNX export's sentkit_onnx.json records about where it came from, not how it encodes
_DESCRIPTIVE_META = ("source", "source_absolute", "languages", "files", "versions")
# tokenizer settings that say where it was loaded from, not how it tokenizes
_TOKENIZER_PROVENANCE = ("name_or_path", "is_local", "local_files_only", "cache_dir", "revision", "token")
_PROBES = (
    "The quick brown fox jumps over the lazy dog.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "素早い茶色の狐が怠け者の犬を飛び越える。",
    "",
)


def model_fingerprint(encoder) -> str:
    """`kind:sha256` identifying the vectors `encoder` produces (see the module docstring)."""
    digest = hashlib.sha256(type(encoder).__name__.encode())
    for name in _SHAPING:
        if hasattr(encoder, name):
            digest.update(f"{name}={getattr(encoder, name)!r};".encode())
    for layer in getattr(encoder, "dense", None) or ():  # TransformerEncoder's Dense layers
        digest.update(_canonical(layer.config()))
    tokenizer = getattr(encoder, "tokenizer", None)
    if tokenizer is not None:
        digest.update(tokenizer_fingerprint(tokenizer).encode())
    config = getattr(getattr(encoder, "model", None), "config", None)
    if callable(getattr(config, "to_dict", None)):  # a transformers model: activation, eps, positions, ...
        settings = {k: v for k, v in config.to_dict().items() if not k.startswith("_")}
        settings.pop("transformers_version", None)
        digest.update(_canonical(settings))
    meta = getattr(encoder, "meta", None)
    if isinstance(meta, dict) and meta.get("sha256"):  # OnnxEncoder: the export's settings and graph
        digest.update(_canonical({k: v for k, v in meta.items() if k not in _DESCRIPTIVE_META}))
        graph = Path(getattr(encoder, "folder", "")) / str(meta.get("model_file", ""))
        if graph.is_file():  # the graph loaded, not only the digest recorded beside it
            from sentkit.cache import sha256_file

            digest.update(sha256_file(graph).encode())
        return f"onnx:{digest.hexdigest()}"
    if hasattr(encoder, "text") and hasattr(encoder, "amr"):  # RetrofitEncoder: both parts
        digest.update(model_fingerprint(encoder.text).encode())
        digest.update(model_fingerprint(encoder.amr).encode())
        return f"retrofit:{digest.hexdigest()}"
    state_dict = getattr(encoder, "state_dict", None)
    if callable(state_dict):  # a torch module: every parameter and buffer, by name
        for key, tensor in state_dict().items():
            value = tensor.detach().cpu().contiguous()
            digest.update(f"{key}:{value.dtype}:{tuple(value.shape)};".encode())
            digest.update(value.view(-1).view(dtype=_byte_dtype()).numpy().tobytes())
        return f"weights:{digest.hexdigest()}"
    embeddings = getattr(encoder, "embeddings", None)
    if isinstance(embeddings, np.ndarray):  # StaticAverageEncoder
        digest.update(np.ascontiguousarray(embeddings).tobytes())
        return f"weights:{digest.hexdigest()}"
    vectors = np.asarray(encoder.encode(list(_PROBES), batch_size=len(_PROBES)), dtype=np.float32)
    digest.update(vectors.tobytes())
    return f"probe:{digest.hexdigest()}"


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 of how a Hugging Face tokenizer turns text into ids: a fast tokenizer's whole definition (the
    tokenizer.json content: normaliser, pre-tokenizer, vocabulary, added tokens, post-processor) with the
    per-call truncation and padding left out, the contents of its vocabulary files (a slow tokenizer's
    vocabulary), its special tokens and its settings (do_lower_case, model_max_length, sides, ...)."""
    digest = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        digest.update(_definition(backend).encode())
    settings = dict(getattr(tokenizer, "init_kwargs", {}) or {})
    for key in _TOKENIZER_PROVENANCE:
        settings.pop(key, None)
    for key, value in sorted(settings.items()):
        if key.endswith("_file"):  # a path: the file's content counts, not where it is
            settings[key] = _file_digest(value)
    digest.update(_canonical(settings))
    digest.update(
        _canonical(
            {
                "special": tokenizer.special_tokens_map,
                "special_ids": list(getattr(tokenizer, "all_special_ids", [])),
                "model_max_length": getattr(tokenizer, "model_max_length", None),
                "padding_side": getattr(tokenizer, "padding_side", None),
                "truncation_side": getattr(tokenizer, "truncation_side", None),
                "pad_token_id": getattr(tokenizer, "pad_token_id", None),
            }
        )
    )
    return digest.hexdigest()


def _definition(backend) -> str:
    """A fast tokenizer's tokenizer.json content, without the truncation and padding that each call sets from
    its own max_length (switched off while it is serialised, then restored). The text is hashed as written:
    parsing a 250k-entry vocabulary to re-serialise it would take seconds."""
    truncation, padding = backend.truncation, backend.padding
    backend.no_truncation()
    backend.no_padding()
    try:
        return backend.to_str()
    finally:
        if truncation is not None:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)


def _file_digest(value) -> str | None:
    if not isinstance(value, str | Path) or not Path(value).is_file():
        return None
    return hashlib.sha256(Path(value).read_bytes()).hexdigest()


def _canonical(value) -> bytes:
    """Stable bytes of a JSON-like value; other objects (AddedToken) by their repr, which lists their
    settings, or by their type where the repr is only an address."""
    return json.dumps(value, sort_keys=True, default=_stable_repr, ensure_ascii=False).encode()


def _stable_repr(value) -> str:
    text = repr(value)
    return type(value).__qualname__ if " at 0x" in text else text


def _byte_dtype():
    import torch

    return torch.uint8
