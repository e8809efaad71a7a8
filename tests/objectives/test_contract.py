"""Contract for every registered objective: named finite loss terms and a gradient for every parameter."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from sentkit.objectives import OBJECTIVES, build_objective, objective_config
from sentkit.training import SentenceCollator

ROWS = [
    {
        "anchor": "A man is playing a guitar.",
        "positive": "A person plays music.",
        "negative": "Nobody is playing.",
        "entity_ids": 0,
        "negative_entity_ids": 2,
        "label": 0,
        "adversarial": "Un homme joue de la guitare.",
    },
    {
        "anchor": "A woman slices an onion.",
        "positive": "Someone cuts a vegetable.",
        "negative": "A woman sings.",
        "entity_ids": 1,
        "negative_entity_ids": 3,
        "label": 1,
        "adversarial": "Eine Frau schneidet eine Zwiebel.",
    },
    {
        "anchor": "Two dogs run in a park.",
        "positive": "Dogs are running outside.",
        "negative": "Two cats sleep.",
        "entity_ids": 2,
        "negative_entity_ids": 0,
        "label": 0,
        "adversarial": "Dos perros corren en un parque.",
    },
    {
        "anchor": "The sun sets over the sea.",
        "positive": "Sunset at the ocean.",
        "negative": "It is midnight.",
        "entity_ids": 3,
        "negative_entity_ids": 1,
        "label": 1,
        "adversarial": "Le soleil se couche sur la mer.",
    },
]


@pytest.mark.parametrize("name", OBJECTIVES.names())
def test_terms_finite_and_every_parameter_gets_a_gradient(name):
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls_mlp")
    objective = build_objective(name, encoder)
    assert all(c in ROWS[0] for c in objective.required_columns)
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    objective.train()
    terms = objective(batch)
    assert isinstance(terms, dict) and terms
    for term, value in terms.items():
        assert value.dim() == 0 and torch.isfinite(value), term
    sum(terms.values()).backward()
    for param_name, param in objective.named_parameters():
        if param.requires_grad:
            assert param.grad is not None and param.grad.abs().sum() > 0, param_name


@pytest.mark.parametrize("name", OBJECTIVES.names())
def test_hyperparameters_are_a_dataclass_with_defaults(name):
    config = objective_config(name)
    assert dataclasses.is_dataclass(config)
    for f in dataclasses.fields(config):
        assert f.default is not dataclasses.MISSING, f.name
    if hasattr(config, "temperature"):  # classifier and margin objectives have none
        assert config.temperature == 0.05  # SimCSE's value, shared by every contrastive objective


def test_registry_names_and_errors():
    assert {"simcse-unsup", "simcse-sup"} <= set(OBJECTIVES.names())
    with pytest.raises(KeyError, match="did you mean simcse-sup"):
        OBJECTIVES.get("simcse-supp")
    with pytest.raises(ValueError, match="no option"):
        objective_config("simcse-unsup", hard_negative_weight=2.0)
