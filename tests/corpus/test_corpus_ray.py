"""The Ray engine on a small corpus: when it is chosen, how its actors share the CPUs, that they run side by
side, the same shard files as in-process byte for byte, every finished shard in the manifest through a dead
worker, a bad row and a Ctrl-C. One Ray session (2 CPUs, as on CI) serves the in-process tests; each test on
it starts actors (seconds each), so they are marked slow."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import make_tiny_encoder
from sentkit.corpus.encode_run import EncodeRequest, choose_engine, encode_corpus
from sentkit.corpus.engine_ray import ray_layout
from sentkit.corpus.shards import ShardSettings
from sentkit.errors import DataFormatError, InvalidArgument

SRC = Path(__file__).resolve().parents[2] / "src"
LINES = [f"sentence {i} " + "word " * (i % 7) for i in range(45)]


# ---- choosing the engine and sizing the actors: no Ray needed ----------------------------------------------
def test_auto_runs_in_process_unless_a_cluster_or_workers_are_asked_for(monkeypatch):
    assert choose_engine("auto") == "local"  # Ray is installed here (the ray extra), and still not used
    assert choose_engine("auto", address="10.0.0.1:6379") == "ray"
    assert choose_engine("auto", workers=2) == "ray"
    assert choose_engine("ray") == "ray"
    with pytest.raises(InvalidArgument, match=r"^--workers sets the Ray actor count; it needs --engine ray"):
        choose_engine("local", workers=2)
    with pytest.raises(InvalidArgument, match=r"^--address names a Ray cluster; it needs --engine ray"):
        choose_engine("local", address="10.0.0.1:6379")
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "ray" else find_spec(name))
    assert choose_engine("auto") == "local"
    with pytest.raises(InvalidArgument, match=r"^--workers runs on Ray, which is not installed"):
        choose_engine("auto", workers=2)


def test_auto_encodes_in_process(model_dir, tmp_path):
    corpus = tmp_path / "in.txt"
    corpus.write_text("\n".join(LINES[:12]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    request = EncodeRequest(str(corpus), str(out), str(model_dir), ShardSettings(shard_size=10))
    assert encode_corpus(request, log=lambda line: None)["rows"] == 12
    assert json.loads((out / "manifest.json").read_text())["runs"][-1]["engine"] == "local"


def test_ray_layout_gives_each_of_w_workers_c_over_w_cpus_and_threads():
    def layout(*args, **kwargs):
        got = ray_layout(*args, **kwargs)
        return (got.workers, got.cpus_per_worker, got.threads)

    assert layout([2], 0) == (2, 1.0, 1)  # one actor per CPU: both cores busy, each with one thread
    assert layout([2], 0, workers=1) == (1, 2.0, 2)
    assert layout([2], 0, workers=2) == (2, 1.0, 1)
    assert layout([16], 0, workers=3) == (3, 5.0, 5)  # 16 / 3, whole: Ray takes no fraction above one
    assert layout([2, 2], 0, workers=1) == (1, 2.0, 2)  # not 4: no node has 4 CPUs
    assert layout([1.5, 0.5], 0, workers=2) == (2, 0.75, 1)  # 1.0 would fit only one actor
    assert layout([64], 0, threads=4) == (16, 4.0, 4)
    assert layout([4], 0, workers=2, threads=3) == (2, 2.0, 3)  # threads as asked, CPUs as there are
    # more workers than CPUs, or more threads than a node has: refused (each worker runs a thread at least)
    with pytest.raises(InvalidArgument, match=r"^--workers 4: the Ray cluster has 2 CPUs, .* 1 to 2$"):
        ray_layout([2], 0, workers=4)
    with pytest.raises(InvalidArgument, match=r"^--workers 3: the Ray cluster has 2 CPUs"):
        ray_layout([1, 1], 0, workers=3)
    with pytest.raises(InvalidArgument, match=r"^--threads 3: the Ray cluster's largest node has 2 CPUs"):
        ray_layout([2, 2], 0, workers=2, threads=3)
    gpus = ray_layout([16], 2)
    assert (gpus.workers, gpus.gpus_per_worker, gpus.cpus_per_worker) == (2, 1.0, 8.0)
    assert ray_layout([16], 2, device="cpu").gpus_per_worker == 0.0
    with pytest.raises(InvalidArgument, match="--device cuda: the Ray cluster has no GPU"):
        ray_layout([16], 0, device="cuda")


# ---- on a Ray session ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray", reason="the Ray engine needs the ray extra: pip install 'sentkit[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_encoder(pooling="mean").save(tmp_path_factory.mktemp("model") / "tiny")


def _corpus(folder, jsonl_rows):
    """Two input files: plain text (3 shards of 10) and gzipped JSONL (2 shards)."""
    folder.mkdir()
    (folder / "a.txt").write_text("\n".join(LINES[:25]) + "\n", encoding="utf-8")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(jsonl_rows) + "\n").encode()))
    return folder


def _request(corpus, out, model_dir, engine, workers=None, threads=1):
    settings = ShardSettings(shard_size=10)
    return EncodeRequest(
        str(corpus), str(out), str(model_dir), settings, engine=engine, workers=workers, threads=threads
    )


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("shard-")}


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _names(folder):
    return [s["name"] for s in _manifest(folder)["shards"]]


ALL_SHARDS = [
    "shard-00000-000000.npy",
    "shard-00000-000001.npy",
    "shard-00000-000002.npy",
    "shard-00001-000000.npy",
    "shard-00001-000001.npy",
]


def _meet_the_other_actor(folder: Path):
    """A before_shard hook run inside the actors: each records its PID, torch threads and start/end times;
    an actor's first shard waits (up to 60 s) until a second actor has started one. Actors that run one
    after another never meet."""

    def hook(work):
        import torch

        pid = os.getpid()
        start = time.time()
        first = not (folder / f"started-{pid}").exists()
        (folder / f"started-{pid}").write_text(str(start))
        met = True
        if first:
            while len(list(folder.glob("started-*"))) < 2:
                if time.time() - start > 60:
                    met = False
                    break
                time.sleep(0.02)
        with open(folder / "log.jsonl", "a") as fh:
            fields = {"pid": pid, "threads": torch.get_num_threads(), "met": met, "shard": work.name}
            fh.write(json.dumps(fields | {"start": start, "end": time.time()}) + "\n")

    return hook


def _hook_log(folder):
    return [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]


def test_workers_ray_cannot_place_are_reported_not_waited_on_silently(ray_session):
    import ray

    from sentkit.corpus.engine_ray import RayLayout, wait_ready

    @ray.remote(num_cpus=2)
    class Hog:  # another job holding both CPUs
        def ping(self):
            return 1

    @ray.remote(num_cpus=1)
    class Worker:
        def ready(self):
            return "node-1"

    hog = Hog.remote()
    ray.get(hog.ping.remote())
    worker = Worker.remote()
    notes = []

    def note(line):
        if not notes:
            ray.kill(hog)  # the other job ends: the worker gets its CPU (its process starts in seconds)
        notes.append(line)

    assert wait_ready(ray, [worker], RayLayout(1, 1.0, 0.0, 1), note=note, every=1.0) == ["node-1"]
    assert notes and all("still waiting" in line for line in notes)
    assert "0 of 1 Ray encoder workers started after 1 s" in notes[0]
    assert "each asks for 1 CPU, the cluster has 0 CPU and 0 GPU free" in notes[0]
    ray.kill(worker)


@pytest.mark.slow
def test_two_actors_on_two_cpus_run_side_by_side_one_thread_each(ray_session, model_dir, tmp_path):
    corpus = _corpus(tmp_path / "corpus", [json.dumps({"text": t}) for t in LINES[25:]])
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    out = tmp_path / "ray"
    request = _request(corpus, out, model_dir, "ray", workers=2, threads=None)
    info = encode_corpus(request, log=lambda line: None, before_shard=_meet_the_other_actor(hooks))
    assert info["written"] == 5
    log = _hook_log(hooks)
    assert len({entry["pid"] for entry in log}) == 2
    assert all(entry["met"] for entry in log)  # each actor's first shard waited for the other's
    first = {}
    for entry in log:
        first.setdefault(entry["pid"], entry)
    a, b = first.values()
    assert a["start"] < b["end"] and b["start"] < a["end"]  # two shards in progress at the same time
    assert {entry["threads"] for entry in log} == {1}  # 2 CPUs / 2 workers
    run = _manifest(out)["runs"][-1]
    assert (run["engine"], run["workers"], run["cpus_per_worker"], run["threads"]) == ("ray", 2, 1.0, 1)

    single = tmp_path / "hooks1"
    single.mkdir()
    (single / "started-0").write_text("")  # one actor meets nobody: let it pass
    request = _request(corpus, tmp_path / "ray1", model_dir, "ray", workers=1, threads=None)
    encode_corpus(request, log=lambda line: None, before_shard=_meet_the_other_actor(single))
    assert {entry["threads"] for entry in _hook_log(single)} == {2}  # 2 CPUs / 1 worker


@pytest.mark.slow
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
    assert list(_files(remote)) == ALL_SHARDS
    assert _files(remote) == _files(local)
    assert _manifest(remote)["shards"] == _manifest(local)["shards"]
    manifest = _manifest(remote)
    assert manifest["complete"] is True and [e["rows"] for e in manifest["inputs"]] == [25, 20]
    run = manifest["runs"][-1]
    assert (run["engine"], run["workers"], run["nodes"]) == ("ray", 2, 1)


@pytest.mark.slow
def test_ray_bad_row_keeps_every_shard_before_it_and_the_rerun_continues(ray_session, model_dir, tmp_path):
    good = [json.dumps({"text": t}) for t in LINES[25:]]
    bad = list(good)
    bad[13] = '{"text": 5}'  # row 14 of b.jsonl.gz, in its second shard
    corpus = _corpus(tmp_path / "corpus", bad)
    out = tmp_path / "ray"
    with pytest.raises(DataFormatError) as err:
        encode_corpus(_request(corpus, out, model_dir, "ray", workers=2), log=lambda line: None)
    assert str(err.value) == f"{corpus}/b.jsonl.gz:14: expected a string field 'text' (int)"
    assert _names(out) == ALL_SHARDS[:4]  # all of a.txt and b.jsonl.gz's rows 1-10: what came before row 14
    assert _manifest(out)["runs"][-1]["shards_written"] == 4
    (corpus / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(good) + "\n").encode()))
    info = encode_corpus(_request(corpus, out, model_dir, "ray", workers=2), log=lambda line: None)
    assert info["written"] == 1 and info["rows"] == 45
    local = tmp_path / "local"
    encode_corpus(_request(corpus, local, model_dir, "local"), log=lambda line: None)
    assert _files(out) == _files(local)


INTERRUPTED_RUN = """
import sys, time
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings

def slow(work):  # in the actors: a shard takes at least 0.4 s
    time.sleep(0.4)

corpus, out, model = sys.argv[1:4]
request = EncodeRequest(corpus, out, model, ShardSettings(shard_size=10), engine="ray", workers=2, threads=1)
try:
    encode_corpus(request, log=lambda line: print(line, flush=True), before_shard=slow)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_ctrl_c_on_ray_keeps_every_landed_shard_and_the_resume_encodes_the_rest(
    ray_session, model_dir, tmp_path
):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group) after two shards have landed."""
    corpus = tmp_path / "corpus.txt"
    lines = [f"line {i} " + "word " * (i % 5) for i in range(160)]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "ray"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(INTERRUPTED_RUN), str(corpus), str(out), str(model_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        landed = []
        while len(landed) < 2:
            line = proc.stdout.readline()
            assert line, f"the run ended before two shards landed: {proc.stderr.read()[-2000:]}"
            if line.startswith("shard-"):
                landed.append(line)
        os.killpg(proc.pid, signal.SIGINT)
        rest, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr[-2000:]
    assert stderr == ""  # nothing from Ray on the user's stderr
    logged = sorted(line.split(":")[0] for line in landed + rest.splitlines() if line.startswith("shard-"))
    kept = _names(out)
    assert kept == logged and 2 <= len(kept) < 16  # every shard that landed, and only those
    assert _manifest(out)["complete"] is False

    info = encode_corpus(_request(corpus, out, model_dir, "ray", workers=2), log=lambda line: None)
    assert info["written"] == 16 - len(kept) and info["rows"] == 160
    local = tmp_path / "local"
    encode_corpus(_request(corpus, local, model_dir, "local"), log=lambda line: None)
    assert _files(out) == _files(local) and len(_files(out)) == 16
