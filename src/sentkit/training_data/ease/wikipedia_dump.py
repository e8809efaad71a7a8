"""Streaming reader for MediaWiki `pages-articles` XML dumps (.xml, .xml.bz2, .xml.gz), any language.

Pages are yielded one at a time from `xml.etree.ElementTree.iterparse` over a (de)compressing stream,
and each element is cleared after use, so memory stays flat however large the dump. A truncated
archive, a file that is not XML, or XML that is not a MediaWiki export stops with one line naming the
file and the line of the decompressed XML where reading failed.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sentkit.errors import DataFormatError, MissingDataError


@dataclass
class Page:
    title: str
    ns: int
    page_id: int
    text: str
    redirect: str | None = None
    line: int = 0
    """line of the decompressed XML where the page ends (for error messages)"""


@dataclass
class SiteInfo:
    dbname: str = ""
    lang: str = "en"
    namespaces: dict[int, str] = field(default_factory=dict)


class _CountingReader:
    """File wrapper counting newlines read, so a parse failure can name a line of the decompressed XML."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.lines = 1

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.lines += data.count(b"\n")
        return data


def open_dump(path: str | Path):
    """A binary stream of the dump's XML, decompressing by file suffix (or magic bytes)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a MediaWiki pages-articles dump (.xml or .xml.bz2)")
    with path.open("rb") as fh:
        magic = fh.read(6)
    if path.suffix == ".bz2" or magic.startswith(b"BZh"):
        return bz2.open(path, "rb")
    if path.suffix == ".gz" or magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rb")
    if path.suffix == ".xz" or magic.startswith(b"\xfd7zXZ"):
        return lzma.open(path, "rb")
    return path.open("rb")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def iter_pages(path: str | Path, site: SiteInfo | None = None) -> Iterator[Page]:
    """Every <page> of the dump in file order; `site` (if given) is filled from <siteinfo> on the way."""
    path = Path(path)
    reader = _CountingReader(open_dump(path))
    pages = 0
    last_title = ""
    try:
        context = ET.iterparse(reader, events=("start", "end"))
        root = None
        for event, elem in context:
            if root is None:
                root = elem
                if _local(elem.tag) != "mediawiki":
                    raise DataFormatError(
                        path,
                        reader.lines,
                        f"expected a MediaWiki export (<mediawiki>), got <{_local(elem.tag)}>",
                    )
                continue
            if event != "end":
                continue
            name = _local(elem.tag)
            if name == "siteinfo":
                if site is not None:
                    _read_siteinfo(elem, site)
                root.clear()
            elif name == "page":
                page = _page(elem, path, reader.lines)
                pages += 1
                last_title = page.title
                root.clear()  # drop the finished page (and its text) from the tree
                yield page
    except ET.ParseError as err:
        line = err.position[0] if err.position else reader.lines
        raise DataFormatError(path, line, f"expected well-formed MediaWiki XML ({err})") from None
    except (EOFError, OSError, lzma.LZMAError) as err:
        after = f" after {pages} pages (last {last_title!r})" if pages else ""
        raise DataFormatError(
            path, reader.lines, f"the compressed stream is truncated or corrupt{after}: {err}"
        ) from None
    finally:
        reader.raw.close()
    if pages == 0:
        raise DataFormatError(path, reader.lines, "expected <page> elements in the dump, found none")


def _page(elem, path: Path, line: int) -> Page:
    fields: dict[str, str] = {}
    redirect = None
    for child in elem:
        name = _local(child.tag)
        if name in ("title", "ns", "id"):
            fields[name] = child.text or ""
        elif name == "redirect":
            redirect = child.get("title")
        elif name == "revision":
            for part in child:
                if _local(part.tag) == "text":
                    fields["text"] = part.text or ""
    if "title" not in fields:
        raise DataFormatError(path, line, "expected a <title> in every <page>")
    try:
        ns = int(fields.get("ns", "0") or 0)
        page_id = int(fields.get("id", "0") or 0)
    except ValueError:
        raise DataFormatError(path, line, "expected integer <ns> and <id> in <page>") from None
    return Page(fields["title"], ns, page_id, fields.get("text", ""), redirect, line)


def _read_siteinfo(elem, site: SiteInfo) -> None:
    for child in elem:
        name = _local(child.tag)
        if name == "dbname" and child.text:
            site.dbname = child.text.strip()
            # enwiki -> en, zh_yuewiki -> zh-yue
            if site.dbname.endswith("wiki"):
                site.lang = site.dbname[: -len("wiki")].replace("_", "-")
        elif name == "namespaces":
            for ns in child:
                if ns.text:
                    site.namespaces[int(ns.get("key", "0"))] = ns.text
