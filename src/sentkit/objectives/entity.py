"""EASE (Nishikawa et al., "EASE: Entity-Aware Contrastive Learning of Sentence Embedding", NAACL 2022).

A sentence is pulled toward the entity it hyperlinks and pushed away from the other entities of the batch
(EASE eq. 1) and from same-type hard-negative entities (eq. 2), combined with the unsupervised SimCSE
dropout loss (eq. 3, `sentkit.objectives.simcse`) as l = lambda * l_entity + l_dropout (eq. 4).

The entity table is an `nn.Embedding` of this module, trained with the encoder (the paper updates it);
Wikipedia2Vec vectors initialise it when given (sec. 3.3), random otherwise (the Table 7 ablation).
Entities reach the sentence space through eq. 1-2's learnable matrix W (`EntityTable.projection`).
Temperatures divide the cosine: eq. 2 uses tau = 10 (multilingual) / 100 (monolingual) from appendix A,
so its logits lie in [-0.1, 0.1] and the entity term sits near its chance value ln(2N) by design.

Data construction (`sentkit build ease`), in `sentkit/training_data/ease/`: `entity_pairs.py` builds the
(sentence, entity, hard-negative entity) rows (sec. 3.1-3.2) from a dump read by `wikipedia_dump.py`,
cleaned by `wikitext.py` and split by `sentence_split.py`; `wikidata.py` / `langlinks.py` key entities
across languages and type them, `hard_negatives.py` mines the same-type negative (sec. 3.2),
`xnli_entities.py` adds offline multilingual rows and `entity_vectors.py` the Wikipedia2Vec vectors
(sec. 3.3). The rows load through `sentkit.training_data.specs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from sentkit.datasets.columns import ANCHOR, ENTITY_IDS, NEGATIVE_ENTITY_IDS
from sentkit.objectives.gather import gather_ids, gather_with_grad
from sentkit.objectives.negatives import batch_group_pairs, same_group_pairs, uniform_softmax_loss
from sentkit.objectives.options import (
    NON_NEGATIVE_NUMBER,
    POSITIVE_INT,
    TEMPERATURE,
    CheckedOptions,
)
from sentkit.objectives.simcse import encode_views, info_nce
from sentkit.objectives.supervised import weighted_hard_negative_loss


@dataclass
class EaseConfig(CheckedOptions):
    RANGES = {
        "temperature": TEMPERATURE,
        "entity_temperature": TEMPERATURE,
        "entity_weight": NON_NEGATIVE_NUMBER,
        "num_entities": POSITIVE_INT,
        "entity_lr": NON_NEGATIVE_NUMBER,
    }

    temperature: float = 0.05
    """tau of the dropout loss (EASE eq. 3): SimCSE's 0.05, as in EASE's released config (simcse_temp)."""
    entity_temperature: float = 10.0
    """tau of the entity loss (eq. 2), dividing the cosine: 10 in the multilingual setting, 100 in the
    monolingual one (EASE appendix A; its released code divides cos by ease_temp). 0.05 is a reported variant."""
    entity_weight: float = 0.01
    """lambda of eq. 4: 0.01 (EASE appendix A; its scripts' ease_loss_ratio)."""
    dropout_loss: bool = True
    """False = the Table 7 ablation without the SimCSE term."""
    hard_negatives: bool = True
    """False = the Table 7 ablation with in-batch entity negatives only."""
    entities: str = ""
    """a folder written by `sentkit build ease` (its entities.tsv sizes the table and names the entities)."""
    entity_vectors: str = ""
    """Wikipedia2Vec model (.pkl) or text file initialising the table; empty = random init (ablation)."""
    num_entities: int = 16
    """table rows when no `entities` folder is given (tests and custom data); the folder overrides it."""
    entity_lr: float = 0.0
    """learning rate of the entity table and projection; 0 = the run's (EASE trains all with one lr)."""
    projection: bool = True
    """eqs. 1-2's learnable W (no bias) between entity and sentence space, identity-initialised when both
    have one size (the paper does not state W's init; identity keeps the pre-trained vectors' geometry at
    the start). False drops W (only possible when the sizes agree)."""
    mask_same_entity: bool = True
    """Remove from a sentence's eq. 2 softmax the other rows' copies of its own entity (they are its positive,
    not negatives) and hard negatives that equal it. Not in EASE's code, which contrasts them; False = as there."""


class EntityTable(nn.Module):
    """Entity embeddings (optionally pre-trained) and the projection to the encoder's hidden size."""

    def __init__(
        self, num_entities: int, hidden: int, vectors: np.ndarray | None = None, projection: bool = True
    ) -> None:
        super().__init__()
        dim = hidden if vectors is None else vectors.shape[1]
        self.embedding = nn.Embedding(num_entities, dim)
        if vectors is None:
            nn.init.uniform_(self.embedding.weight, -0.05, 0.05)  # EASE's random init range
        else:
            self.embedding.weight.data.copy_(torch.from_numpy(vectors))
        if not projection and dim != hidden:
            raise ValueError(
                f"projection=false needs entity vectors of the encoder's size {hidden}, got {dim}"
            )
        self.projection = nn.Linear(dim, hidden, bias=False) if projection else None  # W of eqs. 1-2
        if self.projection is not None and dim == hidden:
            nn.init.eye_(self.projection.weight)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.embedding.num_embeddings):
            raise ValueError(
                f"entity id {int(ids.max())} outside the table of {self.embedding.num_embeddings} entities: "
                "pass the built folder as the objective option entities=DIR"
            )
        vectors = self.embedding(ids)  # (batch, dim)
        return vectors if self.projection is None else self.projection(vectors)  # (batch, hidden)


def entity_table_init(config: EaseConfig, hidden: int) -> tuple[int, np.ndarray | None]:
    """Number of entities and their initial vectors (Wikipedia2Vec rows where found, EASE's U(-0.05, 0.05) else)."""
    if not config.entities:
        if config.entity_vectors:
            raise ValueError("entity_vectors needs entities=DIR (the built folder naming each entity)")
        return config.num_entities, None
    from sentkit.training_data.ease.entity_pairs import read_entities

    titles = [e.title for e in read_entities(config.entities)]
    if not config.entity_vectors:
        return len(titles), None
    from sentkit.training_data.ease.entity_vectors import load_entity_vectors

    vectors, found = load_entity_vectors(config.entity_vectors, titles)
    rng = np.random.default_rng(0)
    missing = ~found
    vectors[missing] = rng.uniform(-0.05, 0.05, size=(int(missing.sum()), vectors.shape[1]))
    return len(titles), vectors.astype(np.float32)


class EntityAwareContrastive(nn.Module):
    """EASE eq. 4: entity_weight * entity loss (eq. 2) + dropout loss (eq. 3); each term returned by name."""

    config_class = EaseConfig
    required_columns = (ANCHOR, ENTITY_IDS, NEGATIVE_ENTITY_IDS)

    def __init__(self, encoder: nn.Module, config: EaseConfig | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = config or EaseConfig()
        hidden = _hidden_size(encoder)
        count, vectors = entity_table_init(self.config, hidden)
        self.entity_table = EntityTable(count, hidden, vectors, self.config.projection)

    def param_groups(self, base_lr: float) -> list[dict]:
        """The entity table (and projection) as its own optimizer group (trainer hook)."""
        return [{"params": list(self.entity_table.parameters()), "lr": self.config.entity_lr or base_lr}]

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        views = encode_views(self.encoder, batch, [ANCHOR], repeat=2 if self.config.dropout_loss else 1)
        first = views[0]  # (batch, hidden); views[1] is the same sentences under another dropout mask
        entity_ids = batch[ENTITY_IDS].long()  # (batch,)
        positives = self.entity_table(entity_ids)  # (batch, hidden)
        entities, offset = gather_with_grad(positives)  # (world * batch, hidden)
        group_pairs = batch_group_pairs(batch, offset)  # (batch, world * batch) or None: same-group rows
        exclude, exclude_negatives = group_pairs, None
        if self.config.mask_same_entity:
            same_entity = same_group_pairs(
                entity_ids, gather_ids(entity_ids), offset
            )  # (batch, world * batch)
            exclude = same_entity if exclude is None else exclude | same_entity
        negatives = None
        if self.config.hard_negatives:
            negative_ids = batch[NEGATIVE_ENTITY_IDS].long()  # (batch,)
            negatives = gather_with_grad(self.entity_table(negative_ids))[0]  # (world * batch, hidden)
            if self.config.mask_same_entity:
                exclude_negatives = (
                    entity_ids[:, None] == gather_ids(negative_ids)[None, :]
                )  # (batch, world * batch)
        entity_loss = weighted_hard_negative_loss(
            first,
            entities,
            negatives,
            self.config.entity_temperature,
            1.0,
            offset,
            exclude,
            exclude_negatives,
        )
        terms = {"entity": self.config.entity_weight * entity_loss}
        rows, width = len(first), len(entities) + (len(negatives) if negatives is not None else 0)
        chance = uniform_softmax_loss(rows, width, exclude, exclude_negatives)
        self.chance = {"entity": self.config.entity_weight * chance}
        if self.config.dropout_loss:
            candidates, offset = gather_with_grad(views[1])  # (world * batch, hidden)
            terms["dropout"] = info_nce(first, candidates, self.config.temperature, offset, group_pairs)
            self.chance["dropout"] = uniform_softmax_loss(rows, len(candidates), group_pairs)
        return terms


def _hidden_size(encoder: nn.Module) -> int:
    for attr in ("hidden_size", "dim"):
        if isinstance(getattr(encoder, attr, None), int):
            return getattr(encoder, attr)
    config = getattr(getattr(encoder, "model", None), "config", None)
    if config is not None and hasattr(config, "hidden_size"):
        return int(config.hidden_size)
    raise ValueError(f"cannot tell the hidden size of {type(encoder).__name__}")
