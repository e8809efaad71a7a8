"""Supervised contrastive learning on (anchor, positive[, hard negative]) triplets with a weight on each
anchor's own hard negative: SimCSE eq. 5 with its `hard_negative_weight`, JCSE eqs. 4-5, the AMR paper's eq. 1.

Two methods train with this loss (`simcse-sup`):
- JCSE (Chen, Handa & Shirahama, "JCSE: Contrastive Learning of Japanese Sentence Embeddings and Its
  Applications"), sec. 3.3 eqs. 4-5, in two stages (sec. 4.4). Data in `sentkit/training_data/jcse/`:
  stage one (`sentkit build contradictions`, `build.py`): `domain_corpus.py` (sec. 3.1), `chunk_masking.py`,
  `span_corruption.py` + `t5_infill.py` (the T5 infiller, sec. 3.2) or the offline `chunk_swap.py`, rows
  written by `contradictions.py`; stage two: `stage2.py` (the `jsick` data spec, standing in for JSNLI).
  Its relevant-content-word analysis (sec. 4.3, eq. 6): `sentkit/analysis/relevant_words.py`.
- The AMR graph encoder of Cai et al. (EMNLP 2022), eq. 1 on graph triplets: `sentkit/amr/training.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sentkit.datasets.columns import ANCHOR, NEGATIVE, POSITIVE
from sentkit.objectives.gather import gather_with_grad
from sentkit.objectives.negatives import batch_group_pairs, masked, uniform_softmax_loss
from sentkit.objectives.options import NON_NEGATIVE_NUMBER, TEMPERATURE, CheckedOptions
from sentkit.objectives.simcse import cosine_logits, encode_views, info_nce


def weighted_hard_negative_loss(
    a: torch.Tensor,
    p: torch.Tensor,
    n: torch.Tensor | None = None,
    temperature: float = 0.05,
    hard_negative_weight: float = 1.0,
    offset: int = 0,
    exclude: torch.Tensor | None = None,
    exclude_negatives: torch.Tensor | None = None,
) -> torch.Tensor:
    """-log e^{s(a_i,p_i)} / sum_j (e^{s(a_i,p_j)} + alpha^{[i=j]} e^{s(a_i,n_j)}), s = cos / t (JCSE eq. 5).

    alpha = `hard_negative_weight` scales only the anchor's own hard negative; SimCSE's code adds its log
    to that logit (its flag is "the logit of the weight", default 0, i.e. alpha = 1). Rows of `p` and `n`
    belonging to anchor i sit at offset + i. Without negatives this is `info_nce(a, p)`. `exclude` (B, P)
    and `exclude_negatives` (B, N) bool remove candidates that are not negatives of anchor i.
    """
    if n is None:
        return info_nce(a, p, temperature, offset, exclude)
    if hard_negative_weight < 0:
        raise ValueError(f"hard_negative_weight must be >= 0, got {hard_negative_weight}")
    logits = torch.cat(
        [
            masked(cosine_logits(a, p, temperature), exclude),
            masked(cosine_logits(a, n, temperature), exclude_negatives),
        ],
        1,
    )  # (B, P + N)
    rows = torch.arange(a.shape[0], device=a.device)
    own_negative = p.shape[0] + offset + rows
    log_weight = math.log(hard_negative_weight) if hard_negative_weight > 0 else float("-inf")
    bonus = torch.zeros_like(logits)
    bonus[rows, own_negative] = log_weight
    return F.cross_entropy(logits + bonus, rows + offset)


@dataclass
class SimCSESupConfig(CheckedOptions):
    RANGES = {"temperature": TEMPERATURE, "hard_negative_weight": NON_NEGATIVE_NUMBER}

    temperature: float = 0.05
    """Softmax temperature: 0.05, SimCSE sec. 4 (supervised NLI setting), also JCSE and the AMR paper."""
    hard_negative_weight: float = 1.0
    """alpha on the own hard negative, JCSE eq. 5 / SimCSE eq. 5: 1 = unweighted (SimCSE Table 8, best)."""


class SupervisedSimCSE(nn.Module):
    """Anchor vs. all gathered positives (and hard negatives when the data has a `negative` column); the
    positives of other rows of the anchor's `group` are not its negatives."""

    config_class = SimCSESupConfig
    required_columns = (ANCHOR, POSITIVE)

    def __init__(self, encoder: nn.Module, config: SimCSESupConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or SimCSESupConfig()

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        columns = [c for c in (ANCHOR, POSITIVE, NEGATIVE) if c in batch]
        views = encode_views(self.encoder, batch, columns)  # each (batch, hidden)
        positives, offset = gather_with_grad(views[1])  # (world * batch, hidden)
        negatives = gather_with_grad(views[2])[0] if len(views) > 2 else None
        exclude = batch_group_pairs(batch, offset)  # (batch, world * batch) or None
        loss = weighted_hard_negative_loss(
            views[0],
            positives,
            negatives,
            self.config.temperature,
            self.config.hard_negative_weight,
            offset,
            exclude=exclude,
        )
        candidates = len(positives) + (len(negatives) if negatives is not None else 0)
        alpha = self.config.hard_negative_weight - 1.0 if negatives is not None else 0.0
        self.chance = {
            "contrastive": uniform_softmax_loss(len(views[0]), candidates, exclude, extra_weight=alpha)
        }
        return {"contrastive": loss}
