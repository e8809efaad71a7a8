"""What `sentkit encode` and `sentkit mine` accept as an input, and how many threads and workers: a pipe, a
device or an empty folder is named for what it is; --threads and --workers are bounded by the CPUs; each
refused in one line, exit 2, before any model loads or anything is written."""

from __future__ import annotations

import os

import pytest

import sentkit.cli
from sentkit.cli import main
from sentkit.corpus.cpu_limits import usable_cpus
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.shards import ShardSettings
from sentkit.errors import InvalidArgument


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    def never(name):
        raise AssertionError(f"the model {name} was loaded: the request should have been refused first")

    monkeypatch.setattr(sentkit.cli, "_load_model", never)


def _special(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
        return str(path), "is a named pipe (FIFO), not a regular file"
    if kind == "device":
        return "/dev/zero", "is a character device, not a regular file"
    path = tmp_path / "empty"
    path.mkdir()
    (path / ".hidden.txt").write_text("hidden\n", encoding="utf-8")
    return str(path), "a folder with no corpus file in it"


@pytest.mark.parametrize("kind", ["fifo", "device", "empty folder"])
@pytest.mark.parametrize("command", ["encode", "encode --shard-size", "mine"])
def test_a_pipe_a_device_or_an_empty_folder_is_named_for_what_it_is(tmp_path, capsys, kind, command):
    # the report: each said "file not found"
    path, says = _special(tmp_path, kind)
    out = tmp_path / "out"
    if command == "mine":
        other = tmp_path / "en.txt"
        other.write_text("one\ntwo\n", encoding="utf-8")
        args = ["mine", "--src", path, "--tgt", str(other), "--model", "m", "--out", str(out)]
    else:
        args = ["encode", "--model", "m", "--input", path, "--output", str(out)]
        args += ["--shard-size", "2"] if "shard" in command else []
    if command == "encode" and kind == "empty folder":
        says = "is a folder; add --shard-size N"  # one-matrix mode takes no folder at all
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentkit: error: {'--input ' if says.startswith('is a folder') else ''}{path}")
    assert says in err and "file not found" not in err and err.count("\n") == 1
    assert not out.exists()


def test_a_missing_input_is_still_not_found(tmp_path, capsys):
    args = ["encode", "--model", "m", "--input", str(tmp_path / "none.txt"), "--output", str(tmp_path / "o")]
    assert main([*args, "--shard-size", "2"]) == 2
    assert (
        "none.txt: file not found (expected a regular text, JSONL or parquet file" in capsys.readouterr().err
    )


# ---- --threads and --workers: bounded by the CPUs -----------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "says"),
    [
        # the report: 100000 exhausted the system's threads, then crashed after "interrupted"
        (
            ["--threads", "100000"],
            "--threads 100000: this machine has {cpus} CPUs for sentkit; give --threads 1 to {cpus}",
        ),
        (["--threads", "{over}"], "--threads {over}: this machine has {cpus} CPUs"),
        (["--workers", "100000"], "--workers 100000: Ray runs on this machine's {cpus} CPUs"),
    ],
)
def test_threads_and_workers_above_the_cpus_are_refused_before_the_model_loads(tmp_path, capsys, flags, says):
    if "--workers" in flags:
        pytest.importorskip("ray")  # without it, --workers is refused for that
    cpus = usable_cpus()
    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\nthree\n", encoding="utf-8")
    out = tmp_path / "out"
    flags = [f.format(over=cpus + 1) for f in flags]
    args = ["encode", "--model", "m", "--input", str(source), "--output", str(out), "--shard-size", "2"]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentkit: error: {says.format(cpus=cpus, over=cpus + 1)}")
    assert err.count("\n") == 1
    assert not out.exists()


def test_threads_up_to_the_cpus_are_accepted(tmp_path):
    from ngram_encoder import NgramEncoder

    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\nthree\n", encoding="utf-8")
    request = EncodeRequest(
        str(source),
        str(tmp_path / "out"),
        "ngram",
        ShardSettings(shard_size=2),
        engine="local",
        threads=usable_cpus(),
    )
    summary = encode_corpus(request, load_model=lambda name: NgramEncoder(), log=lambda line: None)
    assert (summary["status"], summary["rows"]) == ("complete", 3)
    with pytest.raises(InvalidArgument, match=rf"^--threads {usable_cpus() + 1}: this machine has"):
        encode_corpus(
            EncodeRequest(
                str(source), str(tmp_path / "o2"), "ngram", ShardSettings(), threads=usable_cpus() + 1
            ),
            load_model=lambda name: NgramEncoder(),
        )
