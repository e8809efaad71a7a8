"""The Ray Data engine on a small corpus: the same shard files as in-process, byte for byte, through a dead
worker and through a bad row and its fixed rerun. One Ray session (2 CPUs, as on CI) serves the module."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from conftest import make_tiny_encoder
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings
from sentkit.errors import DataFormatError

ray = pytest.importorskip("ray", reason="the Ray engine needs the ray extra: pip install 'sentkit[ray]'")
# Ray Data's own context warns about its deprecated settings when it is copied to workers
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

LINES = [f"sentence {i} " + "word " * (i % 7) for i in range(45)]


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_encoder(pooling="mean").save(tmp_path_factory.mktemp("model") / "tiny")


def _corpus(folder, jsonl_rows):
    """Two input files (two read tasks): plain text and gzipped JSONL."""
    folder.mkdir()
    (folder / "a.txt").write_text("\n".join(LINES[:25]) + "\n", encoding="utf-8")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(jsonl_rows) + "\n").encode()))
    return folder


def _request(corpus, out, model_dir, engine):
    settings = ShardSettings(shard_size=10)
    return EncodeRequest(str(corpus), str(out), str(model_dir), settings, engine=engine, threads=1)


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("shard-")}


def _manifest_shards(folder):
    return json.loads((folder / "manifest.json").read_text())["shards"]


def test_ray_survives_a_dead_worker_and_writes_the_local_bytes(ray_session, model_dir, tmp_path):
    corpus = _corpus(tmp_path / "corpus", [json.dumps({"text": t}) for t in LINES[25:]])
    local, remote = tmp_path / "local", tmp_path / "ray"
    encode_corpus(_request(corpus, local, model_dir, "local"), log=lambda line: None)
    marker = tmp_path / "killed-once"

    def die_once(work):  # runs inside the actor: its process exits before the second shard is written
        if work.chunk == 1 and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)

    info = encode_corpus(
        _request(corpus, remote, model_dir, "ray"), log=lambda line: None, before_shard=die_once
    )
    assert marker.exists()  # a worker did die, and its shard was encoded again by a restarted one
    assert info["written"] == 5 and info["rows"] == 45
    assert list(_files(remote)) == [
        "shard-00000-000000.npy",
        "shard-00000-000001.npy",
        "shard-00000-000002.npy",
        "shard-00001-000000.npy",
        "shard-00001-000001.npy",
    ]
    assert _files(remote) == _files(local)
    assert _manifest_shards(remote) == _manifest_shards(local)
    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["complete"] is True and [e["rows"] for e in manifest["inputs"]] == [25, 20]
    run = manifest["runs"][-1]
    assert run["engine"] == "ray" and run["workers"] == 2 and run["cpus_per_worker"] == 0.66


def test_ray_bad_row_names_file_and_line_and_the_rerun_continues(ray_session, model_dir, tmp_path):
    good = [json.dumps({"text": t}) for t in LINES[25:]]
    bad = list(good)
    bad[13] = '{"text": 5}'  # row 14 of b.jsonl.gz, in its second shard
    corpus = _corpus(tmp_path / "corpus", bad)
    out = tmp_path / "ray"
    with pytest.raises(DataFormatError) as err:
        encode_corpus(_request(corpus, out, model_dir, "ray"), log=lambda line: None)
    assert str(err.value) == f"{corpus}/b.jsonl.gz:14: expected a string field 'text' (int)"
    done = {
        s["name"] for s in _manifest_shards(out)
    }  # what finished before the job stopped: timing-dependent
    assert "shard-00001-000001.npy" not in done and "shard-00001-000002.npy" not in done
    (corpus / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(good) + "\n").encode()))
    info = encode_corpus(_request(corpus, out, model_dir, "ray"), log=lambda line: None)
    assert info["written"] == 5 - len(done) and info["rows"] == 45
    local = tmp_path / "local"
    encode_corpus(_request(corpus, local, model_dir, "local"), log=lambda line: None)
    assert _files(out) == _files(local)
