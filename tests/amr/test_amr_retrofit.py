"""Retrofit combinations (Cai et al. 2022 sec. 4.3), the vocabulary extension and the AMR encoder folder."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.encoders.retrofit import (
    COMBINATIONS,
    RetrofitEncoder,
    choose_concat_weight,
    combine_vectors,
    parse_combination,
    weighted_name,
)

S = np.array([[3.0, 4.0], [1.0, 0.0]], dtype=np.float32)
H = np.array([[0.0, 2.0], [0.0, 0.5]], dtype=np.float32)


def test_combinations_by_hand():
    np.testing.assert_allclose(combine_vectors(S, H, "s"), S)
    np.testing.assert_allclose(combine_vectors(S, H, "h"), H)
    np.testing.assert_allclose(combine_vectors(S, H, "sum"), [[3, 6], [1, 0.5]])
    np.testing.assert_allclose(combine_vectors(S, H, "concat"), [[3, 4, 0, 2], [1, 0, 0, 0.5]])
    np.testing.assert_allclose(combine_vectors(S, H, "sum_norm"), [[0.6, 1.8], [1, 1]], rtol=1e-6)
    np.testing.assert_allclose(
        combine_vectors(S, H, "concat_norm"), [[0.6, 0.8, 0, 1], [1, 0, 0, 1]], rtol=1e-6
    )
    # normalised concatenation: cosine = mean of the two cosines (why it is the paper's best)
    a, b = combine_vectors(S, H, "concat_norm")
    cos = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    assert cos == pytest.approx((0.6 + 1.0) / 2)


def test_weighted_concatenation_by_hand():
    # [s/|s| ; w h/|h|] with w = 0.5: rows (0.6, 0.8, 0, 0.5) and (1, 0, 0, 0.5)
    out = combine_vectors(S, H, "concat_norm_w0.5")
    np.testing.assert_allclose(out, [[0.6, 0.8, 0, 0.5], [1, 0, 0, 0.5]], rtol=1e-6)
    a, b = out
    cos = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    # (cos_s + w^2 cos_h) / (1 + w^2) = (0.6 + 0.25 * 1) / 1.25
    assert cos == pytest.approx(0.68, rel=1e-6)
    np.testing.assert_allclose(combine_vectors(S, H, "concat_norm_w1"), combine_vectors(S, H, "concat_norm"))
    np.testing.assert_allclose(combine_vectors(S, H, "concat_norm_w0")[:, 2:], 0)  # w = 0: s alone
    assert weighted_name(0.5) == "concat_norm_w0.5" and weighted_name(1.25) == "concat_norm_w1.25"
    assert parse_combination("concat_norm_w0.25") == ("concat_norm", 0.25)
    assert parse_combination("sum") == ("sum", None)
    for bad in ("concat_norm_w", "concat_norm_wx", "concat_norm_w-1", "concat_norm_winf", "concat_norm_w 1"):
        with pytest.raises(ValueError, match=r"expected concat_norm_w<weight>, a number >= 0"):
            combine_vectors(S, H, bad)
    with pytest.raises(ValueError, match=r"or concat_norm_w<weight>, got 'concat_w0.5'"):
        RetrofitEncoder(_Fixed("t", S), _Fixed("a", H), "concat_w0.5")


def test_sum_needs_equal_sizes():
    with pytest.raises(ValueError, match="equal size.*use concat"):
        combine_vectors(S, np.ones((2, 3), dtype=np.float32), "sum_norm")
    with pytest.raises(ValueError, match="combine must be one of"):
        combine_vectors(S, H, "mean")


class _Fixed:
    def __init__(self, name, rows):
        self.name, self.rows, self.calls = name, rows, 0

    def encode(self, sentences, batch_size=64, show_progress=False):
        self.calls += 1
        return self.rows[: len(sentences)]


@pytest.mark.parametrize("how", COMBINATIONS)
def test_retrofit_encoder_matches_the_formula(how):
    text, amr = _Fixed("t", S), _Fixed("a", H)
    out = RetrofitEncoder(text, amr, how).encode(["x", "y"])
    np.testing.assert_allclose(out, combine_vectors(S, H, how))
    assert (text.calls, amr.calls) == (int(how != "h"), int(how != "s"))  # s or h alone skips the other


def test_retrofit_name_is_checked():
    from sentkit import encoders, load_encoder

    with pytest.raises(ValueError, match=r"retrofit:<text model>\+<amr model>"):
        load_encoder("retrofit:muse-m")
    # the encoders package does not know the AMR side; it says where such names load
    with pytest.raises(ValueError, match=r"load with sentkit.load_encoder"):
        encoders.load_encoder("retrofit:muse-m+runs/amr/best")


def test_vocabulary_extension_makes_single_tokens_initialised_from_pieces(tiny_encoder):
    pytest.importorskip("penman")
    import torch

    from sentkit.amr.encoder import extend_vocabulary

    tok = tiny_encoder.tokenizer
    before = tok(":ARG0", add_special_tokens=False)["input_ids"]
    assert len(before) > 1
    weight = tiny_encoder.model.get_input_embeddings().weight
    expected = weight[before].mean(0).detach().clone()
    assert extend_vocabulary(tiny_encoder, [":ARG0", "go-02", ":ARG0"]) == 2
    assert extend_vocabulary(tiny_encoder, [":ARG0"]) == 0
    text = "( go-02 :ARG0 ( boy ) ) ( undergo-02 )"
    pieces = tok.tokenize(text)
    assert ":arg0" in pieces and "go-02" in pieces
    assert pieces.count("go-02") == 1  # not matched inside undergo-02
    row = tok.convert_tokens_to_ids(":arg0")
    new_weight = tiny_encoder.model.get_input_embeddings().weight
    assert torch.allclose(new_weight[row], expected)
    assert tiny_encoder.encode([text]).shape == (1, 32)


def test_amr_encoder_folder_round_trip(tiny_encoder, tmp_path, monkeypatch):
    pytest.importorskip("penman")
    import penman

    from sentkit.amr import parse as parse_module
    from sentkit.amr.encoder import AmrEncoder

    class StubParser:
        def __init__(self, lang="en"):
            self.lang = lang

        def __call__(self, sentences):
            return [penman.decode(f"(s / say-01 :ARG1 (x / {len(s)}-{self.lang}))") for s in sentences]

    monkeypatch.setitem(parse_module.PARSERS, "stub", StubParser)
    parse_module.get_parser.cache_clear()
    amr = AmrEncoder(tiny_encoder, parser="stub")
    assert amr.linearize(["abc", "日本語"]) == ["( say-01 :ARG1 ( 3-en ) )", "( say-01 :ARG1 ( 3-ja ) )"]
    folder = amr.save(tmp_path / "amr")
    loaded = AmrEncoder.from_pretrained(folder)
    assert loaded.parser == "stub" and loaded.transformer.pooling == "cls"
    np.testing.assert_allclose(loaded.encode(["abc", "de"]), amr.encode(["abc", "de"]), atol=1e-5)
    parse_module.get_parser.cache_clear()


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_retrofit_name_resolves_both_folders(tiny_encoder, tmp_path, monkeypatch):
    pytest.importorskip("penman")
    import penman

    from conftest import make_tiny_encoder
    from sentkit import load_encoder
    from sentkit.amr import parse as parse_module
    from sentkit.amr.encoder import AmrEncoder

    class StubParser:
        def __init__(self, lang="en"):
            pass

        def __call__(self, sentences):
            return [penman.decode(f"(s / say-01 :ARG1 (x / w{len(s)}))") for s in sentences]

    monkeypatch.setitem(parse_module.PARSERS, "stub", StubParser)
    parse_module.get_parser.cache_clear()
    graph_model = make_tiny_encoder(seed=1)  # other weights than the text model, so h cannot pass for s
    text_dir = tiny_encoder.save(tmp_path / "text")
    amr_dir = AmrEncoder(graph_model, parser="stub").save(tmp_path / "graph")
    sentences = ["a b", "c d e"]
    # by hand: each sentence's stub graph, linearised (Cai et al. sec. 4.1), is what the AMR side encodes
    s = tiny_encoder.encode(sentences)  # (2, 32)
    h = graph_model.encode(["( say-01 :ARG1 ( w3 ) )", "( say-01 :ARG1 ( w5 ) )"])  # (2, 32)
    assert not np.allclose(graph_model.encode(sentences), h, atol=1e-3)  # the graph changes the vector
    weighted = load_encoder(f"retrofit:{text_dir}+{amr_dir}@concat_norm_w0.5")
    np.testing.assert_allclose(
        weighted.encode(sentences), np.concatenate([_unit(s), 0.5 * _unit(h)], axis=1), rtol=1e-5, atol=1e-6
    )  # (2, 64)
    with pytest.raises(ValueError, match="concat_norm_w<weight>"):
        load_encoder(f"retrofit:{text_dir}+{amr_dir}@concat_norm_wbig")
    encoder = load_encoder(f"retrofit:{text_dir}+{amr_dir}@sum_norm")
    assert encoder.combine == "sum_norm"
    assert isinstance(encoder.other, AmrEncoder) and encoder.other.parser == "stub"
    np.testing.assert_allclose(encoder.encode(sentences), _unit(s) + _unit(h), rtol=1e-5, atol=1e-6)
    default = load_encoder(f"retrofit:{text_dir}+{amr_dir}")
    assert default.combine == "concat_norm"
    np.testing.assert_allclose(
        default.encode(sentences), np.concatenate([_unit(s), _unit(h)], axis=1), rtol=1e-5, atol=1e-6
    )  # (2, 64)
    parse_module.get_parser.cache_clear()


def _sts_dev(sent1, sent2, gold, split="dev"):
    from sentkit.datasets.sts_pairs import STSPairs
    from sentkit.tasks.sts import STSTask

    pairs = STSPairs(list(sent1), list(sent2), np.asarray(gold, dtype=np.float64), "en", "toy")
    return STSTask(name="toy-dev", languages=("en",), meta={"split": split}, sets={"en": pairs})


class _Table:
    """An encoder that looks each sentence up in a table of vectors and counts what it encodes."""

    def __init__(self, name, table):
        self.name, self.table, self.encoded = name, table, 0

    def encode(self, sentences, batch_size=64, show_progress=False):
        self.encoded += len(sentences)
        return np.stack([self.table[s] for s in sentences])


def _planted(n_pairs=200, seed=0):
    rng = np.random.default_rng(seed)
    names = [f"x{i}" for i in range(2 * n_pairs)]
    s = {x: rng.normal(size=8) for x in names}
    h = {x: rng.normal(size=6) for x in names}
    first, second = names[:n_pairs], names[n_pairs:]
    unit = {k: {x: v / np.linalg.norm(v) for x, v in table.items()} for k, table in (("s", s), ("h", h))}
    cos = {k: np.array([unit[k][a] @ unit[k][b] for a, b in zip(first, second)]) for k in unit}
    return s, h, first, second, cos


def test_dev_weight_selection_finds_the_planted_weight():
    s, h, first, second, cos = _planted()
    gold = cos["s"] + 0.5**2 * cos["h"]  # the ranking of concat_norm_w0.5 exactly
    text, graph = _Table("s", s), _Table("h", h)
    choice = choose_concat_weight(text, graph, _sts_dev(first, second, gold))
    assert (choice.weight, choice.combine, choice.task) == (0.5, "concat_norm_w0.5", "toy-dev")
    assert choice.curve[0.5] == pytest.approx(100.0, abs=1e-3)
    assert max(v for w, v in choice.curve.items() if w != 0.5) < 99.9
    assert choice.curve[0.0] < choice.curve[0.3] < choice.curve[0.5] > choice.curve[1.0] > choice.curve[2.0]
    assert text.encoded == graph.encoded == 400  # each sentence encoded once for the whole grid
    # h carries all of the gold ranking: the largest weight tried wins
    assert (
        choose_concat_weight(_Table("s", s), _Table("h", h), _sts_dev(first, second, cos["h"])).weight == 2.0
    )
    only_s = choose_concat_weight(_Table("s", s), _Table("h", h), _sts_dev(first, second, cos["s"]), (0, 1))
    assert only_s.weight == 0.0 and only_s.curve[0.0] == pytest.approx(100.0, abs=1e-3)


def test_dev_weight_selection_ties_go_to_one_and_test_splits_are_refused():
    s, _, first, second, cos = _planted()
    constant = {x: np.ones(4) for x in s}  # cos_h = 1 for every pair: every weight ranks as s does
    choice = choose_concat_weight(_Table("s", s), _Table("h", constant), _sts_dev(first, second, cos["s"]))
    assert choice.weight == 1.0 and len(set(np.round(list(choice.curve.values()), 6))) == 1
    with pytest.raises(ValueError, match="toy-dev: a test split; choose the weight on a dev split"):
        choose_concat_weight(_Table("s", s), _Table("h", s), _sts_dev(first, second, cos["s"], split="test"))
