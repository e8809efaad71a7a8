"""Native libraries' stderr chatter (FAISS's k-means "WARNING clustering ..."), kept off the user's terminal.

FAISS writes from C++ straight to file descriptor 2, past Python's sys.stderr; the only way to hold it back is
to point descriptor 2 at a temporary file while the call runs. What it said is then read back: the caller
turns what matters into one sentkit line and passes anything it does not recognise through unchanged.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

# FAISS Clustering.cpp: "WARNING clustering 3000 points to 256 centroids: please provide at least 9984 training points"
_CLUSTERING = re.compile(
    r"WARNING clustering (\d+) points to (\d+) centroids: please provide at least (\d+) training points"
)


@dataclass
class Captured:
    """What was written to descriptor 2 inside the block (filled in when it ends)."""

    text: str = ""
    lines: list[str] = field(default_factory=list)


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """Descriptor 2 (native code's stderr, and sys.stderr when it writes there) into `Captured` while the
    block runs; restored however the block ends."""
    captured = Captured()
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (a daemon with stderr closed): nothing reaches a terminal anyway
        yield captured
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.text = tmp.read().decode("utf-8", errors="replace")
            captured.lines = captured.text.splitlines()


def too_few_training_points(lines: list[str]) -> tuple[list[dict], list[str]]:
    """(FAISS's k-means warnings, each distinct one once as {points, centroids, wanted, times}, and the
    other lines) of captured output; a product quantizer trains one k-means per sub-quantizer, so the same
    warning comes once per sub-quantizer."""
    found: dict[tuple[int, ...], dict] = {}
    other = []
    for line in lines:
        match = _CLUSTERING.search(line)
        if match:
            points, centroids, wanted = (int(g) for g in match.groups())
            entry = found.setdefault(
                (points, centroids, wanted),
                {"points": points, "centroids": centroids, "wanted": wanted, "times": 0},
            )
            entry["times"] += 1
        elif line.strip():
            other.append(line)
    return list(found.values()), other


def pass_through(lines: list[str]) -> None:
    """Write captured lines that were not recognised to stderr as they came."""
    for line in lines:
        print(line, file=sys.stderr)
