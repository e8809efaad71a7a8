"""Sharded `sentkit encode` in process: shard names and manifest, resume, nothing-to-do, refusals, bad rows."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time

import numpy as np
import pytest

from conftest import make_tiny_encoder
from sentkit.cli import main
from sentkit.corpus.encode_run import EncodeRequest, encode_corpus
from sentkit.corpus.manifest import ManifestMismatch
from sentkit.corpus.shards import InputChanged, ShardSettings
from sentkit.errors import DataFormatError, NonFiniteVectors, OutputPathError

LINES = [f"sentence {i} " + "word " * (i % 7) for i in range(25)]


@pytest.fixture(scope="module")
def encoder():
    return make_tiny_encoder(pooling="mean")


def _settled(path):
    """Date `path` a minute back: an identity taken within seconds of a write is not trusted (identity.py),
    and a rerun then compares the file's texts instead of saying "nothing to do" straight away."""
    past = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(past, past))
    return path


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return _settled(path)


def _encode(encoder, source, out, logs=None, before_shard=None, **settings):
    settings = ShardSettings(**({"shard_size": 10} | settings))
    request = EncodeRequest(
        input=str(source), output=str(out), model="tiny", settings=settings, engine="local"
    )
    log = logs.append if logs is not None else (lambda line: None)
    return encode_corpus(request, load_model=lambda name: encoder, log=log, before_shard=before_shard)


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("shard-")}


def _manifest(folder) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_shards_have_deterministic_names_and_a_manifest_of_their_rows(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    summary = _encode(encoder, corpus, out)
    assert summary["status"] == "complete" and summary["written"] == 3 and summary["rows"] == 25
    names = ["shard-00000-000000.npy", "shard-00000-000001.npy", "shard-00000-000002.npy"]
    assert list(_files(out)) == names
    manifest = _manifest(out)
    assert manifest["complete"] is True and manifest["rows"] == 25
    assert [(s["first_row"], s["rows"]) for s in manifest["shards"]] == [(1, 10), (11, 10), (21, 5)]
    assert manifest["inputs"][0]["rows"] == 25 and manifest["model"]["dim"] == 32
    assert manifest["model"]["fingerprint"].startswith("weights:")
    assert manifest["settings"] == {
        "shard_size": 10,
        "dtype": "float32",
        "format": "npy",
        "batch_size": 64,
        "input_format": "auto",
        "text_field": "text",
    }
    for record in manifest["shards"]:
        data = (out / record["name"]).read_bytes()
        assert record["bytes"] == len(data) and record["sha256"] == hashlib.sha256(data).hexdigest()
    # a shard is its own rows encoded on their own: byte-equal to encode() on those texts
    np.testing.assert_array_equal(np.load(out / names[1]), encoder.encode(LINES[10:20]))
    assert manifest["runs"][0]["status"] == "complete" and manifest["runs"][0]["shards_written"] == 3


def test_float16_parquet_shards_carry_row_ids(encoder, corpus, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "out"
    _encode(encoder, corpus, out, dtype="float16", format="parquet")
    table = pq.read_table(out / "shard-00000-000001.parquet")
    assert table.column_names == ["source", "row", "vector"]
    assert table.column("row").to_pylist() == list(range(11, 21))
    assert set(table.column("source").to_pylist()) == {str(corpus)}
    vectors = np.array(table.column("vector").to_pylist())
    assert table.schema.field("vector").type.value_type == "halffloat"
    np.testing.assert_array_equal(vectors, encoder.encode(LINES[10:20]).astype(np.float16))


def test_a_run_stopped_after_two_shards_resumes_to_the_same_bytes(encoder, corpus, tmp_path):
    clean, resumed = tmp_path / "clean", tmp_path / "resumed"
    _encode(encoder, corpus, clean)

    def stop_at_third(work):
        if work.chunk == 2:
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        _encode(encoder, corpus, resumed, before_shard=stop_at_third)
    stopped = _manifest(resumed)
    assert [s["chunk"] for s in stopped["shards"]] == [0, 1] and stopped["complete"] is False
    assert stopped["runs"][0]["status"].startswith("stopped: RuntimeError: simulated crash")
    logs = []
    assert _encode(encoder, corpus, resumed, logs)["written"] == 1
    assert _files(resumed) == _files(clean)
    assert _manifest(resumed)["shards"] == _manifest(clean)["shards"]
    assert any(line.startswith("shard-00000-000002.npy: rows 21-25") for line in logs)


def test_a_shard_written_but_not_yet_listed_is_encoded_again(encoder, corpus, tmp_path):
    """A kill between a shard's rename and the next manifest save: the file is there, the record is not."""
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    reference = _files(out)
    manifest = _manifest(out)
    manifest["shards"] = manifest["shards"][:2]
    manifest["complete"] = False
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "shard-00000-000002.npy").write_bytes(b"half a shard")  # whatever the kill left
    (out / ".shard-00000-000002.npy.x1y2.tmp").write_bytes(b"temporary")
    assert _encode(encoder, corpus, out)["written"] == 1
    assert _files(out) == reference
    assert not list(out.glob(".*.tmp"))


def test_finished_output_is_left_alone(encoder, corpus, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()}
    calls = []
    real = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    logs = []
    summary = _encode(encoder, corpus, out, logs)
    assert summary["status"] == "nothing to do" and summary["written"] == 0
    assert logs == [f"nothing to do: {out} already holds all 25 rows (3 shards) of {corpus}"]
    assert calls == []
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()} == before


def _edit_byte(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda out, corpus: _edit_byte(out / "shard-00000-000001.npy"), "content differs from the sha256"),
        (
            lambda out, corpus: (out / "shard-00000-000001.npy").write_bytes(b"\x93NUMPY"),
            "6 bytes, manifest.json records",
        ),
        (
            lambda out, corpus: (out / "shard-00000-000000.npy").unlink(),
            "listed in manifest.json but missing",
        ),
        (lambda out, corpus: (out / "manifest.json").write_text("{not json"), "cannot be read as JSON"),
    ],
)
def test_a_manifest_that_does_not_match_its_shards_is_refused(encoder, corpus, tmp_path, change, expected):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    change(out, corpus)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ManifestMismatch, match=expected) as err:
        _encode(encoder, corpus, out)
    assert "\n" not in str(err.value)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing written


def test_another_model_other_settings_or_other_input_are_refused(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    with pytest.raises(
        ManifestMismatch, match=r"written by model 'tiny' \(weights:.*\), not 'tiny' \(weights:"
    ):
        _encode(make_tiny_encoder(pooling="mean", seed=1), corpus, out)
    with pytest.raises(
        ManifestMismatch, match=r"written with dtype='float32', this run asks dtype='float16'"
    ):
        _encode(encoder, corpus, out, dtype="float16")
    other = tmp_path / "other.txt"
    other.write_text("x\n")
    with pytest.raises(ManifestMismatch, match=r"written for input .*in\.txt, this run reads .*other\.txt"):
        _encode(encoder, other, out)


def test_input_changed_under_finished_shards_is_refused(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    lines = list(LINES)
    lines[4] = "an edited line"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")  # size and mtime change: rows re-checked
    with pytest.raises(
        InputChanged, match=r"in\.txt: rows 1-10 differ from the rows shard-00000-000000\.npy"
    ):
        _encode(encoder, corpus, out)
    corpus.write_text("\n".join(LINES + ["one more"]) + "\n", encoding="utf-8")
    with pytest.raises(InputChanged, match="has more than the 25 rows"):
        _encode(encoder, corpus, out)
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")  # restored: the rows match again
    assert _encode(encoder, corpus, out)["written"] == 0


@pytest.mark.parametrize("kind", ["text", "jsonl"])
def test_bad_row_stops_at_file_and_line_and_the_fixed_rerun_continues(encoder, tmp_path, kind):
    clean_path = tmp_path / f"clean.{'txt' if kind == 'text' else 'jsonl.gz'}"
    rows = LINES if kind == "text" else [json.dumps({"text": t}) for t in LINES]
    good = ("\n".join(rows) + "\n").encode()
    bad_rows = list(rows)
    bad_rows[22] = "\udcff broken" if kind == "text" else '{"text": "unterminated'
    bad = "\n".join(bad_rows).encode("utf-8", "surrogateescape") + b"\n"
    write = (
        (lambda p, d: p.write_bytes(d)) if kind == "text" else (lambda p, d: p.write_bytes(gzip.compress(d)))
    )
    write(clean_path, good)
    path = tmp_path / f"in.{'txt' if kind == 'text' else 'jsonl.gz'}"
    write(path, bad)
    out = tmp_path / "out"
    with pytest.raises(DataFormatError, match=rf"in\.{'txt' if kind == 'text' else 'jsonl.gz'}:23: expected"):
        _encode(encoder, path, out)
    manifest = _manifest(out)
    assert [s["name"] for s in manifest["shards"]] == ["shard-00000-000000.npy", "shard-00000-000001.npy"]
    for record in manifest["shards"]:  # the shards before the bad row are complete and valid
        assert hashlib.sha256((out / record["name"]).read_bytes()).hexdigest() == record["sha256"]
    write(path, good)  # the fix
    assert _encode(encoder, path, out)["written"] == 1
    reference = tmp_path / "reference"
    _encode(encoder, clean_path, reference)
    assert _files(out) == _files(reference)


def test_a_folder_of_other_files_or_in_use_is_refused(encoder, corpus, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputPathError, match="holds files but no manifest.json"):
        _encode(encoder, corpus, out)


def test_cli_sharded_mode_is_chosen_by_shard_size(tmp_path, corpus, capsys):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    out = tmp_path / "vectors"
    args = [
        "encode",
        "--model",
        str(model),
        "--input",
        str(corpus),
        "--output",
        str(out),
        "--engine",
        "local",
    ]
    assert main(args + ["--shard-size", "10", "--dtype", "float16"]) == 0
    assert f"{out}: complete; 3 shards, 25 rows" in capsys.readouterr().out
    assert np.load(out / "shard-00000-000002.npy").dtype == np.float16
    assert main(args + ["--shard-size", "10", "--dtype", "float16"]) == 0
    captured = capsys.readouterr()
    assert "nothing to do" in captured.err and f"{out}: nothing to do" in captured.out
    assert main(args) == 2  # --engine without --shard-size: refused, not ignored
    assert "--engine applies to sharded output; add --shard-size N" in capsys.readouterr().err
    bf16 = [*args[:6], str(tmp_path / "bf16"), "--shard-size", "10", "--precision", "bf16"]
    assert main(bf16) == 0 and "25 rows" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "bf16" / "manifest.json").read_text())
    assert manifest["model"]["precision"] == "bf16" and manifest["model"]["fingerprint"].endswith("+bf16")
    npy = ["encode", "--model", str(model), "--input", str(corpus), "--output", str(tmp_path / "v.npy")]
    assert main(npy + ["--shard-size", "10"]) == 2
    assert "--shard-size writes a folder of shards; --output" in capsys.readouterr().err
    assert main(npy) == 0 and np.load(tmp_path / "v.npy").shape == (25, 32)  # the one-matrix mode as before


@pytest.mark.parametrize("suffix, kind", [("", "weights"), ("@int8", "onnx")])
def test_a_trained_runs_best_folder_and_its_int8_export_encode_to_shards(
    tmp_path, corpus, monkeypatch, suffix, kind
):
    if suffix:
        pytest.importorskip("onnxruntime")
    from sentkit.encoders import load_encoder

    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    best = make_tiny_encoder(pooling="mean").save(tmp_path / "run" / "best")  # what `sentkit train` keeps
    out = tmp_path / "out"
    args = ["encode", "--model", f"{best}{suffix}", "--input", str(corpus), "--output", str(out)]
    assert main(args + ["--shard-size", "10", "--engine", "local"]) == 0
    manifest = _manifest(out)
    assert manifest["model"]["fingerprint"].startswith(f"{kind}:") and manifest["rows"] == 25
    expected = load_encoder(f"{best}{suffix}").encode(LINES[20:])
    np.testing.assert_array_equal(np.load(out / "shard-00000-000002.npy"), expected)


def test_complete_only_when_the_shards_cover_every_row(encoder, corpus, tmp_path):
    """With Ray an input's end can arrive before its last shard: the folder is complete only once covered."""
    from sentkit.corpus.manifest import Manifest

    out = tmp_path / "out"
    _encode(encoder, corpus, out)
    manifest = Manifest.load(out)
    last = manifest.data["shards"].pop()  # the end of in.txt was seen, its last shard not yet
    with pytest.raises(RuntimeError, match="the shards do not cover every input row"):
        manifest.mark_complete()
    manifest.add_shard(last)
    manifest.mark_complete()
    assert manifest.complete


def test_nan_vectors_stop_the_run_naming_the_shard_and_nothing_is_written_for_it(encoder, corpus, tmp_path):
    class NanOnThirdShard:
        name = "nan"

        def encode(self, sentences, batch_size=64, show_progress=False):
            vectors = np.ones((len(sentences), 4), dtype=np.float32)
            if sentences[0] == LINES[20]:
                vectors[2, 1] = np.nan
            return vectors

    out = tmp_path / "out"
    with pytest.raises(
        NonFiniteVectors,
        match=r"non-finite vectors \(NaN or Infinity\) for 1 of 5 sentences.*\(rows 21-25 of shard-00000-000002\.npy\)",
    ):
        _encode(NanOnThirdShard(), corpus, out)
    assert list(_files(out)) == ["shard-00000-000000.npy", "shard-00000-000001.npy"]


def _compressed(path, data: bytes) -> None:
    import bz2

    opener = {".gz": gzip.compress, ".bz2": bz2.compress}.get(path.suffix, lambda d: d)
    path.write_bytes(opener(data))


@pytest.mark.parametrize(
    "name, rows, extra",
    [
        ("in.jsonl", [json.dumps({"text": t, "id": i}) for i, t in enumerate(LINES)], []),
        ("in.ndjson.bz2", [json.dumps({"sentence": t}) for t in LINES], ["--text-field", "sentence"]),
        ("in.txt.gz", LINES, []),
        ("in.data", [json.dumps({"text": t}) for t in LINES], ["--input-format", "jsonl"]),
    ],
)
def test_the_one_matrix_mode_reads_its_input_as_the_sharded_mode_does(tmp_path, capsys, name, rows, extra):
    from sentkit.encoders import load_encoder

    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    path = tmp_path / name
    _compressed(path, ("\n".join(rows) + "\n").encode())
    out = tmp_path / "v.npy"
    assert main(["encode", "--model", str(model), "--input", str(path), "--output", str(out), *extra]) == 0
    np.testing.assert_allclose(np.load(out), load_encoder(model).encode(LINES), atol=1e-6)


def test_the_one_matrix_mode_refuses_a_folder_naming_the_flag(tmp_path, corpus, capsys):
    model = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    capsys.readouterr()
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("x\n")
    out = tmp_path / "v.npy"
    assert main(["encode", "--model", str(model), "--input", str(folder), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"sentkit: error: --input {folder} is a folder; add --shard-size N")
        and err.count("\n") == 1
    )
    assert not out.exists()
