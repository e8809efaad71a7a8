"""sentkit's on-disk cache of converted and exported models: where it lives, one lock per entry, and the
pieces its keys are built from (file checksums, package versions, recorded JSON)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
from pathlib import Path


def cache_root() -> Path:
    """$SENTKIT_CACHE, by default ~/.cache/sentkit."""
    return Path(os.environ.get("SENTKIT_CACHE", "~/.cache/sentkit")).expanduser()


@contextlib.contextmanager
def cache_lock(folder: Path):
    """An exclusive fcntl lock beside `folder`, so concurrent loads build one at a time and never
    rename each other's folder away (the lock file stays; it is empty)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "a+b") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_version(name: str) -> str:
    """The installed version of a distribution, or "not installed"."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def read_json_object(path: Path) -> dict | None:
    """A JSON object read from `path`, or None when the file is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
