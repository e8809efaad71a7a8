"""Atomic writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
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
    """Fail now, before any work, if `path` cannot become a file: a directory, a link, a device, a FIFO or
    a socket (`check_output_node`: an output replaces its file whole), under a file, read-only."""
    path = Path(path)
    check_output_node(path, "file")
    _check_creatable(path)
    return path


def check_writable_dir(path: str | Path) -> Path:
    """Fail now, before any work, if files cannot be written into the folder `path` (or it cannot be made):
    a file, a link or any other node where the folder goes is refused (`check_output_node`)."""
    path = Path(path)
    if check_output_node(path, "folder") is not None:
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputPathError(f"{path}: folder is not writable")
        return path
    _check_creatable(path)
    return path


def check_output_node(path: str | Path, expected: str) -> os.stat_result | None:
    """The one rule for every output path (docs/cli.md, "Output paths"): what `path` names, when it exists,
    must be what sentkit writes there, a regular file (`expected` "file") or a folder ("folder"); the path
    itself must not be a symbolic link (folders above it may be), since replacing a file through a
    temporary file and a rename would replace the link, a device or a FIFO with a file. Returns the
    path's lstat, None when nothing is there yet; raises OutputPathError (one line) otherwise."""
    path = Path(path)
    try:
        node = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # not there yet; a file where a folder above it should be is named by _check_creatable
    except OSError as err:  # a link loop above it, a name too long, a folder that cannot be searched
        raise OutputPathError(f"{path}: cannot be used as an output ({err.strerror})") from None
    mode = node.st_mode
    if stat.S_ISLNK(mode):
        raise OutputPathError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); outputs are never written through a "
            f"link: give the real path of the {expected}"
        )
    if expected == "folder" and not stat.S_ISDIR(mode):
        raise OutputPathError(f"{path}: is {_node_kind(mode)}; expected a folder to write into")
    if expected == "file" and stat.S_ISDIR(mode):
        raise OutputPathError(f"{path}: is a directory; expected the path of a file to write")
    if expected == "file" and not stat.S_ISREG(mode):
        raise OutputPathError(
            f"{path}: is {_node_kind(mode)}, not a regular file; an output file is replaced whole, so give "
            "the path of a regular file or a new one"
        )
    return node


def _node_kind(mode: int) -> str:
    """What a file system node is, as a message names it."""
    kinds = (
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check_creatable(path: Path) -> None:
    # the nearest existing ancestor must be a writable directory; nothing is created here
    for parent in path.absolute().parents:
        try:
            node = os.stat(parent)  # folders above an output may be links: followed
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there (or under a file, named when the walk reaches it)
        except OSError as err:  # a link loop
            raise OutputPathError(f"{path}: cannot be created ({parent}: {err.strerror})") from None
        if not stat.S_ISDIR(node.st_mode):
            raise OutputPathError(
                f"{path}: cannot be created because {parent} is {_node_kind(node.st_mode)}, not a folder"
            )
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
    synced and renamed over `path` when the block ends without an error; on an error nothing replaces it.
    Only a regular file is ever replaced (`check_output_node`: checked before and again just before the
    rename), never a link, a device, a FIFO or a folder."""
    path = Path(path)
    check_output_node(path, "file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **options) as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            os.fsync(fh.fileno())
        check_output_node(path, "file")  # something else may have been put there while it was written
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
    a plain mkdir / open would have given (folders 0o777 & ~umask, files 0o666 & ~umask). Only a real
    folder is ever replaced (`check_output_node`), never a link to one, a file or another node."""
    path = Path(path)
    check_output_node(path, "folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        apply_default_modes(tmp)  # mkdtemp makes 0700 folders, safetensors 0600 files
        old = None
        if check_output_node(path, "folder") is not None:
            old = path.with_name(f".{path.name}.old")
            _remove_leftover(old)
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove_leftover(old: Path) -> None:
    """A `.NAME.old` left by an earlier replacement that was killed: a folder is deleted, anything else (a
    link among them: never followed) unlinked."""
    try:
        node = os.lstat(old)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(node.st_mode):
        shutil.rmtree(old)
    else:
        old.unlink()


def atomic_text_writer(path: str | Path):
    """A UTF-8 text handle on a temporary sibling of `path`, renamed over it when the block ends without an
    error (streamed output too large to build in memory first); on an error nothing replaces `path`."""
    return _atomic_handle(path, "w", encoding="utf-8", newline="\n")
