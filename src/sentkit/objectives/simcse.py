"""Unsupervised SimCSE (Gao et al., 2021): a sentence and itself under two dropout masks are positives,
the other sentences of the (cross-process) batch are negatives. InfoNCE as in EASE eq. 3 / SimCSE eq. 1."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sentkit.datasets.columns import ANCHOR
from sentkit.objectives.gather import gather_with_grad
from sentkit.objectives.negatives import batch_group_pairs, masked, uniform_softmax_loss
from sentkit.objectives.options import TEMPERATURE, CheckedOptions


def cosine_logits(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """cos(a_i, b_j) / temperature for every pair, at least float32 (bf16 autocast is too coarse at t = 0.05)."""
    a = F.normalize(a.to(torch.promote_types(a.dtype, torch.float32)), dim=-1)
    b = F.normalize(b.to(torch.promote_types(b.dtype, torch.float32)), dim=-1)
    return a @ b.T / temperature  # (n, m)


def info_nce(
    a: torch.Tensor,
    b: torch.Tensor,
    temperature: float = 0.05,
    offset: int = 0,
    exclude: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean over i of -log softmax_j(cos(a_i, b_j) / t) at j = offset + i (EASE eq. 3, SimCSE eq. 1).

    `b` holds the positives of `a` at rows offset .. offset + len(a) - 1 and negatives everywhere else;
    `exclude` (n, m) bool removes candidates that are not negatives (`sentkit.objectives.negatives`).
    """
    logits = masked(cosine_logits(a, b, temperature), exclude)  # (n, m)
    targets = torch.arange(a.shape[0], device=a.device) + offset
    return F.cross_entropy(logits, targets)


def encode_views(
    encoder: nn.Module, batch: dict, columns: Sequence[str], repeat: int = 1
) -> list[torch.Tensor]:
    """Pooled vectors of each text column (and `repeat` copies of each), from one forward pass.

    The collator pads all text columns of a batch to one length, so they stack into a single batch;
    copies of a column see independent dropout masks, which is SimCSE's augmentation.
    """
    keys = batch[columns[0]].keys()
    stacked = {k: torch.cat([batch[c][k] for c in columns for _ in range(repeat)]) for k in keys}
    pooled = encoder(stacked)  # (len(columns) * repeat * batch, hidden)
    return list(pooled.chunk(len(columns) * repeat))  # each (batch, hidden)


@dataclass
class SimCSEUnsupConfig(CheckedOptions):
    RANGES = {"temperature": TEMPERATURE}

    temperature: float = 0.05
    """Softmax temperature: 0.05, SimCSE sec. 3 / appendix D (EASE uses the same)."""


class UnsupervisedSimCSE(nn.Module):
    """Each anchor encoded twice with different dropout masks; in-batch negatives gathered across processes
    (rows of one `group` are not each other's negatives)."""

    config_class = SimCSEUnsupConfig
    required_columns = (ANCHOR,)

    def __init__(self, encoder: nn.Module, config: SimCSEUnsupConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or SimCSEUnsupConfig()

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        first, second = encode_views(self.encoder, batch, [ANCHOR], repeat=2)  # 2 x (batch, hidden)
        candidates, offset = gather_with_grad(second)  # (world * batch, hidden)
        exclude = batch_group_pairs(batch, offset)  # (batch, world * batch) or None
        self.chance = {"contrastive": uniform_softmax_loss(len(first), len(candidates), exclude)}
        return {"contrastive": info_nce(first, candidates, self.config.temperature, offset, exclude)}
