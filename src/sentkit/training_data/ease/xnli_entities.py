"""Offline multilingual EASE rows: entities found in the English side of the XNLI dev sets label the
14 translations of the same sentence with the same (language-independent) entity id.

EASE builds its 18-language data from each language's Wikipedia, with entities made language-independent
through Wikidata / interlanguage links. Without other-language dumps here, the XNLI dev sets (the same
2490 English pairs professionally translated into 14 languages; line i is a translation of English
line i) stand in: an English sentence's entities are found by exact match against the anchor texts the
dump links them with, and every translation of that sentence becomes a row for each entity. Never an
evaluation set: XNLI's test split, Tatoeba and MewsC-16 are not used.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from sentkit.datasets.columns import ANCHOR, ENTITY_IDS, GROUP, LANG
from sentkit.datasets.nli import read_xnli
from sentkit.datasets.xnli import XNLI_LANGS
from sentkit.errors import DataFormatError

# English words that are also anchors of some link ("The", "A") but never name an entity on their own
_STOPWORDS = frozenset(
    "a an the this that these those it its he she they we you i his her their our my your of in on at to "
    "for from by with and or but not no is are was were be been has have had do did does can will would "
    "one two three first new old all some many more most other such there here when where what who which "
    "how why yes also just very up out so if then than".split()
)
MAX_NGRAM = 5


def surface_forms(
    anchors: Iterator[tuple[str, int]], min_count: int = 2, min_share: float = 0.5
) -> dict[str, int]:
    """Anchor text -> entity id, for anchors linked at least `min_count` times whose most frequent entity
    takes at least `min_share` of their links (EASE's entities are those hyperlinks; ambiguous or rare
    anchor texts would mislabel sentences)."""
    by_text: dict[str, Counter[int]] = {}
    for text, entity in anchors:
        text = text.strip()
        if len(text) >= 3 and text.lower() not in _STOPWORDS:
            by_text.setdefault(text, Counter())[entity] += 1
    forms = {}
    for text, counts in by_text.items():
        entity, n = counts.most_common(1)[0]
        total = sum(counts.values())
        lowercase_word = text.islower() and " " not in text
        # a lower-case single word ("music") is a common noun far more often than a link: demand more evidence
        if total >= (3 * min_count if lowercase_word else min_count) and n / total >= min_share:
            forms[text] = entity
    return forms


def find_entities(sentence: str, forms: dict[str, int]) -> list[int]:
    """Entity ids whose anchor text occurs in `sentence` as whole words; longest match first, no overlaps."""
    words = sentence.replace(",", " ,").replace(".", " .").replace("'s ", " 's ").split()
    found: list[int] = []
    i = 0
    while i < len(words):
        for n in range(min(MAX_NGRAM, len(words) - i), 0, -1):
            text = " ".join(words[i : i + n])
            if text in forms:
                if forms[text] not in found:
                    found.append(forms[text])
                i += n
                break
        else:
            i += 1
    return found


def xnli_entity_rows(
    anchors: Callable[[], Iterator[tuple[str, int]]],
    data_root: str | Path | None = None,
    langs: tuple[str, ...] = XNLI_LANGS,
    groups: Iterator[int] | None = None,
) -> Iterator[dict]:
    """Rows (anchor, entity, lang, group, page, on_page) for every XNLI dev sentence whose English side names
    an entity.

    `on_page` (the entities of the same English sentence) is what the hard-negative miner must avoid;
    `group` numbers the English sentence (drawn from `groups`, default 0, 1, ...), so its translations (and
    its rows for other entities) are not each other's in-batch negatives.
    """
    groups = itertools.count() if groups is None else groups
    forms = surface_forms(anchors())
    texts = {lang: read_xnli(lang, "dev", root=data_root) for lang in langs}
    english = texts["en"] if "en" in texts else read_xnli("en", "dev", root=data_root)
    for lang, rows in texts.items():
        if len(rows) != len(english):
            raise DataFormatError(
                f"transfer/XNLI/dev-{lang}.tsv",
                None,
                f"expected {len(english)} rows as dev-en.tsv, got {len(rows)}",
            )
    seen: set[str] = set()
    for i, row in enumerate(english):
        for side in ("premise", "hypothesis"):
            sentence = getattr(row, side)
            if sentence in seen:  # each premise is repeated for its three hypotheses
                continue
            seen.add(sentence)
            group = next(groups)
            entities = find_entities(sentence, forms)
            for entity in entities:
                for lang, rows in texts.items():
                    yield {
                        ANCHOR: getattr(rows[i], side),
                        ENTITY_IDS: entity,
                        LANG: lang,
                        GROUP: group,
                        "page": f"xnli-dev:{i + 1}:{side}",
                        "on_page": set(entities),
                    }
