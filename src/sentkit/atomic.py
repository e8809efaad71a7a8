"""Atomic writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sentkit.errors import OutputPathError


def _umask() -> int:
    """The process umask, read without changing it where Linux exposes it (os.umask can only swap)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable_file(path: str | Path) -> Path:
    """Fail now, before any work, if `path` cannot become a file (a directory, under a file, read-only)."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{path}: is a directory; expected the path of a file to write")
    _check_creatable(path)
    return path


def check_writable_dir(path: str | Path) -> Path:
    """Fail now, before any work, if files cannot be written into the folder `path` (or it cannot be made)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{path}: is a file; expected a folder to write into")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputPathError(f"{path}: folder is not writable")
        return path
    _check_creatable(path)
    return path


def _check_creatable(path: Path) -> None:
    # the nearest existing ancestor must be a writable directory; nothing is created here
    for parent in path.absolute().parents:
        if not parent.exists():
            continue
        if not parent.is_dir():
            raise OutputPathError(f"{path}: cannot be created because {parent} is a file, not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputPathError(f"{path}: cannot be created because {parent} is not writable")
        return


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary sibling and one rename; the file gets 0o666 & ~umask."""
    with _atomic_handle(path, "wb") as fh:
        fh.write(data)


@contextmanager
def _atomic_handle(path: str | Path, mode: str, **options) -> Iterator:
    """A handle on a temporary sibling of `path`, flushed, given open()'s mode bits (mkstemp makes 0600),
    synced and renamed over `path` when the block ends without an error; on an error nothing replaces it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **options) as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Strict JSON: NaN and Infinity are refused (naming the key) instead of written as invalid JSON."""
    atomic_write_text(path, to_json(obj, where=str(path)) + "\n")


def to_json(obj: Any, where: str = "JSON") -> str:
    """Indented strict JSON (numpy scalars and paths allowed); NaN/Infinity raise ValueError naming the key."""
    bad = find_non_finite(obj)
    if bad is not None:
        raise ValueError(f"{where}: refusing to write a non-finite number at {bad} (not valid JSON)")
    return json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default, allow_nan=False)


def find_non_finite(obj: Any, where: str = "$") -> str | None:
    """JSON path (`$.tasks.stsb.main_score`) of the first NaN/Infinity in `obj`, numpy scalars included."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            found = find_non_finite(value, f"{where}.{key}")
            if found is not None:
                return found
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            found = find_non_finite(value, f"{where}[{i}]")
            if found is not None:
                return found
    elif isinstance(obj, float) or (hasattr(obj, "dtype") and getattr(obj, "ndim", None) == 0):
        try:
            if not math.isfinite(float(obj)):
                return where
        except (TypeError, ValueError):
            return None
    return None


def _json_default(obj: Any) -> Any:
    # numpy scalars and paths show up in configs and scores
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def apply_default_modes(folder: str | Path) -> None:
    """Give `folder`, every folder in it 0o777 & ~umask and every file 0o666 & ~umask: the modes open()
    and mkdir() give, which writers that go through temporary files (mkstemp, safetensors: 0600) do not."""
    mask = _umask()
    folder = Path(folder)
    os.chmod(folder, 0o777 & ~mask)
    for root, dirs, files in os.walk(folder):  # symlinks are left alone (chmod would follow them)
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o666 & ~mask)


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it replaces `path` in one rename, with the modes
    a plain mkdir / open would have given (folders 0o777 & ~umask, files 0o666 & ~umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        apply_default_modes(tmp)  # mkdtemp makes 0700 folders, safetensors 0600 files
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            if old.exists():
                shutil.rmtree(old)
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_text_writer(path: str | Path):
    """A UTF-8 text handle on a temporary sibling of `path`, renamed over it when the block ends without an
    error (streamed output too large to build in memory first); on an error nothing replaces `path`."""
    return _atomic_handle(path, "w", encoding="utf-8", newline="\n")
