"""Semantic specialization of a multilingual encoder on labelled sentences of one language: Emu (Hirota et
al., "Emu: Enhancing Multilingual Sentence Embeddings with Semantic Specialization", AAAI 2020) and the
metric-learning baselines it compares against (softmax, contrastive, N-pair).

Emu = a semantic classifier (L2-constrained softmax, Ranjan et al. 2017, plus center loss, Wen et al. 2016:
Emu eqs. 1-2) and a language discriminator that tells the training language's sentence vectors from those
of other languages, trained in an inner loop with weight clipping as in WGAN (Arjovsky et al. 2017); the
encoder is pushed to fool it (Emu eqs. 3-4, Algorithm 1). Emu's text calls the discriminator's loss (eq. 3)
a cross entropy and optimises it with Adam; a Wasserstein critic loss is the alternative
(`discriminator_loss`). Rows carry `anchor` (a labelled sentence of the training language), `label` (int
class id) and, for the discriminator, `adversarial` (an unlabelled sentence of another language, drawn
uniformly per row; for Emu-Parallel a translation of the anchor). The rows are built by
`sentkit.training_data.specialization`; evaluation is leave-one-out kNN (`sentkit.tasks.knn_category`).
The discriminator's inner loop is declared to the trainer with `sentkit.objectives.hooks.ExtraOptimizer`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from sentkit.datasets.columns import ADVERSARIAL, ANCHOR, LABEL
from sentkit.errors import ConfigError, DataFormatError
from sentkit.objectives.gather import is_distributed
from sentkit.objectives.hooks import ExtraOptimizer
from sentkit.objectives.options import (
    DROPOUT_RATE,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    UNIT_INTERVAL,
    CheckedOptions,
)
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
    Wasserstein-1 estimate mean f(train) - mean f(adv) (Arjovsky et al. 2017, eq. 3)."""
    return adversarial_scores.float().mean() - train_scores.float().mean()


def language_cross_entropy(train_scores: torch.Tensor, adversarial_scores: torch.Tensor) -> torch.Tensor:
    """L_D as Emu eq. 3's cross entropy: the discriminator's logit says "training language" (1) or not (0);
    the two sides weigh equally, so a discriminator that cannot tell them apart scores ln 2."""
    train, adversarial = train_scores.float(), adversarial_scores.float()
    return 0.5 * (
        F.binary_cross_entropy_with_logits(train, torch.ones_like(train))
        + F.binary_cross_entropy_with_logits(adversarial, torch.zeros_like(adversarial))
    )


DISCRIMINATOR_LOSSES = {"cross_entropy": language_cross_entropy, "wasserstein": wasserstein_critic_loss}


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
class SoftmaxConfig(CheckedOptions):
    RANGES = {"num_classes": POSITIVE_INT, "head_lr": POSITIVE_NUMBER}

    num_classes: int = 32
    """Size of the classifier: label ids must be < num_classes. Not a paper value: MARC's product_category
    has 31 classes; set it to your label count (objective_options num_classes=N)."""
    head_lr: float = 1e-3
    """Learning rate of the new classifier layer: 1e-3, Emu's; the encoder takes the run's lr."""


@dataclass
class EmuConfig(CheckedOptions):
    RANGES = {
        "num_classes": POSITIVE_INT,
        "alpha": POSITIVE_NUMBER,
        "center_loss_weight": NON_NEGATIVE_NUMBER,
        "head_lr": POSITIVE_NUMBER,
        "center_rate": UNIT_INTERVAL,
        "adversarial_weight": NON_NEGATIVE_NUMBER,
        "critic_steps": POSITIVE_INT,
        "critic_lr": POSITIVE_NUMBER,
        "critic_clip": POSITIVE_NUMBER,
        "critic_hidden": POSITIVE_INT,
        "critic_layers": NON_NEGATIVE_INT,
        "critic_dropout": DROPOUT_RATE,
        "discriminator_loss": (
            "cross_entropy or wasserstein",
            lambda x: x in ("cross_entropy", "wasserstein"),
        ),
        "critic_optimizer": ("adam or rmsprop", lambda x: x in ("adam", "rmsprop")),
        "max_length": POSITIVE_INT,
    }

    num_classes: int = 32
    """Size of the classifier (label ids < num_classes); data-dependent (MARC product_category: 31)."""
    alpha: float = 50.0
    """Scale of the L2-normalised vector fed to the softmax (Ranjan et al. 2017). Emu's setup sets it
    ("we set [alpha] and [lambda]") but the numbers are lost in the extraction; 50 is our choice, well
    above Ranjan et al.'s lower bound log(p (C - 2) / (1 - p)) = 5.6 for C = 31 classes, p = 0.9."""
    center_loss_weight: float = 1e-4
    """lambda of eq. 2 (center-loss weight): Emu's value is lost in the extraction; 1e-4 is our choice
    (Wen et al. 2016 report stable results for lambda from 1e-4 to 1e-1 on their tasks)."""
    head_lr: float = 1e-3
    """Learning rate of the classifier layer (Adam, batch 16 as Emu's setup; its learning rate is lost in
    the extraction). The encoder takes the run's lr: a classifier-head rate would wreck a transformer."""
    center_rate: float = 0.5
    """Center update rate (Wen et al. 2016, Algorithm 1's alpha): 0.5, Wen et al.'s setting; Emu is silent."""
    language_discriminator: bool = True
    """Train the language discriminator and add the adversarial term (False = Emu w/o LD)."""
    center_loss: bool = True
    """Add the center loss (False with language_discriminator False = Emu w/o LD and CL)."""
    adversarial_weight: float = 1.0
    """gamma on the adversarial term (Emu eq. 4): its value is lost in the paper's text extraction; 1.0 (an
    unweighted sum) is our choice."""
    discriminator_loss: str = "cross_entropy"
    """L_D of eq. 3: "cross_entropy" as Emu's text names it, or "wasserstein" (a WGAN critic's score gap)."""
    critic_optimizer: str = "adam"
    """The discriminator's optimizer: Adam, as Emu's experiment setup states; "rmsprop" = WGAN's choice."""
    critic_steps: int = 5
    """k discriminator updates per encoder update (Emu Algorithm 1): the number is lost in the extraction;
    5 = n_critic of WGAN (Arjovsky et al. 2017, Algorithm 1), whose loop Emu's Algorithm 1 follows."""
    critic_lr: float = 5e-5
    """Discriminator learning rate: Emu's value is lost in the extraction; 5e-5 = WGAN's (its Algorithm 1)."""
    critic_clip: float = 0.01
    """Clipping bound c of Algorithm 1 line 9: the number is lost in the extraction; 0.01 = WGAN's."""
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
class ContrastiveConfig(CheckedOptions):
    RANGES = {"margin": POSITIVE_NUMBER}

    margin: float = 1.0
    """Margin on the Euclidean distance of unit vectors (cosine < 0.5 for different labels). Emu names
    the baseline (Hadsell et al. 2006) without a value; 1.0 is our choice."""


@dataclass
class NPairConfig(CheckedOptions):
    RANGES = {"l2_weight": NON_NEGATIVE_NUMBER}

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
    a language discriminator the encoder learns to fool (eqs. 3-4, Algorithm 1).

    The discriminator is trained only through the trainer's extra-optimizer hook (`extra_optimizers`,
    `inner_loss`): k updates of L_D (Adam by default), each followed by weight clipping, before every encoder step.
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
        # chance: a classifier that cannot tell the classes apart; the discriminator's, at ln 2 (or 0 for WGAN)
        self.chance = {"softmax": math.log(c.num_classes)}
        if c.center_loss:
            terms["center"] = c.center_loss_weight * center_loss(scaled, self.centers, labels)
            if self.training and torch.is_grad_enabled():
                feats, labs = _gathered(scaled.detach(), labels)  # every process applies the same update
                update_centers(self.centers, feats, labs, c.center_rate)
        if self.critic is not None:
            adversarial = self._encode_adversarial(batch)  # (batch', dim)
            # the encoder minimises L_C - gamma * L_D (eq. 4): it pulls the two languages' scores together
            critic_term = self._discriminator_loss(self.critic(vectors), self.critic(adversarial))
            terms["adversarial"] = -c.adversarial_weight * critic_term
            self.chance["adversarial"] = -c.adversarial_weight * self._discriminator_chance()
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
        # Adam as Emu's setup; RMSProp is WGAN's momentum-free choice for a clipped critic (Arjovsky et al. sec. 3)
        optimizer = _CRITIC_OPTIMIZERS[c.critic_optimizer](self.critic.parameters(), lr=c.critic_lr)
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
        self.chance = {"l_d": self._discriminator_chance()}
        return {"l_d": self._discriminator_loss(self.critic(train), self.critic(adversarial))}

    def critic_loss(self, batch: dict) -> torch.Tensor:
        """L_D on the batch's training-language and adversarial sentences, the encoder held fixed (the
        critic's parameters get gradients only while the trainer's inner loop unfreezes them)."""
        if self.critic is None:
            raise RuntimeError("this objective has no language discriminator")
        with torch.no_grad():
            (train,) = encode_views(self.encoder, batch, [ANCHOR])  # (batch, dim)
            adversarial = self._encode_adversarial(batch)  # (batch', dim)
        return self._discriminator_loss(self.critic(train), self.critic(adversarial))

    def _discriminator_chance(self) -> float:
        return math.log(2) if self.config.discriminator_loss == "cross_entropy" else 0.0

    def _discriminator_loss(
        self, train_scores: torch.Tensor, adversarial_scores: torch.Tensor
    ) -> torch.Tensor:
        return DISCRIMINATOR_LOSSES[self.config.discriminator_loss](train_scores, adversarial_scores)

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


_CRITIC_OPTIMIZERS = {"adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}


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
    "language_cross_entropy",
    "n_pair_loss",
    "n_pair_rows",
    "update_centers",
    "wasserstein_critic_loss",
]
