"""In-batch negative masking: candidates that are not really negatives of a row are taken out of its softmax.

A batch row may share its meaning with other rows: the translations of one sentence, several rows built
from the same source sentence, rows that link the same entity. Contrasting them pushes apart what should
be close (false negatives). Training data marks such rows with a shared integer in the `group` column
(`sentkit.datasets.columns.GROUP`; a negative id means "in no group"); the contrastive objectives then set
the logits of same-group candidates to -inf, keeping each row's own positive.
"""

from __future__ import annotations

import math

import torch

from sentkit.datasets.columns import GROUP
from sentkit.objectives.gather import gather_ids


def same_group_pairs(groups: torch.Tensor, candidate_groups: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """(n, m) bool: True where candidate j is in row i's group and is not row i's own positive (j = offset + i).

    `groups` (n,) labels this process's rows, `candidate_groups` (m,) the gathered candidate rows; ids < 0
    are in no group and never masked.
    """
    same = (groups[:, None] == candidate_groups[None, :]) & (groups[:, None] >= 0)  # (n, m)
    rows = torch.arange(groups.shape[0], device=groups.device)
    same[rows, rows + offset] = False  # the positive itself stays
    return same


def batch_group_pairs(batch: dict, offset: int) -> torch.Tensor | None:
    """`same_group_pairs` for a training batch with a `group` column (gathered across processes), else None."""
    if GROUP not in batch:
        return None
    groups = batch[GROUP].long().reshape(-1)  # (batch,)
    return same_group_pairs(groups, gather_ids(groups), offset)


def masked(logits: torch.Tensor, exclude: torch.Tensor | None) -> torch.Tensor:
    """`logits` with the excluded (row, candidate) pairs at -inf, i.e. removed from the softmax."""
    if exclude is None:
        return logits
    return logits.masked_fill(exclude, float("-inf"))


def uniform_softmax_loss(
    rows: int, candidates: int, *excluded: torch.Tensor | None, extra_weight: float = 0.0
) -> float:
    """The loss of a softmax over candidates a model cannot tell apart (all logits equal): the mean over rows
    of ln(kept candidates + extra_weight). Each of `excluded` is a bool block (rows, some of the columns),
    or None, whose True entries remove candidates from a row; `extra_weight` adds weighted candidates (a
    hard negative's alpha - 1). This is the term's chance value: a contrastive loss near it means the
    batch's candidates are not being told apart."""
    if not rows:
        return math.nan
    kept = torch.full((rows,), float(candidates))
    for block in excluded:
        if block is not None:
            kept -= block.sum(1).float().cpu()
    return float(torch.log(kept + extra_weight).mean())
