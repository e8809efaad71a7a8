"""EASE (Nishikawa et al., "EASE: Entity-Aware Contrastive Learning of Sentence Embedding", NAACL 2022).

A sentence is pulled toward the entity it hyperlinks and pushed away from the other entities of the batch
(EASE eq. 1) and from same-type hard-negative entities (eq. 2), combined with the unsupervised SimCSE
dropout loss (eq. 3, `sentkit.objectives.simcse`) as l = lambda * l_entity + l_dropout (eq. 4).

The entity table is an `nn.Embedding` of this module, trained with the encoder (the paper updates it);
Wikipedia2Vec vectors initialise it when given (sec. 3.3), random otherwise (the Table 7 ablation).
When their size differs from the encoder's, a learnable linear projection maps them to it.

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
from sentkit.objectives.gather import gather_with_grad
from sentkit.objectives.simcse import encode_views, info_nce
from sentkit.objectives.supervised import weighted_hard_negative_loss


@dataclass
class EaseConfig:
    temperature: float = 0.05
    """tau of the dropout loss (EASE eq. 3): SimCSE's 0.05, as in EASE's released config (simcse_temp)."""
    entity_temperature: float = 0.05
    """tau of the entity loss (eq. 2): the paper writes one tau for eqs. 2-3; its released scripts set
    ease_temp 100 (English) / 10 (multilingual), which its code divides into the cosine, not 0.05."""
    entity_weight: float = 0.01
    """lambda of eq. 4 (EASE sec. 4.1 and its scripts' ease_loss_ratio: 0.01)."""
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


class EntityTable(nn.Module):
    """Entity embeddings (optionally pre-trained) and the projection to the encoder's hidden size."""

    def __init__(self, num_entities: int, hidden: int, vectors: np.ndarray | None = None) -> None:
        super().__init__()
        dim = hidden if vectors is None else vectors.shape[1]
        self.embedding = nn.Embedding(num_entities, dim)
        if vectors is None:
            nn.init.uniform_(self.embedding.weight, -0.05, 0.05)  # EASE's random init range
        else:
            self.embedding.weight.data.copy_(torch.from_numpy(vectors))
        self.projection = nn.Linear(dim, hidden) if dim != hidden else None

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
        self.entity_table = EntityTable(count, hidden, vectors)

    def param_groups(self, base_lr: float) -> list[dict]:
        """The entity table (and projection) as its own optimizer group (trainer hook)."""
        return [{"params": list(self.entity_table.parameters()), "lr": self.config.entity_lr or base_lr}]

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        views = encode_views(self.encoder, batch, [ANCHOR], repeat=2 if self.config.dropout_loss else 1)
        first = views[0]  # (batch, hidden); views[1] is the same sentences under another dropout mask
        positives = self.entity_table(batch[ENTITY_IDS].long())  # (batch, hidden)
        entities, offset = gather_with_grad(positives)  # (world * batch, hidden)
        negatives = None
        if self.config.hard_negatives:
            negatives = gather_with_grad(self.entity_table(batch[NEGATIVE_ENTITY_IDS].long()))[0]
        entity_loss = weighted_hard_negative_loss(
            first, entities, negatives, self.config.entity_temperature, 1.0, offset
        )
        terms = {"entity": self.config.entity_weight * entity_loss}
        if self.config.dropout_loss:
            candidates, offset = gather_with_grad(views[1])  # (world * batch, hidden)
            terms["dropout"] = info_nce(first, candidates, self.config.temperature, offset)
        return terms


def _hidden_size(encoder: nn.Module) -> int:
    for attr in ("hidden_size", "dim"):
        if isinstance(getattr(encoder, attr, None), int):
            return getattr(encoder, attr)
    config = getattr(getattr(encoder, "model", None), "config", None)
    if config is not None and hasattr(config, "hidden_size"):
        return int(config.hidden_size)
    raise ValueError(f"cannot tell the hidden size of {type(encoder).__name__}")
