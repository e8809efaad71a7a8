"""Read AMR graphs: PENMAN files with `# ::id` / `# ::snt` metadata, and the AMR-BP XML (Anchiêta & Pardo 2018).

Strict by default: a graph that does not decode raises one line naming the file, the line and the graph id.
With `on_error="skip"` the graph is left out and the same line is kept in `AmrCorpus.skipped`, so a caller
can report exactly what was dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sentkit.amr import require
from sentkit.errors import DataFormatError

_BLANK = re.compile(r"\n[ \t]*\n")
_META_ID = re.compile(r"::id\s+(\S+)")


@dataclass
class AmrCorpus:
    """Decoded graphs (`penman.Graph`, metadata in `.metadata`) plus one line per skipped or repaired item."""

    path: str
    graphs: list = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file:line: graph ID: reason", one per dropped graph
    repaired: list[str] = field(default_factory=list)  # markup fixed on the fly (XML), graph kept

    def __len__(self) -> int:
        return len(self.graphs)

    def by_id(self) -> dict[str, object]:
        return {g.metadata.get("id", str(i)): g for i, g in enumerate(self.graphs)}


def _graph_end(text: str) -> int:
    """Index just past the outermost closing parenthesis of the first graph in `text` (-1 if unbalanced)."""
    depth, quoted, started = 0, False, False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth, started = depth + 1, True
        elif ch == ")":
            depth -= 1
            if started and depth == 0:
                return i + 1
    return -1


def decode_graph(text: str, where: str, graph_id: str, metadata: dict | None = None):
    """Decode one PENMAN graph; DataFormatError(`where: graph ID: ...`) if it is malformed or has extra text.

    penman stops at the first complete graph and ignores what follows; a graph with text after its last
    parenthesis (an annotation slip) would silently lose that part, so it is rejected instead.
    """
    penman = require("penman")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).strip()
    if not body:
        raise DataFormatError(where, None, f"graph {graph_id}: expected a PENMAN graph, found none")
    end = _graph_end(body)
    if end < 0:
        raise DataFormatError(where, None, f"graph {graph_id}: unbalanced parentheses")
    if body[end:].strip():
        extra = " ".join(body[end:].split())[:40]
        raise DataFormatError(where, None, f"graph {graph_id}: text after the graph's last ')': {extra!r}")
    try:
        graph = penman.decode(text)
    except penman.DecodeError as err:
        reason = str(err).strip().splitlines()[-1]
        raise DataFormatError(where, None, f"graph {graph_id}: {reason}") from err
    seen: set[str] = set()
    for var, role, _ in graph.triples:
        if role == ":instance":
            if var in seen:  # `(e / e :op1 (e / eu))`: penman keeps one concept and drops the other
                raise DataFormatError(
                    where, None, f"graph {graph_id}: variable {var!r} is given two concepts"
                )
            seen.add(var)
    if metadata:
        graph.metadata.update(metadata)
    return graph


def _blocks(text: str) -> Iterator[tuple[int, str]]:
    """(1-based first line, block) for each blank-line separated block."""
    pos = 0
    for match in [*_BLANK.finditer(text), None]:
        end = match.start() if match else len(text)
        block = text[pos:end]
        if block.strip():
            lead = len(block) - len(block.lstrip("\n"))
            yield text.count("\n", 0, pos + lead) + 1, block.strip("\n")
        pos = match.end() if match else len(text)


def read_penman(path: str | Path, on_error: str = "raise") -> AmrCorpus:
    """Every graph of a PENMAN file (blank-line separated, metadata comments kept); header-only blocks skipped."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    path = Path(path)
    corpus = AmrCorpus(str(path))
    text = path.read_text(encoding="utf-8")
    for line, block in _blocks(text):
        if all(not ln.strip() or ln.lstrip().startswith("#") for ln in block.splitlines()):
            continue  # the release header ("# AMR release; corpus: lpp ...")
        found = _META_ID.search(block)
        graph_id = found.group(1) if found else f"#{len(corpus.graphs) + len(corpus.skipped) + 1}"
        try:
            corpus.graphs.append(decode_graph(block, f"{path}:{line}", graph_id))
        except DataFormatError as err:
            if on_error == "raise":
                raise
            corpus.skipped.append(str(err))
    return corpus


_SNTAMR = re.compile(r"<sntamr>|</sntamr>")
_SENTENCE = re.compile(r'<sentence id="(?P<id>[^"]*)">(?P<text>.*?)</sentence>', re.S)
_AMR = re.compile(r"<amr(?:\s[^>]*)?>(?P<graph>.*?)</amr>", re.S)


def read_amr_bp_xml(path: str | Path) -> AmrCorpus:
    """The AMR-BP Little Prince XML, read element by element rather than with a strict XML parser.

    The released file opens `<sntamr>` twice without closing the previous one; such an element is closed
    at the next `<sntamr>`, and a sentence standing outside any element is read too (both recorded in
    `repaired`). Sentence ids repeat where one English sentence became two graphs. Graphs that do not decode, or elements without a
    sentence or graph, are skipped with one line each in `skipped`. Graph ids are the sentence ids.
    """
    import html

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    corpus = AmrCorpus(str(path))
    opened: int | None = None
    start = 0
    elements: list[tuple[int, int, int]] = []  # (line, start, end) of each <sntamr> body
    for tag in _SNTAMR.finditer(text):
        line = text.count("\n", 0, tag.start()) + 1
        if tag.group() == "<sntamr>":
            if opened is not None:
                corpus.repaired.append(f"{path}:{opened}: <sntamr> not closed; closed at line {line}")
                elements.append((opened, start, tag.start()))
            opened, start = line, tag.end()
        elif opened is not None:
            elements.append((opened, start, tag.start()))
            opened = None
        else:
            corpus.skipped.append(f"{path}:{line}: </sntamr> without an open <sntamr>")
    if opened is not None:
        corpus.repaired.append(f"{path}:{opened}: <sntamr> not closed before the end of the file")
        elements.append((opened, start, len(text)))
    # a <sentence> + <amr> pair standing between elements, with no <sntamr> around it, is read as one
    bounds = [0, *(b for _, s, e in elements for b in (s, e)), len(text)]
    for gap_start, gap_end in zip(bounds[::2], bounds[1::2]):
        for stray in _SENTENCE.finditer(text, gap_start, gap_end):
            line = text.count("\n", 0, stray.start()) + 1
            corpus.repaired.append(f"{path}:{line}: <sentence> outside any <sntamr>; read with its <amr>")
            elements.append((line, stray.start(), gap_end))
    elements.sort()
    for line, start, end in elements:
        body = text[start:end]
        sentence, graph = _SENTENCE.search(body), _AMR.search(body)
        sid = sentence.group("id") if sentence else f"(element at line {line})"
        if sentence is None or graph is None:
            missing = "<sentence>" if sentence is None else "<amr>"
            corpus.skipped.append(f"{path}:{line}: graph {sid}: no {missing} in <sntamr>")
            continue
        meta = {"id": sid, "snt": html.unescape(" ".join(sentence.group("text").split()))}
        try:
            corpus.graphs.append(
                decode_graph(html.unescape(graph.group("graph")), f"{path}:{line}", sid, meta)
            )
        except DataFormatError as err:
            corpus.skipped.append(str(err))
    return corpus


def read_amr(path: str | Path, on_error: str = "raise") -> AmrCorpus:
    """A PENMAN file, or an AMR-BP `.xml` (always read tolerantly: see `read_amr_bp_xml`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: AMR file not found")
    return read_amr_bp_xml(path) if path.suffix.lower() == ".xml" else read_penman(path, on_error)


def encode_graph(graph) -> str:
    """A graph in PENMAN notation with its metadata comments (what smatch and amrlib read)."""
    return require("penman").encode(graph, indent=6)
