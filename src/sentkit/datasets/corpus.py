"""Plain-text training corpora: one text a line, UTF-8 (SimCSE's wiki1m, JCSE's ja-clinic / ja-qabot).

Blank lines are dropped and, by default, exact duplicates too: a repeated sentence in an unsupervised
SimCSE batch becomes a false negative of itself. Lines are already sentences in the corpora we ship
(ja-clinic: 11,832 lines, median 51 characters), so splitting is off unless asked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from sentkit.datasets.lines import iter_utf8_lines
from sentkit.errors import MissingDataError

# Raw domain corpora shipped in the benchmark data (JCSE's stage-one text), by short name: path parts
# below the data root.
CORPORA: dict[str, tuple[str, ...]] = {
    "ja-clinic": ("corpora", "ja-clinic"),
    "ja-qabot": ("corpora", "ja-qabot"),
}
# Japanese full stops and !/? always end a sentence; an ASCII "." only before a space, a non-ASCII
# character (clinical abstracts write "疾患である.スーパー抗原...") or the end, so "3.5 mg" survives.
_SENTENCE_END = re.compile(r"(?<=[。．！？!?])|(?<=\.)(?=\s|[^\x00-\x7f]|$)")


def split_sentences(text: str) -> list[str]:
    """Split a line after sentence-final punctuation (。．！？!? and a final '.'); pieces are stripped."""
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece.strip()]


def corpus_files(path: str | Path) -> list[Path]:
    """The file itself, or every `*.txt` directly inside a folder (sorted, so runs repeat)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.txt") if p.is_file())
        if not files:
            raise MissingDataError(path, "expected a folder holding one or more *.txt corpus files")
        return files
    if not path.is_file():
        raise MissingDataError(
            path, "expected a UTF-8 text file (one text a line) or a folder of *.txt files"
        )
    return [path]


def read_corpus(
    path: str | Path,
    dedupe: bool = True,
    sentences: bool = False,
    min_chars: int = 1,
) -> list[str]:
    """Texts of a corpus file or folder of `*.txt`: stripped, blank (and shorter than `min_chars`) dropped,
    duplicates dropped keeping the first when `dedupe`, each line split into sentences when `sentences`."""
    texts = (text for file in corpus_files(path) for text in _file_texts(file, sentences))
    kept = (t for t in texts if len(t) >= max(min_chars, 1))
    return list(dict.fromkeys(kept)) if dedupe else list(kept)


def _file_texts(path: Path, sentences: bool) -> Iterable[str]:
    for _, line in iter_utf8_lines(path):
        line = line.strip()
        if not line:
            continue
        if sentences:
            yield from split_sentences(line)
        else:
            yield line
