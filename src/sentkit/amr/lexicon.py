"""What the rule-based parser learns from gold training graphs: frame senses and subject roles per frame.

Built from the Little Prince *training* split only (1274 graphs); the 143 test graphs that Smatch scores
are never read here.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

_FRAME = re.compile(r"^(?P<lemma>.+)-(?P<sense>\d\d)$")
TRAINING_FILE = ("amr", "en", "amr-bank-struct-v1.6-training.txt")


@dataclass
class Lexicon:
    """Concept counts of training graphs: `frame(lemma)` picks the most frequent PropBank sense."""

    frames: dict[str, str] = field(default_factory=dict)  # lemma -> most frequent frame (want -> want-01)
    concepts: Counter = field(default_factory=Counter)  # every concept label with its count
    subject_role: dict[str, str] = field(default_factory=dict)  # frame -> role a subject most often fills

    @classmethod
    def from_graphs(cls, graphs: Iterable) -> Lexicon:
        concepts: Counter = Counter()
        senses: dict[str, Counter] = defaultdict(Counter)
        roles: dict[str, Counter] = defaultdict(Counter)
        for graph in graphs:
            instance = {v: c for v, r, c in graph.triples if r == ":instance"}
            for concept in instance.values():
                concepts[concept] += 1
                found = _FRAME.match(concept)
                if found:
                    senses[found.group("lemma")][concept] += 1
            for source, role, _ in graph.edges():
                frame = instance.get(source, "")
                if _FRAME.match(frame) and role in (":ARG0", ":ARG1"):
                    roles[frame][role] += 1
        frames = {lemma: counts.most_common(1)[0][0] for lemma, counts in senses.items()}
        # A frame annotated with ARG1 but never ARG0 (arrive-01, fall-01) takes its subject as ARG1.
        subject = {f: (":ARG0" if c[":ARG0"] > 0 else ":ARG1") for f, c in roles.items()}
        return cls(frames=frames, concepts=concepts, subject_role=subject)

    @classmethod
    def from_training_data(cls, data_root=None) -> Lexicon:
        """The lexicon of the Little Prince v1.6 training split under the data root."""
        from sentkit.amr.io import read_amr
        from sentkit.datasets.root import data_file

        return cls.from_graphs(read_amr(data_file(*TRAINING_FILE, root=data_root)).graphs)

    def frame(self, lemma: str, default_sense: str | None = "01") -> str:
        """`lemma-NN` as seen in training, else `lemma-<default_sense>` (or the bare lemma when None)."""
        if lemma in self.frames:
            return self.frames[lemma]
        return f"{lemma}-{default_sense}" if default_sense else lemma

    def knows(self, concept: str) -> bool:
        return concept in self.concepts
