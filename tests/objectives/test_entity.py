"""EASE objective: eqs. 2-4 against a direct formula, the Table 7 ablations, the entity table's
initialisation and projection, and a few optimisation steps that pull sentences toward their entities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentkit.objectives import build_objective
from sentkit.training import SentenceCollator

ROWS = [
    {"anchor": "Oxygen is a chemical element.", "entity_ids": 0, "negative_entity_ids": 3},
    {"anchor": "Paris is the capital of France.", "entity_ids": 1, "negative_entity_ids": 2},
    {"anchor": "Aristotle was a Greek philosopher.", "entity_ids": 2, "negative_entity_ids": 1},
    {"anchor": "The Nile flows into the sea.", "entity_ids": 4, "negative_entity_ids": 0},
]


def _direct_entity_loss(h, e, n, tau):
    """-1/B sum_i log e^{c(h_i,e_i)/t} / sum_j (e^{c(h_i,e_j)/t} + e^{c(h_i,n_j)/t}), EASE eq. 2, by loops."""
    total = 0.0
    for i in range(len(h)):

        def c(a, b):
            return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

        denom = sum(math.exp(c(h[i], e[j]) / tau) for j in range(len(h)))
        if n is not None:
            denom += sum(math.exp(c(h[i], n[j]) / tau) for j in range(len(h)))
        total += -math.log(math.exp(c(h[i], e[i]) / tau) / denom)
    return total / len(h)


def _direct_dropout_loss(h, z, tau):
    total = 0.0
    for i in range(len(h)):
        sims = [
            float(np.dot(h[i], z[j]) / (np.linalg.norm(h[i]) * np.linalg.norm(z[j]))) / tau
            for j in range(len(h))
        ]
        total += -sims[i] + math.log(sum(math.exp(s) for s in sims))
    return total / len(h)


@pytest.mark.parametrize("hard_negatives", [True, False])
def test_loss_matches_direct_formula(hard_negatives):
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls")
    objective = build_objective(
        "ease", encoder, hard_negatives=hard_negatives, num_entities=5, mask_same_entity=False
    )
    torch.nn.init.normal_(objective.entity_table.projection.weight)  # a W that is not the identity
    objective.eval()  # no dropout: both views equal, so eq. 3 is checkable by hand too
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    terms = objective(batch)
    with torch.no_grad():
        h = encoder(batch["anchor"]).numpy()
        table = objective.entity_table.embedding.weight.numpy()
        w = objective.entity_table.projection.weight.numpy()
    table = table @ w.T  # W e_j (eqs. 1-2)
    e = table[[r["entity_ids"] for r in ROWS]]
    n = table[[r["negative_entity_ids"] for r in ROWS]] if hard_negatives else None
    expected = 0.01 * _direct_entity_loss(h, e, n, 10.0)  # appendix A: lambda 0.01, tau 10 (multilingual)
    assert terms["entity"].item() == pytest.approx(expected, rel=1e-4)
    assert terms["dropout"].item() == pytest.approx(_direct_dropout_loss(h, h, 0.05), rel=1e-4)


def test_ablation_without_dropout_loss_and_options():
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder("cls")
    objective = build_objective("ease", encoder, dropout_loss=False, entity_weight=1.0)
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    assert set(objective(batch)) == {"entity"}
    with pytest.raises(ValueError, match="outside the table of 3 entities"):
        build_objective("ease", encoder, num_entities=3)(batch)
    group = objective.param_groups(3e-5)
    assert group[0]["lr"] == 3e-5 and len(group[0]["params"]) == 2  # the table and W
    assert build_objective("ease", encoder, entity_lr=1e-3).param_groups(3e-5)[0]["lr"] == 1e-3


def test_table_from_built_folder_with_vectors_and_projection(tmp_path):
    from conftest import make_tiny_encoder

    (tmp_path / "entities.tsv").write_text(
        "id\tkey\ttitle\ttype\tlinks\n0\tOxygen\tOxygen\tX\t10\n1\tParis\tParis\tY\t12\n"
        "2\tAristotle\tAristotle\tY\t11\n3\tNitrogen\tNitrogen\tX\t10\n4\tNile\tNile\tZ\t10\n"
    )
    (tmp_path / "vectors.txt").write_text(
        "ENTITY/Oxygen\t1 0 0 0 0\nENTITY/Nile\t0 0 0 0 2\nthe\t1 1 1 1 1\n"
    )
    encoder = make_tiny_encoder("cls")
    objective = build_objective(
        "ease", encoder, entities=str(tmp_path), entity_vectors=str(tmp_path / "vectors.txt")
    )
    weight = objective.entity_table.embedding.weight.detach().numpy()
    assert weight.shape == (5, 5) and objective.entity_table.projection.out_features == 32
    assert weight[0].tolist() == [1, 0, 0, 0, 0] and weight[4].tolist() == [0, 0, 0, 0, 2]
    assert np.abs(weight[1:4]).max() <= 0.05  # EASE's U(-0.05, 0.05) for entities without a vector
    random_init = build_objective("ease", encoder, entities=str(tmp_path))
    w = random_init.entity_table.projection.weight
    assert (
        torch.equal(w, torch.eye(32)) and random_init.entity_table.projection.bias is None
    )  # square W: identity
    assert (
        build_objective("ease", encoder, entities=str(tmp_path), projection=False).entity_table.projection
        is None
    )
    with pytest.raises(ValueError, match="projection=false needs entity vectors of the encoder's size 32"):
        build_objective(
            "ease",
            encoder,
            entities=str(tmp_path),
            entity_vectors=str(tmp_path / "vectors.txt"),
            projection=False,
        )


def test_training_steps_pull_sentences_to_their_entities():
    from conftest import make_tiny_encoder

    torch.manual_seed(0)
    encoder = make_tiny_encoder("cls")
    objective = build_objective("ease", encoder, entity_weight=1.0, entity_temperature=0.05, num_entities=5)
    batch = SentenceCollator(encoder, max_length=32)(ROWS)
    optimizer = torch.optim.Adam(objective.parameters(), lr=1e-2)
    losses = []
    for _ in range(20):
        terms = objective(batch)
        loss = sum(terms.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(terms["entity"].item())
    assert losses[-1] < 0.6 * losses[0]
    objective.eval()
    with torch.no_grad():
        h = torch.nn.functional.normalize(encoder(batch["anchor"]), dim=-1)
        e = torch.nn.functional.normalize(objective.entity_table(torch.arange(5)), dim=-1)
    assert (h @ e.T).argmax(1).tolist() == [r["entity_ids"] for r in ROWS]


def test_trainer_resume_is_exact_with_the_entity_table(tmp_path, data_root):
    """Through the trainer: interrupted + resumed == straight, entity table included; best/ is the encoder."""
    from safetensors.torch import load_file

    import datasets
    from sentkit.training import train
    from test_resume import Interrupt
    from test_trainer import save_tiny_model, stsb_sentences, tiny_config

    model_dir = save_tiny_model(tmp_path / "tiny")
    sentences = stsb_sentences(data_root, 16)
    rng = np.random.default_rng(0)
    entity = rng.integers(0, 6, size=16).tolist()
    data = datasets.Dataset.from_dict(
        {"anchor": sentences, "entity_ids": entity, "negative_entity_ids": [(e + 1) % 6 for e in entity]}
    )
    settings = dict(
        objective="ease", max_steps=4, save_steps=2, objective_options="num_entities=6,entity_lr=0.01"
    )
    straight = train(tiny_config(tmp_path / "a", model_dir, **settings), data=data)
    config = tiny_config(tmp_path / "b", model_dir, **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, data=data, callbacks=[Interrupt(3)])
    resumed = train(config, data=data)
    a = load_file(straight / "checkpoint-4" / "model.safetensors")
    b = load_file(resumed / "checkpoint-4" / "model.safetensors")
    assert "entity_table.embedding.weight" in a
    start = load_file(straight / "checkpoint-2" / "model.safetensors")["entity_table.embedding.weight"]
    assert not torch.equal(start, a["entity_table.embedding.weight"])  # the table is trained
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6, msg=key)
    best = load_file(next((straight / "best").rglob("model.safetensors")))
    assert not any("entity" in key for key in best)
