"""Where the real benchmark data lives: a setting, never a hard-coded path."""

from __future__ import annotations

import os
from pathlib import Path

from sentkit.datasets.checksums import verify_shipped
from sentkit.errors import MissingDataError

ENV_VAR = "SENTKIT_DATA"


def data_root() -> Path:
    """SENTKIT_DATA if set, else the first `shared/data` found beside or above the working directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        for candidate in (folder / "shared" / "data", folder.parent / "shared" / "data"):
            if candidate.is_dir():
                return candidate
    # also look relative to the installed source tree (editable installs in a checkout)
    src = Path(__file__).resolve()
    for folder in src.parents:
        candidate = folder.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return here / "shared" / "data"


def data_file(*parts: str, root: str | Path | None = None) -> Path:
    """Path of a benchmark file (or folder) below the data root; a clear error when it is missing, and
    a one-line DataFormatError when a shipped file differs from its checksum (see checksums.py)."""
    base = Path(root) if root is not None else data_root()
    path = base.joinpath(*parts)
    if not path.exists():
        raise MissingDataError(
            path, f"looked under data root {base}; set {ENV_VAR} to the benchmark data folder"
        )
    verify_shipped(path, base)
    return path
