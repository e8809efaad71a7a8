"""`sentkit mine --workers / --address`: each direction's keys split into parts over Ray workers give the
in-process pairs byte for byte (exact search) on a local Ray and on a multi-node cluster; a worker killed
mid-run is restarted and its searches retried; Ray's own log lines stay off the terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mining_sides import encoded_sides
from sentkit.mining import knn_run
from sentkit.mining.mine import EngineConfig, MineConfig, MineRequest, mine, mine_files
from sentkit.mining.search import IndexConfig
from sentkit.mining.vectors import ShardVectors

pytestmark = pytest.mark.slow
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray for the in-process tests (a RayEngine uses the session it finds and leaves it running)."""
    ray = pytest.importorskip(
        "ray", reason="distributed mining needs the ray extra: pip install 'sentkit[ray]'"
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    pytest.importorskip("ray", reason="distributed mining needs the ray extra: pip install 'sentkit[ray]'")
    return encoded_sides(tmp_path_factory.mktemp("ray-mine"))


def _request(sides, out: Path, kind: str, engine: EngineConfig | None = None) -> MineRequest:
    _, src, tgt = sides
    return MineRequest(
        str(src), str(tgt), str(out), config=MineConfig(index=IndexConfig(kind=kind)), engine=engine
    )


def test_two_local_workers_mine_the_in_process_pairs(ray_session, sides, tmp_path, monkeypatch):
    monkeypatch.setattr(knn_run, "BLOCK_ROWS", 64)  # 5 blocks a direction, two searched at once
    local, ray = tmp_path / "local.tsv", tmp_path / "ray.tsv"
    mine_files(_request(sides, local, "flat"), log=lambda line: None)
    summary = mine_files(_request(sides, ray, "flat", EngineConfig(workers=2)), log=lambda line: None)
    assert ray.read_bytes() == local.read_bytes()
    engine = summary["engine"]
    assert (engine["kind"], engine["workers"], engine["key_parts"], engine["nodes"]) == ("ray", 2, 2, 1)
    assert len(engine["worker_peak_rss_mib"]) == 2 and min(engine["worker_peak_rss_mib"]) > 50
    assert summary["index"]["forward"]["key_parts"] == 2

    # an approximate index: trained once by the driver, filled by each worker, its recall measured
    approx = mine_files(
        _request(sides, tmp_path / "ivf.tsv", "IVF4,Flat", EngineConfig(workers=2)), log=print
    )
    for direction in ("forward", "backward"):
        record = approx["index"][direction]
        assert record["index"] == "approximate" and record["key_parts"] == 2
        assert record["recall"]["queries"] == 300 and record["recall"]["recall_at_k"] >= 0.9


def test_a_worker_killed_mid_run_is_restarted_and_its_searches_retried(ray_session, sides):
    from sentkit.mining.engine_ray import RayEngine

    _, src, tgt = sides
    x, y = ShardVectors(src), ShardVectors(tgt)
    config = MineConfig(index=IndexConfig(kind="flat"))
    expected = mine(x, y, config)
    pids = []

    def kill_first_worker(engine, block):
        pids.append(engine.worker_pids())
        if len(pids) == 1:
            os.kill(pids[0][0], signal.SIGKILL)

    knn_run.BLOCK_ROWS, saved = 64, knn_run.BLOCK_ROWS
    engine = RayEngine(workers=2, on_block=kill_first_worker)
    try:
        got = mine(x, y, config, engine=engine)
    finally:
        engine.shutdown()
        knn_run.BLOCK_ROWS = saved
    assert pids[1][0] != pids[0][0] and pids[1][1] == pids[0][1]  # worker 0 restarted, worker 1 untouched
    assert (got.src == expected.src).all() and (got.tgt == expected.tgt).all()
    assert (got.score == expected.score).all()


@pytest.fixture
def three_node_cluster():
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster()
    try:
        cluster.add_node(num_cpus=1, include_dashboard=False)  # the head
        cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()


def test_address_mines_on_three_nodes_the_in_process_pairs(sides, three_node_cluster, tmp_path):
    _, src, tgt = sides
    local, remote = tmp_path / "local.tsv", tmp_path / "cluster.tsv"
    mine_files(_request(sides, local, "flat"), log=lambda line: None)
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "sentkit.cli",
        "mine",
        "--src",
        str(src),
        "--tgt",
        str(tgt),
        "--index",
        "flat",
    ]
    cmd += ["--out", str(remote), "--address", three_node_cluster, "--workers", "3"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert remote.read_bytes() == local.read_bytes()
    assert done.stderr == ""  # Ray's own lines stay off the terminal
    assert done.stdout.strip().endswith(f"on 3 Ray workers (3 nodes); details in {remote}.json")
    engine = json.loads(Path(f"{remote}.json").read_text())["engine"]
    assert (engine["nodes"], engine["workers"], engine["address"]) == (3, 3, three_node_cluster)
