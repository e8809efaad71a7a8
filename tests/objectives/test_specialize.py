"""Emu and its baselines: each loss against a hand-checked value or its direct formula, the critic's
update, and what each variant computes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from sentkit.objectives import build_objective, objective_config
from sentkit.objectives.specialize import (
    LanguageCritic,
    center_loss,
    contrastive_margin_loss,
    l2_constrained_logits,
    n_pair_loss,
    n_pair_rows,
    update_centers,
    wasserstein_critic_loss,
)
from sentkit.training import SentenceCollator

ROWS = [
    {
        "anchor": "The battery died after a week.",
        "label": 0,
        "adversarial": "Der Akku ist nach einer Woche leer.",
    },
    {"anchor": "Great shoes, very comfortable.", "label": 1, "adversarial": "Zapatos muy cómodos."},
    {"anchor": "Charger stopped working.", "label": 0, "adversarial": "Le chargeur ne marche plus."},
    {"anchor": "These boots fit perfectly.", "label": 1, "adversarial": "Die Stiefel passen perfekt."},
]


def _batch(encoder, rows=ROWS):
    return SentenceCollator(encoder, max_length=32)(rows)


class BagEncoder(torch.nn.Module):
    """Mean of random word-piece vectors: unlike a tiny random BERT (whose outputs share one dominant
    direction), sentences with different words get clearly different vectors, so the discriminator has a
    planted signal to find (the training sentences are English, the adversarial ones are not)."""

    def __init__(self, tokenizer, dim: int = 32) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.tokenizer, self.dim, self.prefix = tokenizer, dim, ""
        self.embedding = torch.nn.Embedding(tokenizer.vocab_size, dim)

    def forward(self, batch):
        mask = batch["attention_mask"].unsqueeze(-1).float()  # (batch, seq, 1)
        return (self.embedding(batch["input_ids"]) * mask).sum(1) / mask.sum(1)  # (batch, dim)


def _critic_updates(objective, batch, n: int) -> list[float]:
    """What the trainer's inner loop does: unfreeze, `n` updates of inner_loss with clipping, refreeze."""
    extra = objective.extra_optimizers()["critic"]
    params = extra.parameters()
    for p in params:
        p.requires_grad_(True)
    losses = []
    for i in range(n):
        extra.optimizer.zero_grad(set_to_none=True)
        loss = objective.inner_loss(batch, "critic", i % extra.steps)["l_d"]
        loss.backward()
        extra.optimizer.step()
        extra.after_step()
        losses.append(float(loss.detach()))
    for p in params:
        p.requires_grad_(False)
    return losses


def test_l2_constrained_softmax_by_hand():
    # x = (3, 4) -> unit (0.6, 0.8) -> alpha 10 -> (6, 8); identity weights, zero bias -> logits (6, 8)
    logits = l2_constrained_logits(torch.tensor([[3.0, 4.0]]), torch.eye(2), torch.zeros(2), alpha=10.0)
    torch.testing.assert_close(logits, torch.tensor([[6.0, 8.0]]))
    loss = F.cross_entropy(logits, torch.tensor([1]))
    assert float(loss) == pytest.approx(math.log(1 + math.exp(-2)), abs=1e-6)  # 0.126928
    # the scale is what alpha sets: the input's own norm does not matter
    torch.testing.assert_close(
        l2_constrained_logits(torch.tensor([[30.0, 40.0]]), torch.eye(2), None, alpha=10.0), logits
    )


def test_center_loss_and_wen_update_by_hand():
    features = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    centers = torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    assert float(center_loss(features, centers, torch.tensor([0, 1]))) == pytest.approx(
        0.5
    )  # (1 + 1) / 2 / 2
    # two rows of class 0 at (2, 0) and (4, 0): delta = (2 c - (6, 0)) / 3 = (-2, 0); c -= 0.5 delta -> (1, 0)
    centers = torch.zeros(3, 2)
    update_centers(centers, torch.tensor([[2.0, 0.0], [4.0, 0.0]]), torch.tensor([0, 0]), rate=0.5)
    torch.testing.assert_close(centers, torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))


def test_contrastive_margin_loss_by_hand_and_formula():
    s60 = math.sqrt(3) / 2
    x = torch.tensor([[1.0, 0.0], [0.5, s60], [0.0, 1.0]])
    labels = torch.tensor([0, 0, 1])
    # same pair (0,1): d^2 = 1 -> 0.5; (0,2): d = sqrt 2 -> 0.5 (1.5 - 1.41421)^2; (1,2): d = 2 sin 15deg
    d12 = 2 * math.sin(math.radians(15))
    by_hand = (0.5 + 0.5 * (1.5 - math.sqrt(2)) ** 2 + 0.5 * (1.5 - d12) ** 2) / 3
    assert float(contrastive_margin_loss(x, labels, margin=1.5)) == pytest.approx(by_hand, abs=1e-5)
    # direct formula on random data, unnormalised input (the loss normalises)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, generator=g)
    labels = torch.tensor([0, 1, 0, 2, 1, 0])
    u = F.normalize(x, dim=-1)
    terms = []
    for i in range(6):
        for j in range(i + 1, 6):
            d = torch.dist(u[i], u[j])
            terms.append(0.5 * d**2 if labels[i] == labels[j] else 0.5 * (1.0 - d).clamp(min=0) ** 2)
    expected = torch.stack(terms).mean()
    assert float(contrastive_margin_loss(x, labels, margin=1.0)) == pytest.approx(float(expected), abs=1e-5)


def test_n_pair_loss_by_hand_and_rows():
    eye = torch.eye(2)
    # logits = I: each anchor log(1 + exp(0 - 1))
    assert float(n_pair_loss(eye, eye)) == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    # Sohn's regularizer: 0.002 * (mean ||a||^2 + mean ||p||^2) / 2 = 0.002
    assert float(n_pair_loss(eye, eye, l2_weight=0.002)) == pytest.approx(
        math.log(1 + math.exp(-1)) + 0.002, abs=1e-6
    )
    g = torch.Generator().manual_seed(1)
    a, p = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    direct = torch.stack(
        [
            torch.log(1 + sum(torch.exp(a[i] @ p[j] - a[i] @ p[i]) for j in range(4) if j != i))
            for i in range(4)
        ]
    ).mean()
    assert float(n_pair_loss(a, p)) == pytest.approx(float(direct), abs=1e-5)
    anchors, positives = n_pair_rows(torch.tensor([2, 0, 2, 1, 0]))
    assert anchors.tolist() == [1, 0] and positives.tolist() == [4, 2]  # label 1 occurs once: left out


def test_wasserstein_critic_loss_sign():
    # the critic minimises mean f(adv) - mean f(train): scoring the training language higher lowers it
    assert float(wasserstein_critic_loss(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 0.0]))) == -1.5


def test_emu_terms_match_their_formulas(tiny_encoder):
    objective = build_objective("emu", tiny_encoder, num_classes=3, adversarial_weight=2.0)
    objective.eval()  # no dropout in the critic, no center update: the terms are deterministic
    batch = _batch(tiny_encoder)
    terms = objective(batch)
    assert set(terms) == {"softmax", "center", "adversarial"}
    with torch.no_grad():
        v = tiny_encoder(batch["anchor"])
        adv = tiny_encoder(tiny_encoder.tokenize([r["adversarial"] for r in ROWS]))
        scaled = 50.0 * v / v.norm(dim=-1, keepdim=True)
        logits = scaled @ objective.classifier.weight.T + objective.classifier.bias
        labels = torch.tensor([r["label"] for r in ROWS])
        softmax = F.cross_entropy(logits, labels)
        centre = 1e-4 * 0.5 * ((scaled - objective.centers[labels]) ** 2).sum(-1).mean()
        # eq. 4: the encoder maximises the discriminator's cross entropy (eq. 3), training language = 1
        ce = 0.5 * (-F.logsigmoid(objective.critic(v)).mean() - F.logsigmoid(-objective.critic(adv)).mean())
        adversarial = -2.0 * ce
    torch.testing.assert_close(terms["softmax"], softmax, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(terms["center"], centre, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(terms["adversarial"], adversarial, rtol=1e-4, atol=1e-6)


def test_wasserstein_variant_and_bad_choices(tiny_encoder):
    objective = build_objective("emu", tiny_encoder, num_classes=3, discriminator_loss="wasserstein").eval()
    batch = _batch(tiny_encoder)
    with torch.no_grad():
        v = tiny_encoder(batch["anchor"])
        adv = tiny_encoder(tiny_encoder.tokenize([r["adversarial"] for r in ROWS]))
        gap = objective.critic(v).mean() - objective.critic(adv).mean()
    torch.testing.assert_close(objective(batch)["adversarial"], gap, rtol=1e-4, atol=1e-6)
    assert isinstance(objective.extra_optimizers()["critic"].optimizer, torch.optim.Adam)  # Emu's setup
    rms = build_objective("emu", tiny_encoder, num_classes=3, critic_optimizer="rmsprop")
    assert isinstance(rms.extra_optimizers()["critic"].optimizer, torch.optim.RMSprop)
    with pytest.raises(
        ValueError, match="discriminator_loss: expected cross_entropy or wasserstein, got 'hinge'"
    ):
        build_objective("emu", tiny_encoder, num_classes=3, discriminator_loss="hinge")


def test_untrained_discriminator_sits_at_chance(tiny_encoder):
    """Clipped to |w| <= 0.01, a fresh discriminator scores ~0 for both sides: its cross entropy is ln 2."""
    objective = build_objective("emu", tiny_encoder, num_classes=3).eval()
    with torch.no_grad():
        assert float(objective.critic_loss(_batch(tiny_encoder))) == pytest.approx(math.log(2), abs=1e-3)


def test_emu_step_moves_centers_but_never_the_critic(tiny_encoder):
    objective = build_objective("emu", tiny_encoder, num_classes=3)
    objective.train()
    critic_before = [p.clone() for p in objective.critic.parameters()]
    terms = objective(_batch(tiny_encoder))
    sum(terms.values()).backward()
    assert all(p.grad is None for p in objective.critic.parameters())  # frozen in the encoder step
    assert all(not p.requires_grad for p in objective.critic.parameters())  # so no optimizer holds it
    assert objective.centers[:2].abs().sum() > 0 and objective.centers[2].abs().sum() == 0  # class 2 unseen
    assert tiny_encoder.model.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    for before, after in zip(critic_before, objective.critic.parameters()):
        assert torch.equal(before, after)


# settings under which 8 inner steps move each discriminator clearly (the defaults move it far more slowly)
DISCRIMINATORS = [
    pytest.param(
        dict(discriminator_loss="cross_entropy", critic_clip=0.1, critic_lr=1e-3), id="cross_entropy"
    ),
    pytest.param(
        dict(discriminator_loss="wasserstein", critic_optimizer="rmsprop", critic_lr=1e-3), id="wgan"
    ),
]


@pytest.mark.parametrize("options", DISCRIMINATORS)
def test_critic_steps_learn_to_tell_languages_apart_and_stay_clipped(tiny_encoder, options):
    torch.manual_seed(0)
    encoder = BagEncoder(tiny_encoder.tokenizer)
    objective = build_objective("emu", encoder, num_classes=3, critic_dropout=0.0, **options)
    objective.eval()  # deterministic encoder, so the critic's loss before and after is comparable
    batch = _batch(encoder)
    with torch.no_grad():
        start = float(objective.critic_loss(batch))
    losses = _critic_updates(objective, batch, 8)
    with torch.no_grad():
        end = float(objective.critic_loss(batch))
    assert losses[0] == pytest.approx(start, abs=1e-6)
    assert end < start - 1e-3  # the critic now scores the training language higher
    bound = objective.config.critic_clip
    assert all(p.abs().max() <= bound + 1e-7 for p in objective.critic.parameters())
    assert all(not p.requires_grad for p in objective.critic.parameters())
    assert isinstance(objective.critic, LanguageCritic)
    assert objective.extra_optimizers()["critic"].steps == 5  # k of Algorithm 1 (WGAN's n_critic)
    groups = objective.param_groups(2e-5)
    assert groups[0]["lr"] == 1e-3 and len(groups[0]["params"]) == 2  # the classifier's weight and bias


@pytest.mark.parametrize("options", DISCRIMINATORS)
def test_adversarial_gradient_pulls_the_languages_together(tiny_encoder, options):
    """One encoder step on the adversarial term alone raises the trained discriminator's loss: the
    languages are harder to tell apart (for WGAN: the critic's score gap shrinks)."""
    torch.manual_seed(0)
    encoder = BagEncoder(tiny_encoder.tokenizer)
    objective = build_objective("emu", encoder, num_classes=3, critic_dropout=0.0, **options)
    batch = _batch(encoder)
    objective.eval()  # same dropout-free encoder before and after
    start = float(objective.critic_loss(batch))
    _critic_updates(objective, batch, 8)
    before = float(objective.critic_loss(batch))
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.5)
    objective(batch)["adversarial"].backward()
    optimizer.step()
    after = float(objective.critic_loss(batch))
    assert before < start and after > before


@pytest.mark.parametrize(
    ("name", "terms", "critic"),
    [
        ("emu", {"softmax", "center", "adversarial"}, True),
        ("emu-parallel", {"softmax", "center", "adversarial"}, True),
        ("emu-no-ld", {"softmax", "center"}, False),
        ("emu-no-ld-cl", {"softmax"}, False),
    ],
)
def test_variants(tiny_encoder, name, terms, critic):
    objective = build_objective(name, tiny_encoder, num_classes=2)
    assert set(objective(_batch(tiny_encoder))) == terms
    assert (objective.critic is not None) == critic
    assert ("adversarial" in objective.required_columns) == critic
    assert objective_config(name).parallel == (name == "emu-parallel")
    assert objective_config(name).alpha == 50.0 and objective_config(name).center_loss_weight == 1e-4


def test_bad_labels_say_how_to_fix_them(tiny_encoder):
    objective = build_objective("emu-no-ld", tiny_encoder, num_classes=1)
    with pytest.raises(ValueError, match="num_classes"):
        objective(_batch(tiny_encoder))
    with pytest.raises(ValueError, match="integer class ids"):
        objective(dict(_batch(tiny_encoder), label=["0", "1", "0", "1"]))
