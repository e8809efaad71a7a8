"""Reader for MediaWiki `langlinks` SQL dumps (`xxwiki-latest-langlinks.sql[.gz]`): which page of this
wiki (by page id) is the same article as which title in another language.

The file is a mysqldump: `INSERT INTO `langlinks` VALUES (ll_from,'ll_lang','ll_title'),(...),...;`
lines, strings in single quotes with backslash escapes. Lines are read one at a time.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from sentkit.errors import DataFormatError, MissingDataError

_INSERT = re.compile(r"INSERT INTO `langlinks` VALUES\s*")
_ROW = re.compile(r"\((\d+),'((?:[^'\\]|\\.)*)','((?:[^'\\]|\\.)*)'\)")
_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def iter_langlinks(path: str | Path, lang: str | None = None) -> Iterator[tuple[int, str, str]]:
    """(page id, language code, title in that language) for every row; only `lang`'s when given."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(
            path, "expected a MediaWiki langlinks SQL dump (xxwiki-latest-langlinks.sql.gz)"
        )
    with path.open("rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    inserts = 0
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="strict") as fh:
            for number, line in enumerate(fh, start=1):
                head = _INSERT.match(line)
                if not head:
                    continue
                inserts += 1
                body = line[head.end() :].rstrip().rstrip(";")
                pos = 0
                for row in _ROW.finditer(body):
                    if row.start() != pos:
                        raise DataFormatError(
                            path,
                            number,
                            f"expected (page_id,'lang','title') tuples, got {body[pos : pos + 40]!r}",
                        )
                    pos = row.end() + (1 if body[row.end() : row.end() + 1] == "," else 0)
                    code = _unescape(row.group(2))
                    if lang is None or code == lang:
                        yield int(row.group(1)), code, _unescape(row.group(3)).replace("_", " ")
                if pos != len(body):
                    raise DataFormatError(
                        path,
                        number,
                        f"expected (page_id,'lang','title') tuples, got {body[pos : pos + 40]!r}",
                    )
    except UnicodeDecodeError as err:
        raise DataFormatError(path, number + 1, f"expected UTF-8 SQL text ({err.reason})") from None
    except (EOFError, OSError) as err:
        raise DataFormatError(path, number, f"the compressed stream is truncated or corrupt: {err}") from None
    if not inserts:
        raise DataFormatError(path, None, "expected INSERT INTO `langlinks` VALUES lines, found none")
