"""The evaluation task contract: a name, languages, real files, and `evaluate(encoder) -> scores`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sentkit.encoders.protocol import Encoder


@dataclass
class Task:
    """Subclasses load their real files lazily and return scores in percent.

    `evaluate` returns a flat dict: `main_score` (MTEB convention) plus breakdown keys such as a
    language pair (`en-de`), a dataset (`STS12`) or a direction (`deu->eng`).
    """

    name: str = ""
    languages: tuple[str, ...] = ()
    data_root: Path | None = None
    batch_size: int = 64
    meta: dict = field(default_factory=dict)

    def load(self) -> None:  # pragma: no cover - each task implements it
        raise NotImplementedError

    def evaluate(self, encoder: Encoder) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError
