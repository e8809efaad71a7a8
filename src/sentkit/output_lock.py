"""One writer per output: an exclusive operating-system lock (flock) on a lock file, held while a command
writes there. `sentkit encode` locks `.lock` in its shard folder, `sentkit mine` locks `.NAME.lock` beside
its TSV (removed when the run ends), `sentkit train` locks `.sentkit.lock` in its run folder; a second command into the same output is refused in one line. The
kernel drops the lock when its process exits or is killed, so a lock file a killed run left is no stale
lock: the next run simply takes it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from sentkit.atomic import check_output_node
from sentkit.errors import OutputPathError

ATTEMPTS = 5  # another run may remove the lock file between our open and our lock


@contextlib.contextmanager
def exclusive_lock(path: str | Path, busy: str, remove: bool = False) -> Iterator[None]:
    """Hold the lock on the file `path` (created when absent) for the block; OutputPathError(`busy`) when
    another process holds it. `remove`: delete the lock file when the block ends (while it is still held,
    so a process that opened it meanwhile sees it is gone and opens the new one)."""
    path = Path(path)
    for _ in range(ATTEMPTS):
        fd = open_lock_file(path)
        if not try_lock(fd):
            os.close(fd)
            raise OutputPathError(busy)
        if not remove or same_file(fd, path):
            break
        os.close(fd)  # we locked a file that was removed meanwhile: lock the current one
    else:
        raise OutputPathError(f"{path}: could not be locked: it keeps being removed")
    try:
        yield
    finally:
        if remove:
            path.unlink(missing_ok=True)
        os.close(fd)  # releases the lock


def open_lock_file(path: Path) -> int:
    """The lock file, opened without following a link and refused unless it is a regular file (a link, a FIFO
    or a device planted under its name is never opened, written or replaced)."""
    check_output_node(path, "file")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    except FileNotFoundError:  # the folder was removed meanwhile: the caller may create it again
        raise
    except OSError as err:  # a link or another node put there since the check
        raise OutputPathError(f"{path}: cannot be used as a lock file ({err.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device put there since the check
        os.close(fd)
        raise OutputPathError(f"{path}: is not a regular file; cannot be used as a lock file")
    return fd


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on `fd` without waiting; False when another process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX (Windows): no lock
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def same_file(fd: int, path: Path) -> bool:
    """Whether the open lock `fd` is still the file at `path` (not removed or replaced meanwhile)."""
    try:
        on_disk = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)
