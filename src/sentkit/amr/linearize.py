"""AMR graph <-> token sequence (Cai et al. 2022, sec. 4.1, after Bevilacqua et al. 2021's DFS linearisation).

Depth-first from the root in the graph's own layout; parentheses mark depth; variables are removed; a node
reached again (a re-entrancy) is written as its concept instead of a variable reference. Inverse roles are
split (`:ARG0-of` -> `:ARG0 -of`) so both share the `:ARG0` token; `:wiki` links are dropped.
Example: `( want-01 :ARG0 ( boy ) :ARG1 ( go-02 :ARG0 boy ) )`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from sentkit.amr import require

INVERSE = "-of"
_FRAME = re.compile(r"^\S+-\d\d$")  # PropBank frame concepts: want-01, be-located-at-91
_DROPPED_ROLES = frozenset({":wiki"})


def _constant(value: str) -> str:
    """A constant as one token: quotes dropped, inner spaces joined (`"New York"` -> `New_York`)."""
    value = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    return "_".join(value.split()) or '""'


def _role_tokens(role: str) -> list[str]:
    if role.endswith(INVERSE) and len(role) > len(INVERSE) + 1:
        return [role[: -len(INVERSE)], INVERSE]
    return [role]


def linearize(graph) -> str:
    """The token sequence of a `penman.Graph` (or a PENMAN string), space-separated."""
    penman = require("penman")
    if isinstance(graph, str):
        graph = penman.decode(graph)
    tree = penman.configure(graph)
    concepts = {src: tgt for src, role, tgt in graph.triples if role == ":instance"}
    tokens: list[str] = []

    def visit(node) -> None:
        var, branches = node
        tokens.append("(")
        tokens.append(_constant(concepts.get(var) or "amr-unknown"))
        for role, target in branches:
            if role == "/" or role in _DROPPED_ROLES:
                continue
            tokens.extend(_role_tokens(role))
            if isinstance(target, tuple):
                visit(target)
            elif target in concepts:  # re-entrancy: repeat the concept, not the variable
                tokens.append(_constant(concepts[target]))
            else:
                tokens.append(_constant(str(target)))
        tokens.append(")")

    visit(tree.node)
    return " ".join(tokens)


def delinearize(text: str):
    """Rebuild a `penman.Graph` (fresh variables) from a linearisation; repeated concepts become leaves.

    Raises ValueError naming the token position when parentheses or roles are out of place.
    """
    penman = require("penman")
    tokens = text.split()
    triples: list[tuple[str, str, str]] = []
    counter = 0
    pos = 0

    def expect(ok: bool, what: str) -> None:
        if not ok:
            found = tokens[pos] if pos < len(tokens) else "end of input"
            raise ValueError(f"linearised AMR, token {pos}: expected {what}, found {found!r}")

    def node() -> str:
        nonlocal pos, counter
        expect(pos < len(tokens) and tokens[pos] == "(", "'('")
        pos += 1
        expect(pos < len(tokens) and tokens[pos] not in ("(", ")"), "a concept")
        counter += 1
        var = f"z{counter}"
        triples.append((var, ":instance", tokens[pos]))
        pos += 1
        while pos < len(tokens) and tokens[pos] != ")":
            expect(tokens[pos].startswith(":"), "a role or ')'")
            role = tokens[pos]
            pos += 1
            if pos < len(tokens) and tokens[pos] == INVERSE:
                role += INVERSE
                pos += 1
            expect(pos < len(tokens) and tokens[pos] != ")", "a node or a constant")
            if tokens[pos] == "(":
                child = node()
                triples.append((child, role[: -len(INVERSE)], var) if _inverted(role) else (var, role, child))
            else:
                triples.append((var, role, tokens[pos]))
                pos += 1
        expect(pos < len(tokens), "')'")
        pos += 1
        return var

    top = node()
    expect(pos == len(tokens), "end of input")
    return penman.Graph(triples, top=top)


def _inverted(role: str) -> bool:
    return role.endswith(INVERSE) and role not in (":consist-of", ":prep-out-of", ":prep-on-behalf-of")


def labelled_edges(graph) -> Counter:
    """Multiset of (parent concept, role, child concept or constant) over the graph's tree layout.

    Equal for a graph and `delinearize(linearize(graph))` when the linearisation is lossless once
    re-entrancies are collapsed to their concepts (the round-trip property); `:wiki` edges are left out.
    """
    penman = require("penman")
    tree = penman.configure(graph)
    concepts = {src: tgt for src, role, tgt in graph.triples if role == ":instance"}
    edges: Counter = Counter()

    def visit(node) -> None:
        var, branches = node
        for role, target in branches:
            if role == "/" or role in _DROPPED_ROLES:
                continue
            if isinstance(target, tuple):
                edges[(_constant(concepts.get(var, "")), role, _constant(concepts.get(target[0], "")))] += 1
                visit(target)
            else:
                label = concepts.get(target, target)
                edges[(_constant(concepts.get(var, "")), role, _constant(str(label)))] += 1

    visit(tree.node)
    return edges


def vocabulary_tokens(linearized: Iterable[str], min_count: int = 5) -> list[str]:
    """Relation and frame tokens seen at least `min_count` times: the vocabulary extension of sec. 4.1.

    Roles (`:ARG0`, `:op1`, `-of`) and PropBank frames (`want-01`) become single tokens of the encoder,
    so it does not have to spell `:ARG0` as `:`, `arg`, `##0` every time.
    """
    counts: Counter = Counter()
    for text in linearized:
        for token in text.split():
            if token.startswith(":") or token == INVERSE or _FRAME.match(token):
                counts[token] += 1
    return sorted(t for t, c in counts.items() if c >= min_count)
