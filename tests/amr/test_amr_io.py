"""AMR readers on the real releases in the benchmark data (counts from the files themselves)."""

from __future__ import annotations

import pytest

from sentkit.errors import DataFormatError

penman = pytest.importorskip("penman", reason="the `amr` extra (penman) is not installed")

from sentkit.amr.io import read_amr  # noqa: E402


def test_little_prince_english_splits(data_root):
    test = read_amr(data_root / "amr/en/amr-bank-struct-v1.6-test.txt")
    train = read_amr(data_root / "amr/en/amr-bank-struct-v1.6-training.txt")
    assert (len(test), len(train)) == (143, 1274)  # the release headers say 143 and 1274
    first = test.graphs[0]
    assert first.metadata["id"] == "lpp_1943.146"
    assert first.metadata["snt"] == "Chapter 4 ."
    assert first.triples == [("c", ":instance", "chapter"), ("c", ":mod", "4")]


def test_portuguese_xml_is_read_tolerantly_and_reports_what_it_fixed_and_skipped(data_root):
    corpus = read_amr(data_root / "amr/pt/AMR-LittlePrince/amr_br-v1.0.xml")
    # 1527 <sentence> elements: two <sntamr> left open (lines 543, 848), one pair outside any element
    assert [r.split(":")[1] for r in corpus.repaired] == ["543", "848", "6176"]
    # one graph gives a variable two concepts; it is skipped with file, line and graph id
    assert len(corpus.skipped) == 1 and ":3906: graph 357: variable 'e1'" in corpus.skipped[0]
    assert len(corpus) == 1526
    ids = [g.metadata["id"] for g in corpus.graphs]
    assert ids[:3] == ["1", "2", "3"] and "565" in ids
    assert corpus.graphs[0].metadata["snt"] == "Capítulo 1."


def test_bad_graph_is_one_line_naming_file_line_and_id(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text(
        "# ::id ok.1\n(c / chapter :mod 4)\n\n# ::id broken.2\n# ::snt x\n(a / b :ARG0 (c / d)\n\n"
        "# ::id trail.3\n(a / b) :ARG1 (c / d)\n",
        encoding="utf-8",
    )
    with pytest.raises(DataFormatError) as err:
        read_amr(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}:4: graph broken.2:")
    corpus = read_amr(path, on_error="skip")
    assert len(corpus) == 1
    assert corpus.skipped[0].startswith(f"{path}:4: graph broken.2")
    # penman would silently drop the text after the first graph; we refuse it
    assert corpus.skipped[1].startswith(f"{path}:8: graph trail.3: text after the graph")
