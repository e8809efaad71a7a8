"""Whether a training state is sane enough to keep: its weights and loss have not grown by orders of magnitude
since the run started (NaN and Infinity are caught where they appear, in trainer.py), and its model still
works on a few fixed sentences (the probe rule, probes.py).

A run's start is recorded once, at its first optimizer step, and carried in every checkpoint
(`run_start.json`), so a resumed run is held to the scales of its first start. A checkpoint or best/ model
is written only from a sane state: the checkpoint a diverged run keeps is one a lower learning rate can go on
from, not weights of 1e30 that fail again at the next step, nor a collapsed model that trains on to a useless
best/.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from sentkit.training.probes import ProbeRecord

START_FILE = "run_start.json"
# Fine-tuning moves weights by about lr per step (Adam), so a BERT's largest |weight| (a LayerNorm gain or an
# embedding near 1-20) stays within a few times its start; 100 times it is a diverged run (lr 1e30 gives
# 1e30 after one step). The loss floor of 1 keeps a loss starting near 0 from tripping on ordinary noise.
GROWTH = 100.0


@dataclass(frozen=True)
class StartScales:
    """The scales a run started from: its largest |weight|, its first optimizer step's loss and what its
    model does on the probe sentences (None when the data has too few distinct texts)."""

    weight: float
    loss: float | None = None
    probes: ProbeRecord | None = None

    def problem(self, weight: float, loss: float | None) -> str | None:
        """Why a state with this largest |weight| and loss is not sane (None when it is)."""
        if not weight <= GROWTH * max(self.weight, 1e-12):  # also NaN
            return (
                f"the weights grew by orders of magnitude: largest |weight| {self.weight:.3g} at the start, "
                f"{weight:.3g} now"
            )
        if loss is not None and self.loss is not None and not abs(loss) <= GROWTH * max(abs(self.loss), 1.0):
            return f"the loss grew by orders of magnitude: {self.loss:.3g} at the first step, {loss:.3g} now"
        return None

    def write(self, folder: Path) -> None:
        from sentkit.atomic import atomic_write_json

        record = {"weight": self.weight, "loss": self.loss}
        record["probes"] = None if self.probes is None else self.probes.to_dict()
        atomic_write_json(Path(folder) / START_FILE, record)


def read_start_scales(checkpoint: Path | None) -> StartScales | None:
    """The start a checkpoint carries (None for a fresh run, or a checkpoint written without the check)."""
    path = None if checkpoint is None else Path(checkpoint) / START_FILE
    if path is None or not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    loss, probes = data.get("loss"), data.get("probes")
    return StartScales(
        float(data["weight"]),
        None if loss is None else float(loss),
        None if probes is None else ProbeRecord.from_dict(probes),
    )


def was_checked(checkpoint: Path | None) -> bool:
    """Whether a checkpoint was written after its state, model behaviour included, was found sane (it
    carries the run's start with its probe record; a checkpoint of an older sentkit has weights only)."""
    path = None if checkpoint is None else Path(checkpoint) / START_FILE
    if path is None or not path.is_file():
        return False
    return "probes" in json.loads(path.read_text(encoding="utf-8"))


def largest_weight(module: torch.nn.Module) -> float:
    """The largest |value| of the module's floating-point parameters (one device sync); NaN if any is NaN."""
    peaks = [
        p.detach().abs().amax().float() for p in module.parameters() if p.is_floating_point() and p.numel()
    ]
    if not peaks:
        return 0.0
    peak = torch.stack(peaks)  # (tensors,)
    return math.nan if bool(torch.isnan(peak).any()) else float(peak.max())
