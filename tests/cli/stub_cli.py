"""`sentkit` with a stub encoder (`_stub`) and stub tasks registered, for subprocess tests (signals, exit codes).

`_stub-ok` scores 50; `_stub-wait` creates the file named by $STUB_READY, then sleeps until interrupted.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from sentkit.cli import main
from sentkit.encoders import ENCODERS
from sentkit.tasks import TASKS
from sentkit.tasks.task import Task


class _StubEncoder:
    name = "stub"

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.ones((len(sentences), 2), dtype=np.float32)


class _StubTask(Task):
    def evaluate(self, encoder):
        encoder.encode(["a", "b"])
        if self.name == "_stub-wait":
            Path(os.environ["STUB_READY"]).touch()
            time.sleep(120)
        return {"main_score": 50.0}


ENCODERS.add("_stub", lambda **kw: _StubEncoder())
for _name in ("_stub-ok", "_stub-wait"):
    TASKS.add(_name, lambda _n=_name, **kw: _StubTask(name=_n, languages=("en",)))

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
