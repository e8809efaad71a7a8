"""Streaming reader for Wikidata JSON dumps (`latest-all.json[.bz2|.gz]`): per item, its Q-id, the
title of its page on one wiki (sitelinks) and its "instance of" (P31) classes, EASE's entity types.

The dump is one JSON array with one item per line (`[`, `{...},`, ..., `{...}`, `]`), so it is read
line by line and never held in memory.
"""

from __future__ import annotations

import bz2
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sentkit.errors import DataFormatError, MissingDataError


@dataclass(frozen=True)
class WikidataItem:
    qid: str
    title: str
    """title of the item's page on the requested wiki ('' when it has none)"""
    instance_of: tuple[str, ...]
    """P31 class ids in dump order (preferred statements first as Wikidata lists them)"""


def _open_text(path: Path):
    with path.open("rb") as fh:
        magic = fh.read(3)
    if path.suffix == ".bz2" or magic.startswith(b"BZh"):
        return bz2.open(path, "rt", encoding="utf-8")
    if path.suffix == ".gz" or magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def iter_wikidata(path: str | Path, site: str = "enwiki") -> Iterator[WikidataItem]:
    """Every item (Q-id) of the dump with its `site` title and P31 classes; properties are skipped."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a Wikidata JSON dump (latest-all.json.bz2)")
    number = 0
    try:
        with _open_text(path) as fh:
            for number, line in enumerate(fh, start=1):
                line = line.strip().rstrip(",")
                if line in ("[", "]", ""):
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataFormatError(
                        path, number, f"expected one JSON entity per line ({err.msg} at column {err.colno})"
                    ) from None
                if not isinstance(obj, dict) or "id" not in obj:
                    raise DataFormatError(path, number, "expected a Wikidata entity object with an 'id'")
                if obj.get("type", "item") != "item":
                    continue
                title = (obj.get("sitelinks") or {}).get(site, {}).get("title", "")
                classes = []
                for claim in (obj.get("claims") or {}).get("P31", []):
                    value = ((claim.get("mainsnak") or {}).get("datavalue") or {}).get("value")
                    if isinstance(value, dict) and "id" in value:
                        classes.append(value["id"])
                yield WikidataItem(obj["id"], title, tuple(classes))
    except (EOFError, OSError) as err:
        raise DataFormatError(path, number, f"the compressed stream is truncated or corrupt: {err}") from None
