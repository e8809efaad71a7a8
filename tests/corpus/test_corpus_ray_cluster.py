"""`sentkit encode --address` on a real Ray cluster of two nodes (one CPU each), both on this machine: the
shards are encoded on both nodes and equal the in-process run's byte for byte; the user's stderr holds
sentkit's lines only, and a bad row one error line."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_tiny_encoder
from sentkit.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"
LINES = [f"sentence {i} " + "word " * (i % 7) for i in range(45)]

pytestmark = pytest.mark.slow


@pytest.fixture
def two_node_cluster():
    pytest.importorskip("ray", reason="the Ray engine needs the ray extra: pip install 'sentkit[ray]'")
    from ray.cluster_utils import Cluster

    cluster = Cluster()
    try:  # torn down whatever happens, also when a node fails to start
        cluster.add_node(num_cpus=1, include_dashboard=False)  # the head
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()


def _corpus(folder: Path, jsonl_rows: list[str]) -> Path:
    folder.mkdir()
    (folder / "a.txt").write_text("\n".join(LINES[:25]) + "\n", encoding="utf-8")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(jsonl_rows) + "\n").encode()))
    return folder


def _sentkit(*args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "sentkit.cli", "encode", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=540)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("shard-")}


def test_address_encodes_on_both_nodes_the_bytes_of_the_in_process_run(two_node_cluster, tmp_path):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    good = [json.dumps({"text": t}) for t in LINES[25:]]
    corpus = _corpus(tmp_path / "corpus", good)
    local, remote = tmp_path / "local", tmp_path / "ray"
    common = ["--model", str(model), "--input", str(corpus), "--shard-size", "10"]
    assert main(["encode", *common, "--output", str(local), "--engine", "local", "--threads", "1"]) == 0

    done = _sentkit(*common, "--output", str(remote), "--address", two_node_cluster)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _files(remote) == _files(local) and len(_files(remote)) == 5
    run = json.loads((remote / "manifest.json").read_text())["runs"][-1]
    assert (run["engine"], run["workers"], run["nodes"], run["threads"]) == ("ray", 2, 2, 1)
    shard_line = re.compile(r"shard-\d{5}-\d{6}\.npy: rows \d+-\d+ of .+, \d+ rows/s")
    lines = done.stderr.splitlines()
    assert sorted(line.split(":")[0] for line in lines[:-1]) == sorted(_files(remote))
    assert all(shard_line.fullmatch(line) for line in lines[:-1]), done.stderr
    assert lines[-1] == f"{remote}: 5 shards written this run; 5 shards, 45 rows x 32 float32"

    bad = list(good)
    bad[13] = '{"text": 5}'
    broken = _corpus(tmp_path / "broken", bad)
    failed = _sentkit(*common[:3], str(broken), "--shard-size", "10", "--output", str(tmp_path / "b"),
                      "--address", two_node_cluster)  # fmt: skip
    assert failed.returncode == 2
    shards = [line for line in failed.stderr.splitlines() if shard_line.fullmatch(line)]
    assert len(shards) == 4  # every shard before the bad row, then the one error line
    assert failed.stderr.splitlines()[len(shards) :] == [
        f"sentkit: error: {broken}/b.jsonl.gz:14: expected a string field 'text' (int)"
    ]
