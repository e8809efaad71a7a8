"""One training per run directory: an OS lock (flock) on `<output_dir>/.sentkit.lock`, held from before the
folder is read until the run ends. The kernel drops it when the process exits or is killed, so a crashed
run never leaves a stale lock; a second `sentkit train` into the same folder is refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

from sentkit.errors import ConfigError
from sentkit.output_lock import open_lock_file, same_file, try_lock

LOCK_FILE = ".sentkit.lock"


class RunLock:
    """Context manager: take the lock (refusing when another process holds it), release it on exit.

    On exit the lock file is removed, and so is the folder when it was absent or empty before and is
    empty again (a run that failed before writing anything leaves no folder behind).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self._fd: int | None = None
        self._was_empty = False

    def __enter__(self) -> RunLock:
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise ConfigError(f"output_dir: {self.run_dir} is a file, expected a folder")
        self._was_empty = not self.run_dir.is_dir() or not run_entries(self.run_dir)
        for _ in range(5):  # another run may remove the file or the folder between our open and lock
            self.run_dir.mkdir(parents=True, exist_ok=True)
            try:
                # never through a link or into a FIFO or device planted under the lock's name
                fd = open_lock_file(self.path)
            except FileNotFoundError:
                continue
            if not try_lock(fd):
                os.close(fd)
                raise ConfigError(
                    f"output_dir: {self.run_dir} is in use by another sentkit training (it holds "
                    f"{LOCK_FILE}); wait for it to end or choose another output_dir"
                )
            if same_file(fd, self.path):
                self._fd = fd
                return self
            os.close(fd)  # we locked a file that was removed meanwhile: lock the current one
        raise ConfigError(f"output_dir: could not lock {self.path}: it keeps being removed")

    def __exit__(self, *exc) -> bool:
        if self._fd is None:
            return False
        # removed while still held, so a process that opened the old file sees it is stale and retries
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None
        if self._was_empty:
            try:
                self.run_dir.rmdir()  # only succeeds when nothing is left in it
            except OSError:
                pass
        return False


def run_entries(run_dir: Path) -> list[Path]:
    """What a run folder holds, without the lock file (which a killed run may leave behind)."""
    return [entry for entry in run_dir.iterdir() if entry.name != LOCK_FILE]
