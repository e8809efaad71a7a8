"""Work that must not shift the training RNG streams (dropout masks, data order) that a resume replays:
evaluation, and encoding the probe sentences (probes.py)."""

from __future__ import annotations

import random

import numpy as np
import torch


class rng_preserved:  # noqa: N801 - used as a statement, `with rng_preserved():`
    """Restore Python's, numpy's, torch's and (when present) CUDA's RNG states on exit."""

    def __enter__(self) -> rng_preserved:
        self.state = (random.getstate(), np.random.get_state(), torch.random.get_rng_state())
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return self

    def __exit__(self, *exc) -> bool:
        random.setstate(self.state[0])
        np.random.set_state(self.state[1])
        torch.random.set_rng_state(self.state[2])
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        return False
