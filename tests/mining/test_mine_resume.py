"""A mining run stopped by Ctrl-C, SIGTERM or kill -9 resumes from its work folder (`OUT.work/`) without
redoing finished blocks, and writes the TSV an uninterrupted run writes, byte for byte; a changed option or
input refuses the resume in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mining_sides import encoded_sides
from sentkit.cli import main
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.mining import knn_run
from sentkit.mining.mine import MineConfig, MineRequest, MiningInterrupted, mine_files
from sentkit.mining.search import IndexConfig
from sentkit.mining.work_folder import WorkFolder, work_path

SRC = Path(__file__).resolve().parents[2] / "src"
BLOCK = 64  # queries per block here: 300 rows make 5 blocks a direction


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    return encoded_sides(tmp_path_factory.mktemp("resume"))


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(knn_run, "BLOCK_ROWS", BLOCK)


def _request(sides, out: Path, kind: str = "flat", k: int = 4) -> MineRequest:
    _, src, tgt = sides
    config = MineConfig(k=k, index=IndexConfig(kind=kind))
    return MineRequest(str(src), str(tgt), str(out), config=config)


def _stop_after(monkeypatch, blocks: int, stop) -> None:
    """Make the run call `stop()` once `blocks` query blocks are marked finished."""
    marked = []
    original = WorkFolder.mark_done

    def mark_done(self, direction, block):
        original(self, direction, block)
        marked.append(block)
        if len(marked) == blocks:
            stop()

    monkeypatch.setattr(WorkFolder, "mark_done", mark_done)


@pytest.mark.parametrize("kind", ["flat", "IVF8,Flat"])
def test_ctrl_c_keeps_the_finished_blocks_and_the_rerun_writes_the_same_bytes(
    sides, tmp_path, monkeypatch, kind
):
    whole = tmp_path / "whole.tsv"
    mine_files(_request(sides, whole, kind), log=lambda line: None)
    assert not work_path(whole).exists()  # removed once the pairs are written

    out = tmp_path / "pairs.tsv"

    def interrupt():
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        _stop_after(patch, 7, interrupt)  # the forward direction's 5 blocks and 2 backward
        with pytest.raises(
            MiningInterrupted, match=r"interrupted; 7 finished query blocks kept in .*pairs.tsv.work"
        ):
            mine_files(_request(sides, out, kind), log=lambda line: None)
    assert not out.exists()
    manifest = json.loads((work_path(out) / "manifest.json").read_text())
    assert len(manifest["directions"]["forward"]["done"]) == 5
    assert len(manifest["directions"]["backward"]["done"]) == 2

    lines = []
    summary = mine_files(_request(sides, out, kind), log=lines.append)
    assert out.read_bytes() == whole.read_bytes()
    assert summary["resumed_blocks"] == {"forward": 5, "backward": 2}
    assert summary["index"]["backward"]["blocks"] == {"rows": BLOCK, "total": 5, "resumed": 2}
    # the finished forward direction is not searched, nor its keys read or its index filled, again
    assert summary["index"]["forward"]["key_parts"] is None and summary["index"]["forward"]["open_s"] == 0.0
    assert summary["index"]["backward"]["key_parts"] == 1
    assert any("resuming (5 forward and 2 backward query blocks finished)" in line for line in lines)
    assert not work_path(out).exists()


def test_a_changed_option_or_input_refuses_the_resume_in_one_line(sides, tmp_path, monkeypatch):
    out = tmp_path / "pairs.tsv"

    def interrupt():
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        _stop_after(patch, 2, interrupt)
        with pytest.raises(MiningInterrupted):
            mine_files(_request(sides, out), log=lambda line: None)
    with pytest.raises(
        ManifestMismatch, match=r"pairs.tsv.work: holds an unfinished run with another k \(4 there, 3 now\)"
    ):
        mine_files(_request(sides, out, k=3), log=lambda line: None)
    with pytest.raises(ManifestMismatch, match=r"another index.kind \(\"flat\" there, \"faiss-flat\" now\)"):
        mine_files(_request(sides, out, kind="faiss-flat"), log=lambda line: None)
    model, src, tgt = sides
    swapped = MineRequest(str(tgt), str(src), str(out), config=MineConfig(index=IndexConfig(kind="flat")))
    with pytest.raises(ManifestMismatch, match=r"another src.path"):
        mine_files(swapped, log=lambda line: None)
    # the scoring and the threshold act after the lists: a resume may change them
    request = _request(sides, out)
    request.config = MineConfig(index=IndexConfig(kind="flat"), threshold=1.0, scoring="cosine")
    assert mine_files(request, log=lambda line: None)["resumed_blocks"] == {"forward": 2, "backward": 0}


def test_a_folder_that_is_not_a_work_folder_is_never_replaced(sides, tmp_path):
    out = tmp_path / "pairs.tsv"
    work_path(out).mkdir()
    (work_path(out) / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ManifestMismatch, match="exists without manifest.json"):
        mine_files(_request(sides, out), log=lambda line: None)
    assert (work_path(out) / "notes.txt").read_text(encoding="utf-8") == "mine"


STOPPER = """
import os, signal, sys
from sentkit.cli import main
from sentkit.mining import knn_run
from sentkit.mining.work_folder import WorkFolder
knn_run.BLOCK_ROWS = {block}
original, marked = WorkFolder.mark_done, []
def mark_done(self, direction, block):
    original(self, direction, block)
    marked.append(block)
    if len(marked) == {after}:
        os.kill(os.getpid(), signal.{signal})
WorkFolder.mark_done = mark_done
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("signal_name", "code"), [("SIGKILL", -9), ("SIGTERM", 143)])
def test_a_killed_or_terminated_process_resumes_to_the_same_bytes(sides, tmp_path, signal_name, code):
    _, src, tgt = sides
    whole, out = tmp_path / "whole.tsv", tmp_path / "pairs.tsv"
    common = ["mine", "--src", str(src), "--tgt", str(tgt), "--index", "flat"]
    script = tmp_path / "stopper.py"
    script.write_text(STOPPER.format(block=BLOCK, after=3, signal=signal_name), encoding="utf-8")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(script), *common, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == code, done.stderr[-2000:]
    if signal_name == "SIGTERM":
        assert done.stderr.strip().splitlines()[-1] == (
            f"sentkit: interrupted; 3 finished query blocks kept in {out}.work: rerun the same command to resume"
        )
    assert not out.exists()
    assert json.loads((work_path(out) / "manifest.json").read_text())["directions"]["forward"]["done"] == [
        0,
        1,
        2,
    ]

    knn_run.BLOCK_ROWS = BLOCK  # the same block size in this process (the fixture restores it)
    assert main([*common, "--out", str(whole)]) == 0
    assert main([*common, "--out", str(out)]) == 0
    assert out.read_bytes() == whole.read_bytes()
    assert json.loads(Path(f"{out}.json").read_text())["resumed_blocks"] == {"forward": 3, "backward": 0}
    assert not work_path(out).exists() and not (tmp_path / ".pairs.tsv.lock").exists()
