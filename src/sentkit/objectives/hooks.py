"""What an objective may hand the trainer beyond `forward(batch) -> {name: loss}`: the types of its hooks.

An objective may also set `self.chance = {term: value}` in `forward` (and `inner_loss`): the value each
term would take for a model that cannot tell its candidates apart (ln of the softmax's candidate count,
weights included). The trainer logs it as `chance_<term>` beside `loss_<term>`, so a contrastive term
already far below chance (nothing left to learn) or stuck at it (nothing learnt) shows in the log.

The trainer (`sentkit.training.hooks`) reads and checks the hooks; an objective only builds these values,
so it imports them from here and never from the training package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ExtraOptimizer:
    """An objective-owned optimizer run in an inner loop: `steps` updates before every main optimizer step.

    `after_step` runs after each of its updates (e.g. weight clipping of a WGAN critic, Arjovsky et al.
    2017 Algorithm 1). Its learning rate stays constant (no schedule); its state is checkpointed.
    """

    optimizer: torch.optim.Optimizer
    steps: int = 1
    after_step: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"ExtraOptimizer.steps: expected a positive integer, got {self.steps!r}")

    def parameters(self) -> list[nn.Parameter]:
        return [p for group in self.optimizer.param_groups for p in group["params"]]
