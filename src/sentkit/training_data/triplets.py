"""NLI triplets (premise, entailment, contradiction) for supervised contrastive objectives.

`nli_triplets` turns labelled NLI pairs into SimCSE's supervised rows; `xnli_triplets` reads them from
XNLI's dev/test sets. Data specs and files resolve through `sentkit.training_data.specs`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from datasets import Dataset
from sentkit.datasets.columns import ANCHOR, LANG, NEGATIVE, POSITIVE
from sentkit.datasets.nli import CONTRADICTION, ENTAILMENT, NLI_LABELS, NliRow, read_xnli
from sentkit.datasets.xnli import XNLI_LANGS, XNLI_SPLITS
from sentkit.errors import ConfigError


def nli_triplets(rows: Iterable[NliRow]) -> Dataset:
    """(premise, entailment, contradiction) triplets, SimCSE's supervised data (Gao et al. 2021, sec. 4).

    Hypotheses are grouped by (lang, premise text). Every entailment hypothesis of a premise that has at
    least one contradiction becomes one triplet; the k-th entailment (file order) takes the
    (k mod m)-th of the premise's m contradictions, so a premise with 2 entailments and 1 contradiction
    gives 2 triplets sharing the negative. Neutral pairs and premises without both labels are dropped
    (SimCSE: 314k entailment pairs -> 275,601 with a hard negative, princeton-nlp/SimCSE#238).
    Triplets come out grouped by premise in order of first appearance.
    """
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for row in rows:
        if row.label not in NLI_LABELS:
            raise ValueError(f"NLI label must be one of {NLI_LABELS}, got {row.label!r}")
        group = groups.setdefault((row.lang, row.premise), {ENTAILMENT: [], CONTRADICTION: []})
        if row.label in group:
            group[row.label].append(row.hypothesis)
    columns: dict[str, list[str]] = {ANCHOR: [], POSITIVE: [], NEGATIVE: [], LANG: []}
    for (lang, premise), group in groups.items():
        negatives = group[CONTRADICTION]
        if not negatives:
            continue
        for k, positive in enumerate(group[ENTAILMENT]):
            columns[ANCHOR].append(premise)
            columns[POSITIVE].append(positive)
            columns[NEGATIVE].append(negatives[k % len(negatives)])
            columns[LANG].append(lang)
    if not columns[ANCHOR]:
        raise ValueError("no premise has both an entailment and a contradiction hypothesis: no triplets")
    return Dataset.from_dict(columns)


def xnli_triplets(
    langs: str | Iterable[str] | None = None,
    splits: Sequence[str] = ("dev",),
    data_root: str | Path | None = None,
) -> Dataset:
    """Supervised-SimCSE triplets from XNLI (830 per language from each dev set; 15 languages).

    The English NLI training sets (SNLI, MultiNLI) are not available offline here, so XNLI's dev sets
    (2490 pairs per language = 830 premises x one hypothesis per label) stand in as training data.
    Training on `splits=("test",)` leaks into the `xnli` evaluation task, which uses the test sets.
    """
    chosen = _xnli_langs(langs)
    for split in splits:
        if split not in XNLI_SPLITS:
            raise ValueError(f"XNLI split must be one of {XNLI_SPLITS}, got {split!r}")
    rows = [row for split in splits for lang in chosen for row in read_xnli(lang, split, root=data_root)]
    return nli_triplets(rows)


def _xnli_langs(langs: str | Iterable[str] | None) -> list[str]:
    if langs is None:
        return list(XNLI_LANGS)
    chosen = [
        lang.strip() for lang in (langs.split(",") if isinstance(langs, str) else langs) if lang.strip()
    ]
    unknown = [lang for lang in chosen if lang not in XNLI_LANGS]
    if unknown or not chosen:
        raise ConfigError(f"XNLI languages must be among {', '.join(XNLI_LANGS)}, got {unknown or chosen}")
    return chosen
