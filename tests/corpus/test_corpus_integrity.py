"""A shard folder never records a state its vectors were not made from: an input edited while it is encoded,
shard records that do not tile the input's rows, a SIGTERM, and `--device cuda` without a GPU."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import sentkit
from conftest import make_tiny_encoder
from sentkit.cli import main
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.corpus.shards import InputChanged, ShardSettings, text_digest
from sentkit.errors import InvalidArgument
from sentkit.mining.mine import MineRequest, mine_files
from sentkit.mining.vectors import ShardVectors

LINES = [f"Tom wrote sentence {i} " + "word " * (i % 7) for i in range(25)]


@pytest.fixture(scope="module")
def encoder():
    return make_tiny_encoder(pooling="mean")


def _settled(path):
    """Date `path` a minute back, so its identity is trusted (identity.py)."""
    past = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(past, past))
    return path


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    return _settled(_write(tmp_path / "in.txt", LINES))


def _encode(encoder, source, out, logs=None, before_shard=None, device="auto", precision="fp32"):
    request = EncodeRequest(
        input=str(source),
        output=str(out),
        model="tiny",
        settings=ShardSettings(shard_size=10),
        engine="local",
        device=device,
        precision=precision,
    )
    log = logs.append if logs is not None else (lambda line: None)
    return encode_corpus(request, load_model=lambda name: encoder, log=log, before_shard=before_shard)


def _manifest(folder) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _save_manifest(folder, data) -> None:
    (folder / "manifest.json").write_text(json.dumps(data))


def _shards(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("shard-")}


# ---- an input edited while it is encoded ------------------------------------------------------------------
def _replace_like_sed(path, lines):
    """`sed -i`: a new file renamed over the old one (a new inode; the reader's open file keeps the old)."""
    tmp = path.with_name(path.name + ".sed")
    _write(tmp, lines)
    os.replace(tmp, path)


def _rewrite_in_place(path, lines):
    """The same bytes count rewritten into the same inode (the reader reads on into the new content)."""
    with open(path, "r+b") as fh:
        fh.write(("\n".join(lines) + "\n").encode())


@pytest.mark.parametrize(
    "edit, change",
    [(_replace_like_sed, "replaced by another file"), (_rewrite_in_place, r"modified \(its mtime changed\)")],
)
def test_an_input_edited_while_it_is_encoded_stops_the_run_and_is_not_recorded(
    encoder, corpus, tmp_path, edit, change
):
    edited = [line.replace("Tom", "Bob") for line in LINES]  # the same size, as in `sed -i s/Tom/Bob/g`
    out = tmp_path / "out"

    def edit_before_second_shard(work):
        if work.chunk == 1:
            edit(corpus, edited)

    with pytest.raises(InputChanged, match=rf"in\.txt: changed while it was read \({change}\)") as err:
        _encode(encoder, corpus, out, before_shard=edit_before_second_shard)
    assert "\n" not in str(err.value)
    manifest = _manifest(out)
    entry = manifest["inputs"][0]
    assert manifest["complete"] is False and manifest["runs"][-1]["status"].startswith(
        "stopped: InputChanged"
    )
    assert not {"rows", "size", "mtime_ns", "inode"} & set(entry)  # nothing recorded of the edited file
    # the shards listed are the texts they were encoded from: the two read before the edit
    assert [(s["chunk"], s["text_sha256"]) for s in manifest["shards"]] == [
        (0, text_digest(LINES[:10])),
        (1, text_digest(LINES[10:20])),
    ]
    np.testing.assert_array_equal(np.load(out / "shard-00000-000000.npy"), encoder.encode(LINES[:10]))

    # the rerun compares the finished shards with the edited file: refused, nothing written
    before = _shards(out)
    with pytest.raises(
        InputChanged, match=r"in\.txt: rows 1-10 differ from the rows shard-00000-000000\.npy"
    ):
        _encode(encoder, corpus, out)
    assert _shards(out) == before
    with pytest.raises(ManifestMismatch, match="the encode run has not finished"):
        ShardVectors(out)  # mine


def test_an_edit_after_the_file_was_read_is_found_by_the_rerun_and_by_mine(encoder, corpus, tmp_path):
    """The issue's case once the run has ended: `sed -i s/Tom/Bob/` keeps the size; the identity differs,
    so the texts are compared with the shards and the folder is refused."""
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    recorded = _manifest(out)["inputs"][0]
    assert {k: recorded[k] for k in ("size", "inode")} == {
        "size": corpus.stat().st_size,
        "inode": corpus.stat().st_ino,
    }
    _replace_like_sed(corpus, [line.replace("Tom", "Bob") for line in LINES])
    with pytest.raises(
        InputChanged, match=r"in\.txt: rows 1-10 differ from the rows shard-00000-000000\.npy"
    ):
        ShardVectors(out)
    logs = []
    with pytest.raises(InputChanged, match="rows 1-10 differ"):
        _encode(encoder, corpus, out, logs)
    assert "comparing its rows with the shards' texts" in logs[0]
    assert _manifest(out)["inputs"][0] == recorded  # the refused run recorded nothing
    # the original texts back under a new inode and mtime: checked by content, then trusted again
    _settled(_write(corpus, LINES))
    assert ShardVectors(out).texts([0, 24]) == [LINES[0], LINES[24]]
    logs = []
    assert _encode(encoder, corpus, out, logs)["status"] == "nothing to do"
    assert _manifest(out)["inputs"][0]["inode"] == corpus.stat().st_ino
    logs = []
    assert _encode(encoder, corpus, out, logs)["status"] == "nothing to do"
    assert len(logs) == 1 and logs[0].startswith("nothing to do")  # identity trusted: no re-reading


def test_an_identity_taken_right_after_a_write_is_not_trusted(encoder, tmp_path):
    """An edit within the same mtime tick and with the same size leaves the identity as it was: a file
    written shortly before it was read is compared by its texts instead."""
    corpus = _write(tmp_path / "fresh.txt", LINES)  # not settled: written just now
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    stat = corpus.stat()
    _rewrite_in_place(corpus, [line.replace("Tom", "Bob") for line in LINES])
    os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same mtime, as within one tick
    with pytest.raises(InputChanged, match="rows 1-10 differ"):
        ShardVectors(out)
    with pytest.raises(InputChanged, match="rows 1-10 differ"):
        _encode(encoder, corpus, out)


def test_a_same_size_edit_with_its_mtime_set_back_is_found_by_its_ctime(encoder, corpus, tmp_path):
    """The report: `encode` said "nothing to do" and `mine` printed the new text beside the old vector. Size,
    mtime and inode are the recorded ones; the ctime the edit gave the file is not."""
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    recorded = _manifest(out)["inputs"][0]
    before = corpus.stat()
    _rewrite_in_place(corpus, [line.replace("Tom", "Bob") for line in LINES])
    os.utime(corpus, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = corpus.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        recorded["size"],
        recorded["mtime_ns"],
        recorded["inode"],
    )
    assert after.st_ctime_ns != recorded["ctime_ns"]
    with pytest.raises(InputChanged, match=r"in\.txt: rows 1-10 differ from the rows shard-00000-000000"):
        ShardVectors(out)
    logs = []
    with pytest.raises(InputChanged, match="rows 1-10 differ"):
        _encode(encoder, corpus, out, logs)
    assert "not the size, mtime, ctime or inode recorded" in logs[0]


def test_a_manifest_recorded_without_ctime_has_its_inputs_compared_by_their_texts(encoder, corpus, tmp_path):
    """A folder written by an older sentkit: its inputs' texts are compared with the shards' digests (no
    refusal), and a rerun records the identity with its ctime."""
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    manifest = _manifest(out)
    del manifest["inputs"][0]["ctime_ns"]
    _save_manifest(out, manifest)
    assert ShardVectors(out).texts([0]) == [LINES[0]]
    logs = []
    assert _encode(encoder, corpus, out, logs)["status"] == "nothing to do"
    assert "comparing its rows with the shards' texts" in logs[0]
    assert _manifest(out)["inputs"][0]["ctime_ns"] == corpus.stat().st_ctime_ns
    # an old manifest's input edited the same way is refused
    manifest = _manifest(out)
    del manifest["inputs"][0]["ctime_ns"]
    _save_manifest(out, manifest)
    before = corpus.stat()
    _rewrite_in_place(corpus, [line.replace("Tom", "Bob") for line in LINES])
    os.utime(corpus, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(InputChanged, match="rows 1-10 differ"):
        ShardVectors(out)


def test_mine_refuses_an_input_changed_after_the_folder_was_checked(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    vectors = ShardVectors(out)
    _replace_like_sed(corpus, [line.replace("Tom", "Bob") for line in LINES])
    with pytest.raises(ManifestMismatch, match=r"in\.txt: changed while mining read it"):
        vectors.texts([3])


# ---- the shard records must tile every input's rows -------------------------------------------------------
def test_a_shard_record_deleted_by_hand_is_encoded_again_and_refused_by_mine(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    reference = _shards(out)
    manifest = _manifest(out)
    del manifest["shards"][1]  # rows 11-20; the file stays, "complete" and the total are left as they were
    _save_manifest(out, manifest)
    with pytest.raises(
        ManifestMismatch, match=r"manifest\.json: rows 11-20 of .*in\.txt have no shard; rerun"
    ):
        ShardVectors(out)
    logs = []
    summary = _encode(encoder, corpus, out, logs)
    assert summary["status"] == "complete" and summary["written"] == 1 and summary["rows"] == 25
    assert logs[0].endswith("no shard for rows 11-20 of " + str(corpus) + "; encoding them")
    assert _shards(out) == reference
    assert ShardVectors(out).n == 25


def _duplicate_last(m):
    m["shards"].append(dict(m["shards"][-1]))


def _shift_first_row(m):
    m["shards"][1]["first_row"] = 12


def _grow_rows(m):
    m["shards"][1]["rows"] = 12


def _past_the_end(m):
    extra = dict(m["shards"][-1], chunk=3, first_row=31, rows=5, name="shard-00000-000003.npy")
    m["shards"].append(extra)


def _total(m):
    m["rows"] = 30


def _outside(m):
    m["shards"][1]["name"] = "../victim.npy"


@pytest.mark.parametrize(
    "edit, expected",
    [
        (_duplicate_last, r"shard-00000-000002\.npy is listed twice"),
        (_shift_first_row, r"shard-00000-000001\.npy records rows from 12, chunk 1 starts at 11"),
        (_grow_rows, r"shard-00000-000001\.npy records 12 rows, expected 10 \(rows 11-20\)"),
        (_past_the_end, r"shard-00000-000003\.npy lies past the 25 rows of"),
        # the report: refused as "records rows from 1, chunk 0 starts at 1"
        (_outside, r"manifest\.json: shard '\.\./victim\.npy' is a path outside the shard folder"),
    ],
)
def test_shard_records_that_overlap_or_do_not_fit_are_refused(encoder, corpus, tmp_path, edit, expected):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    manifest = _manifest(out)
    edit(manifest)
    _save_manifest(out, manifest)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(
        ManifestMismatch, match=expected + ".*the manifest was edited: encode into a new folder"
    ):
        _encode(encoder, corpus, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(ManifestMismatch, match=expected):
        ShardVectors(out)


def _forge_shard(folder, name, matrix, allow_pickle=False):
    """Replace a shard file by `matrix` and its manifest record's size and sha256 to match (a hand edit)."""
    path = folder / name
    np.save(path, matrix, allow_pickle=allow_pickle)
    manifest = _manifest(folder)
    record = next(r for r in manifest["shards"] if r["name"] == name)
    record["bytes"] = path.stat().st_size
    record["sha256"] = sentkit.cache.sha256_file(path)
    _save_manifest(folder, manifest)
    return path


def _nan_row(path):
    matrix = np.load(path)
    matrix[3] = np.nan
    return matrix


@pytest.mark.parametrize(
    ("forge", "says"),
    [
        # the report: "Array can't be memory-mapped", exit 1
        (lambda p: np.array([{"a": 1}] * 10, dtype=object), "(it holds|Array can't be memory-mapped)"),
        # the report: blamed on the input, "has no row -50", exit 1
        (_nan_row, r"row 3 holds NaN or inf"),
        (lambda p: np.load(p)[:, :5], r"it holds 10 x 5, its record 10 rows of dim"),
    ],
)
def test_mine_refuses_a_forged_shard_naming_it_as_corrupt(encoder, corpus, tmp_path, capsys, forge, says):
    import sentkit.cache  # noqa: F401

    out, other = tmp_path / "out", tmp_path / "other"
    _encode(encoder, corpus, out)
    _encode(encoder, _settled(_write(tmp_path / "en.txt", LINES[::-1])), other)
    shard = _forge_shard(out, "shard-00000-000001.npy", forge(out / "shard-00000-000001.npy"), True)
    tsv = tmp_path / "pairs.tsv"
    assert main(["mine", "--src", str(out), "--tgt", str(other), "--out", str(tsv), "--index", "flat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentkit: error: {shard}: the shard file is corrupt") and err.count("\n") == 1
    assert re.search(says, err), err
    assert "in.txt" not in err and not tsv.exists()


def test_mine_refuses_an_edited_row_total(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    manifest = _manifest(out)
    manifest["rows"] = 30
    _save_manifest(out, manifest)
    with pytest.raises(ManifestMismatch, match="records 30 rows, its shards hold 25"):
        ShardVectors(out)


class CpuOnly:
    """An encoder that is not a torch module (as ONNX, OpenVINO and static models are)."""

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.ones((len(sentences), 4), dtype=np.float32)


# ---- --device cuda without a GPU ------------------------------------------------------------------------
def test_device_cuda_without_a_gpu_is_refused_before_the_folder_exists(
    encoder, corpus, tmp_path, monkeypatch
):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match="--device cuda: torch sees no GPU"):
        _encode(encoder, corpus, out, device="cuda")
    assert not out.exists()

    with pytest.raises(InvalidArgument, match="--device cuda: CpuOnly runs on the CPU only"):
        _encode(CpuOnly(), corpus, out, device="cuda")
    assert not out.exists()


def test_cli_device_cuda_without_a_gpu_is_one_line_and_exit_2(corpus, tmp_path, monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    model = make_tiny_encoder().save(tmp_path / "tiny")
    capsys.readouterr()  # the save's progress bar
    out = tmp_path / "out"
    args = [
        "encode",
        "--model",
        str(model),
        "--input",
        str(corpus),
        "--output",
        str(out),
        "--shard-size",
        "10",
    ]
    assert main(args + ["--engine", "local", "--device", "cuda"]) == 2
    assert capsys.readouterr().err == "sentkit: error: --device cuda: torch sees no GPU\n"
    assert not out.exists()


# ---- --precision ------------------------------------------------------------------------------------------
def test_bf16_shards_record_their_precision_and_never_mix_with_fp32(corpus, tmp_path):
    fp32, bf16 = tmp_path / "fp32", tmp_path / "bf16"
    _encode(make_tiny_encoder(pooling="mean"), corpus, fp32)
    _encode(make_tiny_encoder(pooling="mean"), corpus, bf16, precision="bf16")  # a cast works in place
    m32, m16 = _manifest(fp32), _manifest(bf16)
    assert m16["model"]["fingerprint"] == m32["model"]["fingerprint"] + "+bf16"
    assert (m32["model"]["precision"], m16["model"]["precision"]) == ("fp32", "bf16")
    a, b = (np.vstack([block for _, block in ShardVectors(f).blocks()]) for f in (fp32, bf16))
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape == (25, 32)
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosine.min() > 0.98 and not np.array_equal(a, b)  # bfloat16 weights: close, not equal
    with pytest.raises(ManifestMismatch, match=r"\+bf16\), not 'tiny' \(\S+\); encode into a new folder"):
        _encode(make_tiny_encoder(pooling="mean"), corpus, bf16)  # fp32 into the bf16 folder
    request = MineRequest(src=str(fp32), tgt=str(bf16), out=str(tmp_path / "pairs.tsv"))
    with pytest.raises(ManifestMismatch, match=r"different models \('tiny', 'tiny' at bf16\)"):
        mine_files(request, log=lambda line: None)


def test_a_precision_the_model_cannot_run_is_refused_before_the_folder_exists(corpus, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match="--precision fp16 needs a GPU"):
        _encode(make_tiny_encoder(pooling="mean"), corpus, out, precision="fp16")
    with pytest.raises(InvalidArgument, match="--precision bf16: CpuOnly runs at fp32 only"):
        _encode(CpuOnly(), corpus, out, precision="bf16")
    assert not out.exists()


# ---- SIGTERM ----------------------------------------------------------------------------------------------
SLOW_CLI = """
import sys, time
import sentkit.corpus.shards as shards

encode_rows = shards.encode_rows
shards.encode_rows = lambda *a, **k: (time.sleep(0.3), encode_rows(*a, **k))[1]  # a shard takes a while
from sentkit.cli import main

sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_sigterm_stops_like_ctrl_c_and_the_resume_keeps_the_finished_shards(tmp_path):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    corpus = _settled(_write(tmp_path / "in.txt", [f"line {i}" for i in range(300)]))
    out = tmp_path / "out"
    args = ["encode", "--model", str(model), "--input", str(corpus), "--output", str(out)]
    args += ["--shard-size", "10", "--engine", "local", "--threads", "1"]
    env = dict(os.environ, PYTHONPATH=str(Path(sentkit.__file__).parents[1]), HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_CLI, *args], stderr=subprocess.PIPE, text=True, env=env
    )
    lines = []
    for line in proc.stderr:  # the first finished shard, then SIGTERM
        lines.append(line)
        if line.startswith("shard-"):
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 143, "".join(lines) + rest
    assert rest.strip().splitlines()[-1] == "sentkit: terminated (SIGTERM)"
    manifest = _manifest(out)
    finished = {s["name"]: s["sha256"] for s in manifest["shards"]}
    assert 1 <= len(finished) < 30 and manifest["complete"] is False
    run = manifest["runs"][-1]
    assert run["status"].startswith("stopped: Terminated") and run["shards_written"] == len(finished)
    kept = {name: (out / name).stat().st_mtime_ns for name in finished}

    summary = encode_corpus(
        EncodeRequest(
            str(corpus), str(out), str(model), ShardSettings(shard_size=10), engine="local", threads=1
        ),
        log=lambda line: None,
    )
    assert summary["written"] == 30 - len(finished) and summary["rows"] == 300
    assert {name: (out / name).stat().st_mtime_ns for name in finished} == kept  # not encoded again
    assert {s["name"]: s["sha256"] for s in _manifest(out)["shards"] if s["name"] in finished} == finished
