"""MediaWiki wikitext -> plain paragraphs with the character spans of their [[links]].

A small hand-written cleaner rather than a full parser: EASE needs only the running text of articles
and where each hyperlink's anchor sits in it. Templates, tables, references, files and categories are
removed; headings, lists and other non-prose lines are dropped.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

# namespaces and interwiki prefixes whose [[X:...]] links are not articles (English names; other
# languages' local names are read from the dump's <namespaces> and passed in as `skip_prefixes`)
DEFAULT_SKIP_PREFIXES = frozenset(
    "media special talk user wikipedia wp project file image mediawiki template help category portal "
    "draft module book education timedtext gadget wikt wiktionary wikibooks wikiquote wikisource "
    "wikinews wikiversity wikivoyage commons meta species mw s q n b v d c w".split()
)
_FILE_PREFIXES = frozenset({"file", "image", "media"})
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_REF = re.compile(r"<ref\b[^>]*/>|<ref\b[^>]*>.*?(?:</ref\s*>|$)", re.S | re.I)
_DROPPED_TAGS = re.compile(
    r"<(math|gallery|timeline|syntaxhighlight|source|score|chem|graph|imagemap|hiero|pre|nowiki)\b[^>]*>"
    r".*?</\1\s*>",
    re.S | re.I,
)
_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_EXTERNAL = re.compile(r"\[(?:https?:|ftp:)?//[^\s\]]+(?:\s+([^\]]*))?\]")
_QUOTES = re.compile(r"'{2,}")
_SPACES = re.compile(r"[ \t\u00a0]+")
_TRAIL = re.compile(r"[a-z]+")
_NON_PROSE = tuple("*#:;|!{}=_")


@dataclass(frozen=True)
class Link:
    """A hyperlink: normalised target title and the [start, end) span of its anchor in the paragraph."""

    target: str
    start: int
    end: int


@dataclass
class Paragraph:
    text: str
    links: list[Link]


def normalise_title(title: str) -> str:
    """MediaWiki's canonical form: underscores as spaces, single spaces, no #section, first letter upper."""
    title = html.unescape(title).replace("_", " ")
    title = title.split("#", 1)[0]
    title = _SPACES.sub(" ", title).strip().lstrip(":").strip()
    return title[:1].upper() + title[1:]


_BRACES = re.compile(r"\{\{|\{\||\}\}|\|\}")
_BRACKETS = re.compile(r"\[\[|\]\]")


def _remove_templates_and_tables(text: str) -> str:
    """Drop balanced {{templates}} and {|tables|}, nested in each other; an unclosed one runs to the end."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    for m in _BRACES.finditer(text):
        token = m.group()
        if token in ("{{", "{|"):
            if not stack:
                out.append(text[pos : m.start()])
            stack.append("}}" if token == "{{" else "|}")
        elif stack and token == stack[-1]:
            stack.pop()
            if not stack:
                pos = m.end()
    if not stack:
        out.append(text[pos:])
    return "".join(out)


def _namespace_links(text: str, skip: frozenset[str]) -> tuple[str, list[str]]:
    """Remove [[File:...]] / [[Category:...]] / interlanguage links (nested [[ ]] in captions too).

    Returns the text and the page's category names (the offline type fallback uses them).
    """
    out: list[str] = []
    categories: list[str] = []
    pos = 0
    depth = 0
    start = -1
    for m in _BRACKETS.finditer(text):
        if depth == 0:
            if m.group() != "[[" or m.start() < pos:
                continue
            prefix = text[m.end() : m.end() + 40].split(":", 1)
            name = prefix[0].strip().lower() if len(prefix) == 2 else ""
            if not name or not (
                name in skip or name in _FILE_PREFIXES or name == "category" or _is_lang(name)
            ):
                continue
            start = m.start()
            depth = 1
        elif m.group() == "[[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                inner = text[start + 2 : m.start()]
                if inner.split(":", 1)[0].strip().lower() == "category":
                    categories.append(normalise_title(inner.split(":", 1)[1].split("|", 1)[0]))
                out.append(text[pos:start])
                pos = m.end()
    out.append(text[pos:] if depth == 0 else text[pos:start])
    return "".join(out), categories


def _is_lang(prefix: str) -> bool:
    # interlanguage links look like [[de:Titel]] / [[zh-yue:...]]
    return bool(re.fullmatch(r"[a-z]{2,3}(?:-[a-z]{2,8})*", prefix)) and len(prefix) <= 12


def _links_in_line(line: str) -> Paragraph:
    """Replace [[Target|anchor]]trail by anchor+trail, recording each anchor's span."""
    out: list[str] = []
    links: list[Link] = []
    pos = 0
    i, n = 0, len(line)
    while i < n:
        if line.startswith("[[", i):
            end = line.find("]]", i + 2)
            if end < 0:
                break
            inner = line[i + 2 : end]
            target, _, anchor = inner.partition("|")
            anchor = anchor if anchor.strip() else target
            i = end + 2
            trail = _TRAIL.match(line, i)
            if trail:  # [[bus]]es -> "buses", the whole word is the anchor
                anchor += trail.group()
                i = trail.end()
            anchor = anchor.replace("[[", "").replace("]]", "")
            title = normalise_title(target)
            out.append(anchor)
            if title and anchor.strip():
                links.append(Link(title, pos, pos + len(anchor)))
            pos += len(anchor)
        else:
            out.append(line[i])
            pos += 1
            i += 1
    return Paragraph("".join(out), links)


def clean_wikitext(
    text: str, skip_prefixes: frozenset[str] = DEFAULT_SKIP_PREFIXES
) -> tuple[list[Paragraph], list[str]]:
    """Prose paragraphs of an article with their links, and the page's categories."""
    text = _COMMENT.sub("", text)
    text = _REF.sub("", text)
    text = _DROPPED_TAGS.sub("", text)
    text = _TAG.sub("", text)
    text = html.unescape(text)
    text = _remove_templates_and_tables(text)
    text, categories = _namespace_links(text, skip_prefixes)
    text = _EXTERNAL.sub(lambda m: m.group(1) or "", text)
    text = _QUOTES.sub("", text)
    paragraphs: list[Paragraph] = []
    for raw in text.split("\n"):
        line = _SPACES.sub(" ", raw).strip()
        if not line or line.startswith(_NON_PROSE):
            continue
        paragraph = _links_in_line(line)
        paragraph = _tidy(paragraph)
        if paragraph.text:
            paragraphs.append(paragraph)
    return paragraphs, categories


def _tidy(paragraph: Paragraph) -> Paragraph:
    """Collapse the double spaces and ' ,' left where templates and refs were removed, keeping spans right."""
    text = paragraph.text
    keep = []
    for i, ch in enumerate(text):
        if ch == " " and (i + 1 == len(text) or text[i + 1] in " ,.;:)" or (i and text[i - 1] in " (")):
            continue
        keep.append(i)
    if len(keep) == len(text):
        return paragraph
    new_index = {old: new for new, old in enumerate(keep)}
    new_text = "".join(text[i] for i in keep)

    def moved(pos: int) -> int:
        while pos < len(text) and pos not in new_index:
            pos += 1
        return new_index.get(pos, len(new_text))

    links = [Link(link.target, moved(link.start), moved(link.end)) for link in paragraph.links]
    links = [link for link in links if link.end > link.start]
    stripped = new_text.strip()
    shift = len(new_text) - len(new_text.lstrip())
    links = [Link(k.target, k.start - shift, k.end - shift) for k in links if k.end - shift <= len(stripped)]
    return Paragraph(stripped, links)
