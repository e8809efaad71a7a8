"""Linearisation (Cai et al. 2022 sec. 4.1): hand-checked form and a round trip over real graphs."""

from __future__ import annotations

import pytest

penman = pytest.importorskip("penman", reason="the `amr` extra (penman) is not installed")

from sentkit.amr.io import read_amr  # noqa: E402
from sentkit.amr.linearize import delinearize, labelled_edges, linearize, vocabulary_tokens  # noqa: E402


def test_hand_checked_linearisation():
    graph = penman.decode(
        '(w / want-01 :ARG0 (b / boy :wiki "Bob" :name (n / name :op1 "Bob" :op2 "Jr")) '
        ":ARG1 (g / go-02 :ARG0 b :polarity -) :mod-of (x / thing))"
    )
    assert linearize(graph) == (
        "( want-01 :ARG0 ( boy :name ( name :op1 Bob :op2 Jr ) ) "
        ":ARG1 ( go-02 :ARG0 boy :polarity - ) :mod -of ( thing ) )"
    )


def test_delinearize_rejects_malformed_sequences():
    with pytest.raises(ValueError, match="token 3: expected a node or a constant"):
        delinearize("( a :ARG0 )")
    with pytest.raises(ValueError, match="expected end of input"):
        delinearize("( a ) ( b )")


@pytest.mark.parametrize(
    "relpath", ["amr/en/amr-bank-struct-v1.6-test.txt", "amr/pt/AMR-LittlePrince/amr_br-v1.0.xml"]
)
def test_round_trip_on_real_graphs(data_root, relpath):
    corpus = read_amr(data_root / relpath)
    reentrant = 0
    for graph in corpus.graphs:
        text = linearize(graph)
        back = delinearize(text)
        assert labelled_edges(back) == labelled_edges(graph), graph.metadata["id"]
        concepts = {t for _, r, t in graph.triples if r == ":instance"}
        assert concepts <= {t for _, _, t in back.triples}
        assert linearize(back) == text
        wiki = sum(1 for _, r, _ in graph.triples if r == ":wiki")
        reentrant += len(back.attributes()) > len(graph.attributes()) - wiki
    assert reentrant > 10  # the check covered graphs whose re-entrancies were collapsed


def test_vocabulary_extension_counts_roles_and_frames():
    texts = ["( want-01 :ARG0 ( boy ) :ARG1 ( go-02 :ARG0 boy ) )", "( want-01 :ARG1 -of ( boy ) )"]
    assert vocabulary_tokens(texts, min_count=2) == [":ARG0", ":ARG1", "want-01"]
    assert vocabulary_tokens(texts, min_count=1) == ["-of", ":ARG0", ":ARG1", "go-02", "want-01"]
