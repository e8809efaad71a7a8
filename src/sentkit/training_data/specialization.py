"""Training rows for semantic specialization (Emu): labelled sentences of one language, each paired with an
unlabelled sentence of another language for the language discriminator.

Emu's Algorithm 1 draws an adversarial language at random and a minibatch of it at every critic step. Here
each row's adversarial sentence comes from a language drawn uniformly at random (seeded), so a batch mixes
languages: the critic's loss is linear in the two distributions, so its expected gradient (and the
encoder's) equals that of Algorithm 1's one-language-per-step draw; only the variance differs.
For Emu-Parallel the adversarial sentence is a translation of the anchor (rows sharing an `id`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentkit.datasets.columns import ADVERSARIAL, ANCHOR, LABEL, LANG
from sentkit.datasets.labelled_sentences import LabelledSentences, load_marc_categories
from sentkit.errors import DataFormatError

ADVERSARIAL_LANG = "adversarial_lang"
MARC_TRAIN_SPLIT = "dev"  # MARC's train split is not available offline: English dev is the labelled set


def specialization_rows(
    sentences: LabelledSentences,
    train_lang: str = "en",
    *,
    adversarial: bool = True,
    parallel: bool = False,
    label_names: Sequence[str] | None = None,
    seed: int = 0,
):
    """A `datasets.Dataset` of (anchor, label id, lang[, adversarial, adversarial_lang]) and the label names.

    Anchors are the labelled `train_lang` rows; label ids index `label_names` (default: the sorted labels
    seen). Adversarial sentences are every other language's rows (their labels unused).
    """
    from datasets import Dataset

    labelled = sentences.where(lambda text, label, lang, id_: lang == train_lang and label != "")
    if not len(labelled):
        raise DataFormatError("training data", None, f"expected labelled {train_lang!r} rows, found none")
    names = list(label_names) if label_names is not None else sorted(set(labelled.labels))
    index = {name: i for i, name in enumerate(names)}
    unknown = sorted(set(labelled.labels) - set(index))
    if unknown:
        raise DataFormatError("training data", None, f"labels {unknown[:5]} are not in label_names")
    columns: dict[str, list] = {
        ANCHOR: labelled.texts,
        LABEL: [index[label] for label in labelled.labels],
        LANG: labelled.langs,
    }
    if adversarial:
        others = sentences.where(lambda text, label, lang, id_: lang != train_lang)
        if not len(others):
            raise DataFormatError(
                "training data", None, f"expected sentences in languages other than {train_lang!r}"
            )
        rng = np.random.default_rng(seed)
        pick = _translations if parallel else _random_language
        texts, langs = pick(labelled, others, rng)
        columns[ADVERSARIAL], columns[ADVERSARIAL_LANG] = texts, langs
    return Dataset.from_dict(columns), names


def _random_language(labelled: LabelledSentences, others: LabelledSentences, rng):
    by_lang: dict[str, list[str]] = defaultdict(list)
    for text, lang in zip(others.texts, others.langs):
        by_lang[lang].append(text)
    langs = sorted(by_lang)
    drawn = rng.integers(len(langs), size=len(labelled))  # a language per row, uniformly
    texts = [by_lang[langs[k]][rng.integers(len(by_lang[langs[k]]))] for k in drawn]
    return texts, [langs[k] for k in drawn]


def _translations(labelled: LabelledSentences, others: LabelledSentences, rng):
    by_id: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for text, lang, id_ in zip(others.texts, others.langs, others.ids):
        if id_:
            by_id[id_].append((text, lang))
    missing = [i for i, id_ in enumerate(labelled.ids) if not by_id.get(id_)]
    if missing:
        raise DataFormatError(
            "training data",
            None,
            f"Emu-Parallel needs a translation (another row with the same id) for every labelled row; "
            f"{len(missing)} of {len(labelled)} have none (first: {labelled.texts[missing[0]]!r})",
        )
    chosen = [by_id[id_][rng.integers(len(by_id[id_]))] for id_ in labelled.ids]
    return [text for text, _ in chosen], [lang for _, lang in chosen]


def marc_specialization_sentences(
    train_lang: str = "en",
    adversarial_langs: Sequence[str] = ("de", "es", "fr", "ja", "zh"),
    root: str | Path | None = None,
    text_field: str = "review_title",
    max_train: int | None = None,
    max_adversarial: int | None = None,
    seed: int = 0,
) -> LabelledSentences:
    """MARC dev sets: `train_lang` labelled by product category, the other languages' sentences unlabelled
    (their categories are dropped: Emu sees no labels outside the training language)."""
    rng = np.random.default_rng(seed)
    out = _sample(load_marc_categories(train_lang, MARC_TRAIN_SPLIT, root, text_field), max_train, rng)
    for lang in adversarial_langs:
        rows = _sample(load_marc_categories(lang, MARC_TRAIN_SPLIT, root, text_field), max_adversarial, rng)
        out.extend(LabelledSentences(rows.texts, [""] * len(rows), rows.langs, rows.ids))
    return out


def _sample(rows: LabelledSentences, limit: int | None, rng) -> LabelledSentences:
    if limit is None or limit >= len(rows):
        return rows
    keep = set(rng.choice(len(rows), size=limit, replace=False).tolist())
    out = LabelledSentences()
    for i, row in enumerate(zip(rows.texts, rows.labels, rows.langs, rows.ids)):
        if i in keep:
            out.append(*row)
    return out


__all__ = ["ADVERSARIAL_LANG", "marc_specialization_sentences", "specialization_rows"]
