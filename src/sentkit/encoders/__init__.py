"""Encoders: anything with `encode(sentences, batch_size) -> np.ndarray`; short names resolve to packaged models."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sentkit.encoders.e5_q4 import load_e5_small
from sentkit.encoders.muse import MuseEncoder
from sentkit.encoders.packaged import load_minilm_en
from sentkit.encoders.protocol import Encoder
from sentkit.registry import Registry

ENCODERS: Registry[Callable[..., Encoder]] = Registry("encoder")

# Registry lines (short name -> loader). Filled by explicit imports below.
ENCODERS.add("e5-small-m", load_e5_small)
ENCODERS.add("minilm-en", load_minilm_en)
ENCODERS.add("muse-m", MuseEncoder)


def load_encoder(name_or_path: str | Path, **kwargs) -> Encoder:
    """A short name (`minilm-en`, `muse-m`, `e5-small-m`, `avg:<model>`), a local directory, or a hub name.

    `NAME@onnx`, `NAME@int8` and the other suffixes of export_cache.VARIANTS run an export of NAME (made in
    the cache on first use); a folder written by `sentkit export` loads as an `OnnxEncoder` (or an
    `OpenVinoEncoder` for an OpenVINO folder).
    """
    name = str(name_or_path)
    if name.startswith("avg:"):
        from sentkit.encoders.static import StaticAverageEncoder

        return StaticAverageEncoder.from_encoder(load_encoder(name[4:], **kwargs))
    if name.startswith("retrofit:"):  # its AMR side lives in sentkit.amr, above this package
        raise ValueError(
            f"{name!r}: retrofit:<text model>+<amr model> names load with sentkit.load_encoder, "
            "which adds the AMR encoder"
        )
    path = Path(name).expanduser()
    # NAME@int8, NAME@onnx, NAME@openvino ...: exported once into the cache (export_cache.py)
    if "@" in name and not path.exists():
        from sentkit.encoders.export_cache import cached_export

        base, _, variant = name.rpartition("@")
        return cached_export(base, variant, **kwargs)
    if name in ENCODERS:
        return ENCODERS.get(name)(**kwargs)
    from sentkit.encoders.export_cache import is_onnx_folder, open_export
    from sentkit.encoders.transformer import TransformerEncoder

    if path.is_dir() and is_onnx_folder(path):  # written by `sentkit export`
        return open_export(path, **kwargs)
    if path.exists():
        return TransformerEncoder.from_pretrained(path, **kwargs)
    if "/" in name:  # a hub name: passed through for users with internet access
        return TransformerEncoder.from_pretrained(name, **kwargs)
    # raises with a "did you mean" hint
    ENCODERS.get(name)
    raise AssertionError("unreachable")


__all__ = ["ENCODERS", "Encoder", "load_encoder"]
