"""Semantic specialization of a multilingual encoder on labelled sentences of one language: Emu (Hirota et
al., "Emu: Enhancing Multilingual Sentence Embeddings with Semantic Specialization", AAAI 2020) and the
metric-learning baselines it compares against (softmax, contrastive, N-pair).

Emu = a semantic classifier (L2-constrained softmax, Ranjan et al. 2017, plus center loss, Wen et al. 2016:
Emu eqs. 1-2) and a language discriminator trained as a Wasserstein critic with weight clipping (Arjovsky
et al. 2017) that tells the training language's sentence vectors from those of other languages; the
encoder is pushed to fool it (Emu eqs. 3-4, Algorithm 1). Rows carry `anchor` (a labelled sentence of the
training language), `label` (int class id) and, for the discriminator, `adversarial` (an unlabelled
sentence of another language, drawn uniformly per row; for Emu-Parallel a translation of the anchor).

Data construction: `sentkit/training_data/specialization.py` builds those rows (from labelled sentences
such as `sentkit.datasets.labelled_sentences`'s MARC categories). The critic's inner loop is declared to
the trainer with `sentkit.objectives.hooks.ExtraOptimizer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sentkit.datasets.columns import ADVERSARIAL, ANCHOR, LABEL
from sentkit.errors import ConfigError, DataFormatError
from sentkit.objectives.gather import is_distributed
from sentkit.objectives.hooks import ExtraOptimizer
from sentkit.objectives.simcse import encode_views


# ---- losses (functions of embeddings and labels) ------------------------------------------------------
def l2_constrained_logits(
    embeddings: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, alpha: float
) -> torch.Tensor:
    """W (alpha * x / ||x||) + b: the L2-constrained softmax layer's logits (Ranjan et al. 2017, eq. 3)."""
    scaled = alpha * F.normalize(embeddings.float(), dim=-1)  # (batch, dim)
    return F.linear(scaled, weight.float(), None if bias is None else bias.float())  # (batch, classes)


def center_loss(features: torch.Tensor, centers: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """1/2 * mean_i ||x_i - c_{y_i}||^2 (Wen et al. 2016, eq. 2, averaged over the batch; Emu eq. 2)."""
    diff = features.float() - centers[labels].float()  # (batch, dim)
    return 0.5 * diff.pow(2).sum(-1).mean()


@torch.no_grad()
def update_centers(centers: torch.Tensor, features: torch.Tensor, labels: torch.Tensor, rate: float) -> None:
    """Wen et al. 2016, Algorithm 1 / eq. 4: c_j -= rate * sum_{y_i=j}(c_j - x_i) / (1 + n_j), in place."""
    features = features.detach().to(centers.dtype)
    sums = torch.zeros_like(centers).index_add_(0, labels, features)  # (classes, dim)
    counts = torch.bincount(labels, minlength=centers.shape[0]).to(centers.dtype)  # (classes,)
    delta = (counts[:, None] * centers - sums) / (1.0 + counts[:, None])  # (classes, dim)
    centers.sub_(rate * delta)


def contrastive_margin_loss(embeddings: torch.Tensor, labels: torch.Tensor, margin: float) -> torch.Tensor:
    """Hadsell et al. 2006 over every in-batch pair i < j, on unit vectors (d = Euclidean distance):
    mean of 1/2 d^2 for same-label pairs and 1/2 max(0, margin - d)^2 for different-label pairs."""
    x = F.normalize(embeddings.float(), dim=-1)  # (batch, dim)
    # squared distance from the Gram matrix; clamped so sqrt has a finite gradient at 0
    sq = (2.0 - 2.0 * x @ x.T).clamp(min=1e-12)  # (batch, batch)
    rows, cols = torch.triu_indices(len(x), len(x), offset=1, device=x.device)  # (2, pairs)
    d2 = sq[rows, cols]  # (pairs,)
    same = labels[rows] == labels[cols]  # (pairs,)
    hinge = (margin - d2.sqrt()).clamp(min=0.0).pow(2)
    return 0.5 * torch.where(same, d2, hinge).mean()


def n_pair_loss(anchors: torch.Tensor, positives: torch.Tensor, l2_weight: float = 0.0) -> torch.Tensor:
    """Multi-class N-pair loss (Sohn 2016, eq. 3): mean_i log(1 + sum_{j != i} exp(f_i.f+_j - f_i.f+_i)),
    where row i of `anchors` and `positives` share a class and rows differ in class; plus
    `l2_weight` * mean squared norm of the embeddings (Sohn's regularizer)."""
    a, p = anchors.float(), positives.float()
    logits = a @ p.T  # (n, n)
    loss = F.cross_entropy(logits, torch.arange(len(a), device=a.device))  # = log(1 + sum exp(...))
    if l2_weight:
        loss = loss + l2_weight * 0.5 * (a.pow(2).sum(-1).mean() + p.pow(2).sum(-1).mean())
    return loss


def n_pair_rows(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row indices (anchors, positives): the first two rows of every label that occurs twice or more."""
    anchors, positives = [], []
    for label in torch.unique(labels, sorted=True).tolist():
        rows = (labels == label).nonzero().flatten()  # (n_label,)
        if len(rows) >= 2:
            anchors.append(rows[0])
            positives.append(rows[1])
    if not anchors:
        empty = labels.new_zeros(0)
        return empty, empty
    return torch.stack(anchors), torch.stack(positives)


def wasserstein_critic_loss(train_scores: torch.Tensor, adversarial_scores: torch.Tensor) -> torch.Tensor:
    """L_D = mean f(adversarial) - mean f(training language): the critic minimises it, i.e. maximises the
    Wasserstein-1 estimate mean f(train) - mean f(adv) (Arjovsky et al. 2017, eq. 3; Emu eq. 3)."""
    return adversarial_scores.float().mean() - train_scores.float().mean()


# ---- the language discriminator ----------------------------------------------------------------------
class LanguageCritic(nn.Module):
    """MLP critic: dim -> hidden -> hidden -> 1 score, ReLU and dropout after each hidden layer."""

    def __init__(self, dim: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        width = dim
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        blocks.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)  # (batch,)

    @torch.no_grad()
    def clip_(self, bound: float) -> None:
        """WGAN weight clipping: every parameter into [-bound, bound] after each critic update."""
        for param in self.parameters():
            param.clamp_(-bound, bound)


# ---- configs -----------------------------------------------------------------------------------------
@dataclass
class SoftmaxConfig:
    num_classes: int = 32
    """Size of the classifier: label ids must be < num_classes. Not a paper value: MARC's product_category
    has 31 classes; set it to your label count (objective_options num_classes=N)."""
    head_lr: float = 1e-3
    """Learning rate of the new classifier layer: 1e-3, Emu's; the encoder takes the run's lr."""


@dataclass
class EmuConfig:
    num_classes: int = 32
    """Size of the classifier (label ids < num_classes); data-dependent (MARC product_category: 31)."""
    alpha: float = 50.0
    """Scale of the L2-normalised vector fed to the softmax (Ranjan et al. 2017): 50, Emu's experiment
    setup ("we set alpha = 50 and lambda = 10^-4")."""
    center_loss_weight: float = 1e-4
    """beta in the issue, printed as lambda in Emu's setup: 1e-4 ("lambda = 10^-4" in the paper's
    experiment setup, which names its semantic-classifier weights alpha and lambda)."""
    head_lr: float = 1e-3
    """Learning rate of the classifier layer: 1e-3, Emu's (Adam, batch 16; the paper fine-tunes all of
    LASER at that rate). The encoder takes the run's lr: 1e-3 would wreck a pretrained transformer."""
    center_rate: float = 0.5
    """Center update rate (Wen et al. 2016, Algorithm 1's alpha): 0.5, Wen et al.'s setting; Emu is silent."""
    language_discriminator: bool = True
    """Train the language discriminator and add the adversarial term (False = Emu w/o LD)."""
    center_loss: bool = True
    """Add the center loss (False with language_discriminator False = Emu w/o LD and CL)."""
    adversarial_weight: float = 1.0
    """gamma on the adversarial term (Emu eq. 4): the value was not in the paper text we could read here;
    1.0 (an unweighted sum) is our default."""
    critic_steps: int = 5
    """k critic updates per encoder update (Emu Algorithm 1): not found in the readable text; 5 = n_critic
    of WGAN (Arjovsky et al. 2017, Algorithm 1), which Emu's Algorithm 1 follows."""
    critic_lr: float = 5e-5
    """Critic learning rate: not found for Emu; 5e-5 = WGAN's (Arjovsky et al. 2017, Algorithm 1)."""
    critic_clip: float = 0.01
    """Weight-clipping bound c of the critic: not found for Emu; 0.01 = WGAN's (Algorithm 1)."""
    critic_hidden: int = 900
    """Width of the critic's hidden layers: 900, Emu's language discriminator."""
    critic_layers: int = 2
    """Hidden layers of the critic: 2, Emu's language discriminator."""
    critic_dropout: float = 0.2
    """Dropout in the critic: 0.2, Emu's language discriminator."""
    parallel: bool = False
    """Emu-Parallel: the `adversarial` column holds translations of the anchors (the loss is the same;
    the flag records the data setting in the run's config and results)."""
    max_length: int = 32
    """Token limit for `adversarial` sentences when the collator passes them as raw text (= max_length of
    the training config's default, SimCSE's 32)."""


@dataclass
class EmuNoLDConfig(EmuConfig):
    language_discriminator: bool = False
    """Emu w/o LD: the semantic classifier alone (L2-constrained softmax + center loss)."""


@dataclass
class EmuNoLDCLConfig(EmuConfig):
    language_discriminator: bool = False
    """Emu w/o LD and CL: the L2-constrained softmax alone."""
    center_loss: bool = False
    """Emu w/o LD and CL: no center loss."""


@dataclass
class EmuParallelConfig(EmuConfig):
    parallel: bool = True
    """Emu-Parallel: adversarial sentences are translations of the training sentences."""


@dataclass
class ContrastiveConfig:
    margin: float = 1.0
    """Margin on the Euclidean distance of unit vectors (cosine < 0.5 for different labels). Emu names
    the baseline (Hadsell et al. 2006) without a value; 1.0 is our choice."""


@dataclass
class NPairConfig:
    l2_weight: float = 0.002
    """Embedding L2 regularizer of the N-pair loss: 0.002, Sohn 2016 (sec. 4); Emu gives none."""


# ---- objectives --------------------------------------------------------------------------------------
def _labels(batch: dict) -> torch.Tensor:
    labels = batch[LABEL]
    if not torch.is_tensor(labels) or labels.dtype not in (torch.int32, torch.int64):
        raise DataFormatError(
            LABEL, None, f"column {LABEL!r} must hold integer class ids, got {type(labels).__name__}"
        )
    return labels.long()


def _check_labels(labels: torch.Tensor, num_classes: int) -> None:
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise ConfigError(
            f"label ids must be in 0..{num_classes - 1}, got {int(labels.min())}..{int(labels.max())}: "
            "set the objective's num_classes (objective_options num_classes=N)"
        )


class SoftmaxClassifier(nn.Module):
    """Baseline: a linear softmax classifier over the sentence vector, cross-entropy on the labels."""

    config_class = SoftmaxConfig
    required_columns = (ANCHOR, LABEL)
    min_batch_rows = 1

    def __init__(self, encoder: nn.Module, config: SoftmaxConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or SoftmaxConfig()
        self.classifier = nn.Linear(encoder.dim, self.config.num_classes)

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        labels = _labels(batch)
        _check_labels(labels, self.config.num_classes)
        (vectors,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
        logits = self.classifier(vectors.float())  # (batch, classes)
        return {"softmax": F.cross_entropy(logits, labels)}

    def param_groups(self, base_lr: float) -> list[dict]:
        return [{"params": list(self.classifier.parameters()), "lr": self.config.head_lr}]


class ContrastiveMargin(nn.Module):
    """Baseline: Hadsell et al.'s contrastive (margin) loss over all labelled in-batch pairs."""

    config_class = ContrastiveConfig
    required_columns = (ANCHOR, LABEL)

    def __init__(self, encoder: nn.Module, config: ContrastiveConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or ContrastiveConfig()

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        labels = _labels(batch)
        (vectors,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
        return {"contrastive": contrastive_margin_loss(vectors, labels, self.config.margin)}


class NPair(nn.Module):
    """Baseline: multi-class N-pair loss on one (anchor, positive) pair per label present twice in the batch."""

    config_class = NPairConfig
    required_columns = (ANCHOR, LABEL)

    def __init__(self, encoder: nn.Module, config: NPairConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or NPairConfig()

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        labels = _labels(batch)
        (vectors,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
        anchors, positives = n_pair_rows(labels)
        if len(anchors) < 2:  # no negative class in this batch: nothing to contrast, keep the graph
            return {"n_pair": vectors.sum() * 0.0}
        loss = n_pair_loss(vectors[anchors], vectors[positives], self.config.l2_weight)
        return {"n_pair": loss}


class Emu(nn.Module):
    """Emu (Hirota et al. 2020): L2-constrained softmax + center loss (eq. 2) on the labelled sentences, and
    a Wasserstein language critic the encoder learns to fool (eqs. 3-4, Algorithm 1).

    The critic is trained only through the trainer's extra-optimizer hook (`extra_optimizers`,
    `inner_loss`): k RMSProp updates of L_D, each followed by weight clipping, before every encoder step.
    Its parameters are frozen in the encoder/classifier step, which still back-propagates through it.
    """

    config_class = EmuConfig
    required_columns = (ANCHOR, LABEL, ADVERSARIAL)
    extra_text_columns = (ADVERSARIAL,)  # tokenized by the collator like the anchor
    min_batch_rows = 1  # a classifier: every row carries its own loss

    def __init__(self, encoder: nn.Module, config: EmuConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or self.config_class()
        c = self.config
        dim = encoder.dim
        # the semantic classifier: a linear layer over alpha * x / ||x|| (Ranjan et al. 2017)
        self.classifier = nn.Linear(dim, c.num_classes)
        # centers follow Wen et al.'s update rule, not the optimizer: a buffer, saved with the model
        self.register_buffer("centers", torch.zeros(c.num_classes, dim))
        self.critic: LanguageCritic | None = None
        if c.language_discriminator:
            self.critic = LanguageCritic(dim, c.critic_hidden, c.critic_layers, c.critic_dropout)
            self.critic.clip_(c.critic_clip)
            self.critic.requires_grad_(False)
        self._inner_vectors: tuple[torch.Tensor, torch.Tensor] | None = None

    # -- the encoder + classifier step (Algorithm 1, last line) --
    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        c = self.config
        labels = _labels(batch)
        _check_labels(labels, c.num_classes)
        (vectors,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
        logits = l2_constrained_logits(vectors, self.classifier.weight, self.classifier.bias, c.alpha)
        scaled = c.alpha * F.normalize(vectors.float(), dim=-1)  # (batch, dim): the softmax layer's input
        terms = {"softmax": F.cross_entropy(logits, labels)}
        if c.center_loss:
            terms["center"] = c.center_loss_weight * center_loss(scaled, self.centers, labels)
            if self.training and torch.is_grad_enabled():
                feats, labs = _gathered(scaled.detach(), labels)  # every process applies the same update
                update_centers(self.centers, feats, labs, c.center_rate)
        if self.critic is not None:
            adversarial = self._encode_adversarial(batch)  # (batch', dim)
            # the encoder minimises L_C - gamma * L_D (eq. 4): it pulls the two languages' scores together
            critic_term = wasserstein_critic_loss(self.critic(vectors), self.critic(adversarial))
            terms["adversarial"] = -c.adversarial_weight * critic_term
        return terms

    # -- trainer hooks (sentkit.training.hooks) --
    def param_groups(self, base_lr: float) -> list[dict]:
        """The new classifier layer learns at `head_lr` (Emu's rate); the encoder at the run's lr."""
        return [{"params": list(self.classifier.parameters()), "lr": self.config.head_lr}]

    def extra_optimizers(self) -> dict[str, ExtraOptimizer]:
        """The critic's own optimizer, `critic_steps` updates per encoder step, clipped after each (Algorithm 1)."""
        if self.critic is None:
            return {}
        c = self.config
        # RMSProp as WGAN: a momentum-free optimizer for the clipped critic (Arjovsky et al. 2017, sec. 3)
        optimizer = torch.optim.RMSprop(self.critic.parameters(), lr=c.critic_lr)
        return {
            "critic": ExtraOptimizer(
                optimizer, steps=c.critic_steps, after_step=lambda: self.critic.clip_(c.critic_clip)
            )
        }

    def inner_loss(self, batch: dict, name: str, step: int) -> dict[str, torch.Tensor]:
        """L_D for critic update `step` of `critic_steps` (Algorithm 1's inner loop).

        The trainer passes the same batch to every inner step and the encoder does not change between them,
        so its vectors are computed once (step 0) and reused: k critic updates for one encoder pass.
        """
        if step == 0 or self._inner_vectors is None:
            with torch.no_grad():
                (train,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
                self._inner_vectors = (train, self._encode_adversarial(batch))
        train, adversarial = self._inner_vectors
        if step == self.config.critic_steps - 1:
            self._inner_vectors = None
        return {"l_d": wasserstein_critic_loss(self.critic(train), self.critic(adversarial))}

    def critic_loss(self, batch: dict) -> torch.Tensor:
        """L_D on the batch's training-language and adversarial sentences, the encoder held fixed (the
        critic's parameters get gradients only while the trainer's inner loop unfreezes them)."""
        if self.critic is None:
            raise RuntimeError("this objective has no language discriminator")
        with torch.no_grad():
            (train,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
            adversarial = self._encode_adversarial(batch)  # (batch', dim)
        return wasserstein_critic_loss(self.critic(train), self.critic(adversarial))

    def _encode_adversarial(self, batch: dict) -> torch.Tensor:
        tokens = batch[ADVERSARIAL]
        if not isinstance(tokens, dict):  # raw strings: tokenized here as the collator does for text columns
            tokens = _tokenize(self.encoder, list(tokens), self.config.max_length, batch[ANCHOR])
        return self.encoder(tokens)  # (batch', dim)


class EmuNoLD(Emu):
    """Emu w/o LD: L2-constrained softmax + center loss only."""

    config_class = EmuNoLDConfig
    required_columns = (ANCHOR, LABEL)


class EmuNoLDCL(Emu):
    """Emu w/o LD and CL: the L2-constrained softmax only."""

    config_class = EmuNoLDCLConfig
    required_columns = (ANCHOR, LABEL)


class EmuParallel(Emu):
    """Emu-Parallel: the critic's adversarial sentences are translations of the training sentences."""

    config_class = EmuParallelConfig


# ---- helpers -----------------------------------------------------------------------------------------
def _tokenize(encoder, texts: list[str], max_length: int, like: dict) -> dict[str, torch.Tensor]:
    prefix = getattr(encoder, "prefix", "")
    tokens = encoder.tokenizer(
        [prefix + t for t in texts], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    device = like["input_ids"].device
    return {k: v.to(device) for k, v in tokens.items()}


def _gathered(features: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """All processes' rows (no gradient), so a buffer update is identical on every process."""
    if not is_distributed():
        return features, labels
    from sentkit.objectives.gather import gather_with_grad

    feats, _ = gather_with_grad(features)  # (world * batch, dim)
    labs, _ = gather_with_grad(labels[:, None].float())  # (world * batch, 1)
    return feats.detach(), labs.squeeze(1).long()


__all__ = [
    "ContrastiveMargin",
    "Emu",
    "EmuNoLD",
    "EmuNoLDCL",
    "EmuParallel",
    "LanguageCritic",
    "NPair",
    "SoftmaxClassifier",
    "center_loss",
    "contrastive_margin_loss",
    "l2_constrained_logits",
    "n_pair_loss",
    "n_pair_rows",
    "update_centers",
    "wasserstein_critic_loss",
]
