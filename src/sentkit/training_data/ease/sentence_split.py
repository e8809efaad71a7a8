"""Sentence boundaries as character spans: spaCy's rule-based sentencizer when spaCy is installed, else a
small punctuation rule splitter (both work for any language; neither needs a trained pipeline)."""

from __future__ import annotations

import re
from collections.abc import Callable

from sentkit.errors import InvalidArgument

Span = tuple[int, int]

# abbreviations after which a period does not end an English sentence
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e al fig no vol ed eds approx ca c cf gen col lt sgt rev "
    "inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k".split()
)
_BOUNDARY = re.compile(
    r"[.!?][\"')\]\u201d\u2019]*\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9\u00c0-\u024f\u0370-\u04ff])"
)
_CJK_BOUNDARY = re.compile(r"[。！？]+[」』）]*")


def rule_sentences(text: str) -> list[Span]:
    """Split after . ! ? followed by space and an upper-case letter or digit, except after abbreviations
    and initials ("J. R. R. Tolkien"); after 。！？ always."""
    cuts: list[int] = []
    for m in _BOUNDARY.finditer(text):
        word = text[: m.start() + 1].rsplit(None, 1)[-1].rstrip(".").lower()
        if text[m.start()] == "." and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        cuts.append(m.end())
    cuts.extend(m.end() for m in _CJK_BOUNDARY.finditer(text) if m.end() < len(text))
    spans: list[Span] = []
    start = 0
    for cut in sorted(set(cuts)):
        spans.append(_trimmed(text, start, cut))
        start = cut
    spans.append(_trimmed(text, start, len(text)))
    return [s for s in spans if s[1] > s[0]]


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def spacy_sentencizer(lang: str = "en") -> Callable[[str], list[Span]] | None:
    """spaCy's punctuation-rule sentencizer for `lang` (None when spaCy is not installed)."""
    try:
        import spacy
    except ImportError:
        return None
    try:
        nlp = spacy.blank(lang)
    except ImportError:  # no language class for this code: spaCy's multi-language one
        nlp = spacy.blank("xx")
    nlp.add_pipe("sentencizer")

    def split(text: str) -> list[Span]:
        return [_trimmed(text, s.start_char, s.end_char) for s in nlp(text).sents if s.text.strip()]

    return split


def sentence_splitter(kind: str = "auto", lang: str = "en") -> Callable[[str], list[Span]]:
    """`auto` = spaCy's sentencizer if spaCy is installed, else the rule splitter; `spacy` requires spaCy."""
    if kind not in ("auto", "spacy", "rule"):
        raise InvalidArgument(f"sentence splitter must be auto, spacy or rule, got {kind!r}")
    if kind == "rule":
        return rule_sentences
    split = spacy_sentencizer(lang)
    if split is None:
        if kind == "spacy":
            raise ImportError("the spaCy sentence splitter needs spaCy: pip install 'sentkit[ease]'")
        return rule_sentences
    return split
