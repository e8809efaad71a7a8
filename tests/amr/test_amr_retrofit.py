"""Retrofit combinations (Cai et al. 2022 sec. 4.3), the vocabulary extension and the AMR encoder folder."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.encoders.retrofit import COMBINATIONS, RetrofitEncoder, combine_vectors

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
