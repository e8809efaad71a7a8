"""Text from user data (model, task and language names) placed in a markdown table cell or heading.

A `|` would end the cell, a newline the row, and backticks, `*`, `[`, `<`, `$` ... would turn a model
name into code, emphasis, a link, HTML or math; each is backslash-escaped (CommonMark lets any ASCII
punctuation be escaped) and line breaks become spaces, so the name renders exactly as written. An `_`
can only emphasise with a second one and never inside a word (`main_score`), so underscores are escaped
only where two could pair up, which keeps the usual names readable in the raw file.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"[\\`*\[\]<|~&$]")
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def markdown_text(text: object) -> str:
    """`text` as literal markdown inline text: one line, metacharacters escaped."""
    line = _SPECIAL.sub(lambda m: "\\" + m.group(0), " ".join(str(text).splitlines()))
    if len(_EDGE_UNDERSCORE.findall(line)) >= 2:
        line = _EDGE_UNDERSCORE.sub(r"\\_", line)
    return line
