"""What identifies an encoder's output: a digest of its weights and the settings that shape its vectors.

Encoded shards record it, so a rerun with another model, another checkpoint under the same folder name or
another export refuses to mix vectors into the same output. An ONNX export is known by its graph's
recorded sha256; a torch encoder by its parameters and buffers; a static one by its embedding table; any
other encoder by the bytes of its vectors for a few fixed sentences.
"""

from __future__ import annotations

import hashlib

import numpy as np

# the settings besides the weights that change what a sentence encodes to
_SHAPING = ("pooling", "max_length", "prefix", "normalize", "combine")
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
    meta = getattr(encoder, "meta", None)
    if isinstance(meta, dict) and meta.get("sha256"):  # OnnxEncoder: the export's recorded graph digest
        digest.update(str(meta["sha256"]).encode())
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


def _byte_dtype():
    import torch

    return torch.uint8
