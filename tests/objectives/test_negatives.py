"""In-batch negative masking: same-group candidates leave the softmax, checked against loops over the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentkit.objectives import build_objective
from sentkit.objectives.negatives import same_group_pairs, uniform_softmax_loss
from sentkit.objectives.simcse import info_nce
from sentkit.objectives.supervised import weighted_hard_negative_loss
from sentkit.training import SentenceCollator


def _cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _masked_nce(a, p, n, tau, keep, keep_negative=None):
    """-1/B sum_i log e^{c(a_i,p_i)/t} / (sum_{j kept} e^{c(a_i,p_j)/t} + sum_{j kept} e^{c(a_i,n_j)/t})."""
    total = 0.0
    for i in range(len(a)):
        den = sum(math.exp(_cos(a[i], p[j]) / tau) for j in range(len(p)) if keep(i, j))
        if n is not None:
            den += sum(math.exp(_cos(a[i], n[j]) / tau) for j in range(len(n)) if keep_negative(i, j))
        total += -math.log(math.exp(_cos(a[i], p[i]) / tau) / den)
    return total / len(a)


def test_same_group_pairs_by_hand():
    groups = torch.tensor([0, 0, 1, -1, -1])
    expected = torch.tensor(
        [
            [0, 1, 0, 0, 0],  # row 0: row 1 shares group 0; its own positive (column 0) stays
            [1, 0, 0, 0, 0],
            [0, 0, 0, 0, 0],  # group 1 has one row
            [0, 0, 0, 0, 0],  # -1 = in no group: never masked, even against another -1
            [0, 0, 0, 0, 0],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(same_group_pairs(groups, groups), expected)
    # this process holds rows 2..3 of the gathered 5: its own positives sit at columns 2 and 3
    local = torch.tensor([1, 1])
    assert same_group_pairs(local, torch.tensor([0, 1, 1, 1, 2]), offset=2).tolist() == [
        [False, True, False, True, False],
        [False, True, True, False, False],
    ]


def test_masked_info_nce_matches_the_formula_and_is_lower():
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(5, 6, generator=g, dtype=torch.float64) for _ in range(2))
    groups = [0, 0, 1, 1, 2]
    exclude = same_group_pairs(torch.tensor(groups), torch.tensor(groups))
    got = info_nce(a, b, 0.05, exclude=exclude).item()
    want = _masked_nce(a.numpy(), b.numpy(), None, 0.05, lambda i, j: i == j or groups[i] != groups[j])
    assert got == pytest.approx(want, rel=1e-10)
    assert got < info_nce(a, b, 0.05).item()  # fewer terms in every denominator that had a same-group row


def test_supervised_loss_masks_positives_of_the_group_and_keeps_hard_negatives():
    g = torch.Generator().manual_seed(4)
    a, p, n = (torch.randn(4, 6, generator=g, dtype=torch.float64) for _ in range(3))
    groups = [5, 5, 5, 7]
    exclude = same_group_pairs(torch.tensor(groups), torch.tensor(groups))
    got = weighted_hard_negative_loss(a, p, n, 0.05, 1.0, exclude=exclude).item()
    want = _masked_nce(
        a.numpy(),
        p.numpy(),
        n.numpy(),
        0.05,
        lambda i, j: i == j or groups[i] != groups[j],
        lambda i, j: True,
    )
    assert got == pytest.approx(want, rel=1e-10)


ROWS = [  # rows 0-1 are one sentence and its translation (group 0); row 2 links the same entity as row 0
    {"anchor": "Oxygen is a chemical element.", "entity_ids": 0, "negative_entity_ids": 3, "group": 0},
    {
        "anchor": "Sauerstoff ist ein chemisches Element.",
        "entity_ids": 0,
        "negative_entity_ids": 3,
        "group": 0,
    },
    {"anchor": "Water contains oxygen.", "entity_ids": 0, "negative_entity_ids": 1, "group": 1},
    {"anchor": "Paris is the capital of France.", "entity_ids": 1, "negative_entity_ids": 0, "group": 2},
]


def test_simcse_objectives_read_the_group_column():
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("mean")
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    assert batch["group"].tolist() == [0, 0, 1, 2]
    unsup = build_objective("simcse-unsup", encoder).eval()  # no dropout: both views are h
    with torch.no_grad():
        h = encoder(batch["anchor"]).double().numpy()
    groups = [r["group"] for r in ROWS]
    want = _masked_nce(h, h, None, 0.05, lambda i, j: i == j or groups[i] != groups[j])
    assert unsup(batch)["contrastive"].item() == pytest.approx(want, rel=1e-5)
    ungrouped = SentenceCollator(encoder, max_length=32)([{"anchor": r["anchor"]} for r in ROWS])
    assert unsup(ungrouped)["contrastive"].item() == pytest.approx(
        _masked_nce(h, h, None, 0.05, lambda i, j: True), rel=1e-5
    )


def test_ease_masks_translations_and_copies_of_the_own_entity():
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls")
    objective = build_objective("ease", encoder, num_entities=4, entity_temperature=10.0).eval()
    torch.nn.init.normal_(objective.entity_table.projection.weight)
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    terms = objective(batch)
    with torch.no_grad():
        h = encoder(batch["anchor"]).double().numpy()
        table = objective.entity_table(torch.arange(4)).double().numpy()  # W e_j
    ent = [r["entity_ids"] for r in ROWS]
    neg = [r["negative_entity_ids"] for r in ROWS]
    groups = [r["group"] for r in ROWS]

    def keep(i, j):  # eq. 2's in-batch entities: not a translation's, not another copy of my own entity
        return i == j or (groups[i] != groups[j] and ent[i] != ent[j])

    want = 0.01 * _masked_nce(h, table[ent], table[neg], 10.0, keep, lambda i, j: neg[j] != ent[i])
    assert terms["entity"].item() == pytest.approx(want, rel=1e-5)
    dropout = _masked_nce(h, h, None, 0.05, lambda i, j: i == j or groups[i] != groups[j])
    assert terms["dropout"].item() == pytest.approx(dropout, rel=1e-5)
    # as EASE's code: every in-batch entity is a negative, duplicates included (groups still apply)
    plain = build_objective("ease", encoder, num_entities=4, mask_same_entity=False).eval()
    plain.entity_table.load_state_dict(objective.entity_table.state_dict())
    want_plain = 0.01 * _masked_nce(
        h, table[ent], table[neg], 10.0, lambda i, j: i == j or groups[i] != groups[j], lambda i, j: True
    )
    assert plain(batch)["entity"].item() == pytest.approx(want_plain, rel=1e-5)


def test_chance_value_is_the_loss_of_a_model_that_cannot_tell_candidates_apart():
    groups = torch.tensor([0, 0, 1, 2])
    exclude = same_group_pairs(groups, groups)
    # rows 0 and 1 keep 3 of 4 candidates, rows 2 and 3 all 4: mean of ln 3, ln 3, ln 4, ln 4
    assert uniform_softmax_loss(4, 4, exclude) == pytest.approx((2 * math.log(3) + 2 * math.log(4)) / 4)
    same = torch.ones(4, 6, dtype=torch.float64)  # every vector equal: every logit equal
    assert info_nce(same, same, 0.05, exclude=exclude).item() == pytest.approx(
        uniform_softmax_loss(4, 4, exclude)
    )
    # with hard negatives weighted alpha = 3: 4 positives + 4 negatives, the own negative counts 3 times
    loss = weighted_hard_negative_loss(same, same, same, 0.05, 3.0).item()
    assert loss == pytest.approx(uniform_softmax_loss(4, 8, extra_weight=2.0)) == pytest.approx(math.log(10))


def test_objectives_report_their_terms_chance_values():
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls")
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    unsup = build_objective("simcse-unsup", encoder)
    unsup(batch)
    assert unsup.chance == {"contrastive": pytest.approx((2 * math.log(3) + 2 * math.log(4)) / 4)}
    ease = build_objective("ease", encoder, num_entities=4)
    ease(batch)
    # eq. 2: rows 0-2 share entity 0 and rows 0-1 a group; hard negatives equal to the own entity go too
    ent = [r["entity_ids"] for r in ROWS]
    neg = [r["negative_entity_ids"] for r in ROWS]
    groups = [r["group"] for r in ROWS]
    kept = [
        sum(j == i or (groups[i] != groups[j] and ent[i] != ent[j]) for j in range(4))
        + sum(neg[j] != ent[i] for j in range(4))
        for i in range(4)
    ]
    assert ease.chance["entity"] == pytest.approx(0.01 * np.mean(np.log(kept)))
    assert ease.chance["dropout"] == pytest.approx(unsup.chance["contrastive"])
