"""The export variants beside dynamic int8: onnxruntime static QDQ int8 (`@int8-static`), OpenVINO fp32 and
NNCF int8 (`@openvino`, `@openvino-int8`), the real calibration and check sentences, the cosine check every
cached export passes, and the int8 path `@int8` picks from the CPU's flags. Tiny random BERT throughout."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from conftest import make_tiny_encoder  # noqa: E402
from sentkit.cli import main  # noqa: E402
from sentkit.encoders import load_encoder  # noqa: E402
from sentkit.encoders.calibration import SentenceSet, calibration_set, check_set  # noqa: E402
from sentkit.encoders.export_check import MIN_MEAN_COSINE, agreement, check_export  # noqa: E402
from sentkit.encoders.int8_choice import INT8_PATH, choose_int8, host_kind  # noqa: E402
from sentkit.encoders.onnx.contract import META_FILE  # noqa: E402
from sentkit.encoders.onnx.encoder import OnnxEncoder  # noqa: E402
from sentkit.encoders.onnx.export import export_onnx  # noqa: E402
from sentkit.encoders.onnx.static_int8 import StaticInt8Options  # noqa: E402
from sentkit.errors import ExportCheckFailed  # noqa: E402

HAS_OPENVINO = importlib.util.find_spec("openvino") is not None
HAS_NNCF = importlib.util.find_spec("nncf") is not None
needs_openvino = pytest.mark.skipif(
    not HAS_OPENVINO, reason="openvino not installed (pip install 'sentkit[openvino]')"
)
needs_nncf = pytest.mark.skipif(
    not (HAS_OPENVINO and HAS_NNCF),
    reason="openvino and nncf not installed (pip install 'sentkit[openvino]')",
)

SENTENCES = [
    "A man is playing a guitar.",
    "Hi.",
    "",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Der Zug nach Berlin hat Verspätung.",
    "word " * 100,
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))  # (n,)


@pytest.fixture
def tiny():
    encoder = make_tiny_encoder(pooling="mean")
    encoder.normalize = True
    return encoder.eval()


@pytest.fixture(scope="module")
def sets(data_root):
    return calibration_set(None, root=data_root), check_set(None, root=data_root)


# ---- the sentences ---------------------------------------------------------------------------------------


def test_calibration_and_check_sets_are_disjoint_real_and_hold_no_test_sentence(data_root, sets):
    from sentkit.datasets.root import data_file
    from sentkit.datasets.stsb import read_stsb

    calibration, check = sets
    assert 250 <= len(calibration.sentences) <= 300 and 250 <= len(check.sentences) <= 300
    assert not set(calibration.sentences) & set(check.sentences)
    assert sum(calibration.sources.values()) == len(calibration.sentences)
    assert any(k.startswith("XNLI dev-zh, premise") for k in calibration.sources)
    test = read_stsb(data_file("sts", "STSBenchmark", "sts-test.csv", root=data_root))
    held_out = {*test.sent1, *test.sent2}
    for path in data_file("sts", "STS17-test", root=data_root).glob("STS.input.*"):
        for line in path.read_text(encoding="utf-8").splitlines():
            held_out.update(part.strip() for part in line.split("\t")[:2])
    for side in ("deu", "eng"):
        held_out.update(
            data_file("bitext", "tatoeba", f"tatoeba.deu-eng.{side}", root=data_root).read_text().splitlines()
        )
    assert not held_out & {*calibration.sentences, *check.sentences}
    # STS-B repeats sentences across splits: without the test-set filter the check set would hold some
    assert any(
        s in held_out
        for s in read_stsb(data_file("sts", "STSBenchmark", "sts-dev.csv", root=data_root)).sent2
    )


def test_an_english_model_is_calibrated_and_checked_on_english(data_root):
    calibration = calibration_set(("en",), root=data_root)
    assert list(calibration.sources) == ["STS-B train, sentence 1, one unique row in 17"]
    assert len(calibration.sentences) == 300
    record = check_set(("en",), root=data_root).record()
    assert record["sentences"] == 300 and len(record["sha256"]) == 64


def test_calibration_without_the_benchmark_data_names_the_missing_file(tmp_path):
    from sentkit.errors import MissingDataError

    with pytest.raises(
        MissingDataError, match=r"STSBenchmark/sts-(test|train)\.csv: file not found .*SENTKIT_DATA"
    ):
        calibration_set(None, root=tmp_path)


# ---- the check -------------------------------------------------------------------------------------------


class Fixed:
    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def encode(self, sentences, batch_size: int = 32):
        return self.vectors[: len(sentences)]


def test_check_passes_close_vectors_and_refuses_drifting_ones():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(50, 16)).astype(np.float32)
    sentences = SentenceSet(tuple(f"s{i}" for i in range(50)), {"made up": 50})
    close = ref + 0.01 * rng.normal(size=ref.shape).astype(np.float32)
    record = check_export(Fixed(ref), Fixed(close), sentences, "close")
    assert MIN_MEAN_COSINE <= record["cosine"]["min"] <= record["cosine"]["mean"] < 1.0
    assert record["sentences"]["sentences"] == 50
    far = ref + 0.3 * rng.normal(size=ref.shape).astype(np.float32)  # mean cosine about 0.96
    assert 0.9 < agreement(ref, far)["mean"] < MIN_MEAN_COSINE
    with pytest.raises(
        ExportCheckFailed, match=r"^far: mean cosine to the fp32 encoder 0\.9\d+ .* below 0\.99"
    ):
        check_export(Fixed(ref), Fixed(far), sentences, "far")


def test_an_export_that_drifts_is_refused_and_nothing_is_written(tiny, sets, tmp_path, monkeypatch):
    _, check = sets

    def noisy(self, sentences, batch_size=64, show_progress=False):
        return np.random.default_rng(1).normal(size=(len(sentences), self.dim)).astype(np.float32)

    monkeypatch.setattr(OnnxEncoder, "encode", noisy)
    with pytest.raises(ExportCheckFailed, match="tiny-bert as fp32 ONNX: mean cosine"):
        export_onnx(tiny, tmp_path / "out", check=check)
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its temporary copy


# ---- onnxruntime static int8 -------------------------------------------------------------------------------


def test_static_int8_quantizes_the_weight_matmuls_and_keeps_the_residual_stream_fp32(tiny, sets, tmp_path):
    import onnx

    calibration, check = sets
    folder = export_onnx(
        tiny, tmp_path / "static", int8=StaticInt8Options(), calibration=calibration, check=check
    )
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["int8"]["method"] == "onnxruntime quantize_static (QDQ)"
    assert meta["int8"]["reduce_range"] is True and meta["int8"]["calibration"] == calibration.record()
    assert meta["check"]["cosine"]["mean"] >= 0.99 and meta["check"]["sentences"] == check.record()
    assert "static quantization" in (folder / "README.md").read_text()

    graph = onnx.load(str(folder / "model.onnx")).graph
    producer = {out: node for node in graph.node for out in node.output}
    dequantized = {node.output[0] for node in graph.node if node.op_type == "DequantizeLinear"}
    quantized = {n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in dequantized}
    matmuls = {n.name for n in graph.node if n.op_type == "MatMul"}
    # 2 layers x (Q, K, V, attention output, FFN in, FFN out); the 4 attention products stay fp32
    assert len(quantized) == 12 and len(matmuls) == 16
    assert all(re.search(r"(query|key|value|dense)/MatMul$", name) for name in quantized)
    for node in graph.node:  # nothing else reads a dequantized activation: the residual Adds read fp32
        if node.op_type != "MatMul" and node.op_type != "DequantizeLinear":
            assert not [
                i
                for i in node.input
                if i in dequantized and producer[i].input[0] not in {init.name for init in graph.initializer}
            ], node.name
    got = OnnxEncoder(folder, threads=1).encode(SENTENCES)
    assert cosines(got, tiny.encode(SENTENCES)).min() >= 0.99


def test_static_int8_needs_calibration_sentences(tiny, tmp_path):
    with pytest.raises(ValueError, match="static int8 needs calibration sentences"):
        export_onnx(tiny, tmp_path / "out", int8=StaticInt8Options())


# ---- the cache and the int8 choice -----------------------------------------------------------------------


@pytest.mark.slow
def test_int8_static_suffix_exports_once_checked_and_int8_records_its_choice(
    tmp_path, monkeypatch, data_root
):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SENTKIT_DATA", str(data_root))
    encoder = make_tiny_encoder(pooling="mean")
    source = encoder.save(tmp_path / "tiny")
    static = load_encoder(f"{source}@int8-static")
    assert static.name == f"{source}@int8-static" and static.folder.name.endswith("-int8-static")
    assert (
        static.runtime_info["variant"] == "int8-static"
        and static.runtime_info["check"]["cosine"]["mean"] >= 0.99
    )
    assert static.runtime_info["int8"]["calibration"]["sentences"] >= 250
    assert cosines(static.encode(SENTENCES), encoder.encode(SENTENCES)).min() >= 0.99

    chosen = load_encoder(f"{source}@int8")
    info = chosen.runtime_info
    assert info["variant"] == "int8-dynamic" and info["int8_choice"]["variant"] == "int8-dynamic"
    assert chosen.folder.name.endswith("-int8")  # the folder the dynamic export always had
    assert info["int8"]["method"] == "onnxruntime quantize_dynamic"


def test_host_kind_and_the_measured_or_pending_choice():
    assert host_kind(["avx2", "fma"]) == "avx2"
    assert host_kind(["avx2", "avx512f", "avx512_vnni"]) == "avx512_vnni"
    assert host_kind(["avx2", "avx_vnni"]) == "avx_vnni"
    assert host_kind(["avx2", "avx512_vnni", "amx_tile", "amx_int8"]) == "amx"
    assert host_kind(None) == host_kind([]) == "other"
    for flags in (["avx512_vnni"], ["avx_vnni"], None):
        choice = choose_int8(flags or [])
        assert choice["variant"] == "int8-dynamic" and "until the other paths are measured" in choice["why"]
    choice = choose_int8(["avx512_vnni", "amx_int8"])  # measured on an AMX host: OpenVINO int8 was fastest
    if all(importlib.util.find_spec(m) for m in ("openvino", "nncf")):
        assert choice["variant"] == "openvino-int8" and choice["why"].startswith(
            "fastest int8 path on 2 idle"
        )
    else:
        assert choice["variant"] == "int8-dynamic" and choice["why"].startswith("openvino-int8 needs ")
    choice = choose_int8(["avx2", "fma"])  # measured: the dynamic path won on an idle AVX2 host
    assert choice["variant"] == "int8-dynamic" and choice["why"].startswith(
        "fastest int8 path on an idle AVX2"
    )
    # the rule cites the docs section with the measurements; the figures live there, not in the code
    assert choice["why"].endswith("(docs/performance.md#choosing-the-int8-path)")


def test_a_chosen_path_whose_package_is_missing_falls_back_to_dynamic(monkeypatch):
    import sentkit.encoders.int8_choice as int8_choice

    monkeypatch.setitem(INT8_PATH, "avx2", "openvino-int8")
    real = importlib.util.find_spec
    monkeypatch.setattr(int8_choice.importlib.util, "find_spec", lambda m: None if m == "nncf" else real(m))
    choice = choose_int8(["avx2"])
    assert choice["variant"] == "int8-dynamic" and choice["why"].startswith("openvino-int8 needs ")
    assert choice["why"].endswith("nncf (not installed)")


def test_without_the_data_a_calibrated_variant_is_one_line_and_others_record_no_check(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SENTKIT_DATA", str(tmp_path / "no-data"))
    source = make_tiny_encoder(pooling="mean").save(tmp_path / "tiny")
    (tmp_path / "in.txt").write_text("one\ntwo\n", encoding="utf-8")
    args = ["encode", "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "v.npy"), "--model"]
    capsys.readouterr()  # the save's progress bar
    assert main([*args, f"{source}@int8-static"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentkit: error: ") and "file not found" in err and "SENTKIT_DATA" in err
    assert "\n" not in err and not (tmp_path / "v.npy").exists()
    assert main([*args, f"{source}@onnx"]) == 0
    assert "sentkit: warning:" in capsys.readouterr().err
    meta = json.loads(next((tmp_path / "cache" / "onnx").glob("*-onnx")).joinpath(META_FILE).read_text())
    assert meta["check"]["skipped"].startswith("not checked: no held-out sentences")


# ---- OpenVINO ----------------------------------------------------------------------------------------------


def test_missing_openvino_is_one_line_naming_the_extra(monkeypatch):
    import sentkit.encoders.openvino.encoder as ov_encoder

    monkeypatch.setattr(ov_encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        ImportError, match=r"^OpenVINO export needs openvino and nncf: pip install 'sentkit\[openvino\]'"
    ):
        ov_encoder.require_openvino(int8=True)


@needs_openvino
def test_openvino_fp32_matches_torch_and_its_readme_snippet_runs_with_openvino_alone(tiny, sets, tmp_path):
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder
    from sentkit.encoders.openvino.export import export_openvino

    _, check = sets
    folder = export_openvino(tiny, tmp_path / "ov", check=check, source="tiny-bert")
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["runtime"] == "openvino" and meta["inference_precision"] == "f32" and meta["int8"] is None
    assert meta["check"]["cosine"]["min"] >= 0.9999
    encoder = load_encoder(folder)  # an OpenVINO folder loads by path too
    assert isinstance(encoder, OpenVinoEncoder) and encoder.runtime_info["runtime"] == "openvino"
    got, want = encoder.encode(SENTENCES, batch_size=4), tiny.encode(SENTENCES, batch_size=4)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert encoder.truncated == 1

    snippet = re.search(r"```python\n(.*?)```", (folder / "README.md").read_text(), re.S).group(1)
    check_imports = (
        "\nnp.save('snippet.npy', vectors)\nimport sys\n"
        "assert not {'torch', 'sentkit', 'transformers', 'onnxruntime'} & set(sys.modules), 'imported too much'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", snippet + check_imports],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shown = eval(re.search(r"sentences = (\[.*?\])", snippet).group(1))
    assert cosines(np.load(folder / "snippet.npy"), tiny.encode(shown)).min() >= 0.9999


@needs_openvino
def test_openvino_streams_and_snippet_settings_return_the_same_vectors_in_input_order(tiny, tmp_path):
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder
    from sentkit.encoders.openvino.export import export_openvino

    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    # 11 batches of 2, sorted by length: with 2 requests in flight, a batch written to the wrong rows or
    # collected before it finished shows up as a wrong vector
    sentences = SENTENCES + [f"sentence number {i} " * (i % 5 + 1) for i in range(16)]
    want = tiny.encode(sentences, batch_size=2)
    for streams, snippets in ((1, True), (2, False), (2, True)):
        encoder = OpenVinoEncoder(folder, threads=2, streams=streams, snippets=snippets)
        info = encoder.runtime_info["openvino"]
        assert info["streams"] == streams and info["infer_requests"] == streams
        assert info["snippets"] is snippets and info["snippets_wide"] is snippets
        assert info["inference_precision"] == "f32"
        np.testing.assert_allclose(encoder.encode(sentences, batch_size=2), want, atol=1e-5)
        assert len(encoder.compiled) == 1  # one setting for every width: one compiled copy
    assert OpenVinoEncoder(folder, threads=1, streams=2).runtime_info["openvino"]["streams"] == 1
    with pytest.raises(ValueError, match="streams must be >= 1"):
        OpenVinoEncoder(folder, threads=2, streams=0)


@needs_openvino
def test_on_amx_hosts_narrow_batches_run_without_fused_attention_and_wide_ones_with_it(
    tiny, tmp_path, monkeypatch
):
    import sentkit.provenance as provenance
    from sentkit.encoders.openvino.encoder import NARROW_MAX_WIDTH, OpenVinoEncoder
    from sentkit.encoders.openvino.export import export_openvino

    tiny = make_tiny_encoder(pooling="mean").eval()
    tiny.max_length = 128  # the fixture's 64 would cut every batch to a narrow one
    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    monkeypatch.setattr(provenance, "this_cpu_flags", lambda: ("avx2", "avx512_vnni", "amx_int8"))
    encoder = OpenVinoEncoder(folder, threads=2)
    info = encoder.runtime_info["openvino"]
    assert (info["snippets"], info["snippets_wide"], info["narrow_max_width"]) == (
        False,
        True,
        NARROW_MAX_WIDTH,
    )
    short = [s for s in SENTENCES if not s.startswith("word")]
    np.testing.assert_allclose(encoder.encode(short, batch_size=2), tiny.encode(short), atol=1e-5)
    assert list(encoder.compiled) == [False]  # no batch wider than 64 tokens yet: no second copy
    # "word " * 100 is about 100 tokens: its batch runs on a copy with the fused kernels, the rest as before
    mixed = SENTENCES + short
    np.testing.assert_allclose(encoder.encode(mixed, batch_size=2), tiny.encode(mixed), atol=1e-5)
    assert sorted(encoder.compiled) == [False, True]
    config = encoder.compile_config(False)
    assert config["SNIPPETS_MODE"] == "DISABLE" and config["NUM_STREAMS"] == 1
    assert "SNIPPETS_MODE" not in encoder.compile_config(True)


@needs_openvino
def test_an_openvino_that_refuses_the_fused_attention_setting_runs_its_default(tiny, tmp_path, monkeypatch):
    import openvino as ov

    from sentkit.encoders.openvino.encoder import OpenVinoEncoder
    from sentkit.encoders.openvino.export import export_openvino

    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    real, seen = ov.Core.compile_model, []

    def strict(self, model, device, config):  # as an OpenVINO without the setting answers
        seen.append(dict(config))
        if "SNIPPETS_MODE" in config:
            raise RuntimeError(
                "Exception from src/plugins/intel_cpu/src/config.cpp:505:\nNotFound: "
                "Unsupported property SNIPPETS_MODE by CPU plugin."
            )
        return real(self, model, device, config)

    monkeypatch.setattr(ov.Core, "compile_model", strict)
    encoder = OpenVinoEncoder(folder, threads=2, snippets=False)
    assert [c.get("SNIPPETS_MODE") for c in seen] == ["DISABLE", None]
    assert encoder.runtime_info["openvino"]["snippets"] is True
    np.testing.assert_allclose(encoder.encode(SENTENCES), tiny.encode(SENTENCES), atol=1e-5)
    assert list(encoder.compiled) == [True]  # the wide batch reuses the one copy


def test_openvino_fused_attention_kernels_are_off_on_amx_hosts_only():
    from sentkit.encoders.openvino.encoder import snippets_on

    assert snippets_on(["avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_int8", "amx_bf16"]) is False
    assert snippets_on(["avx2", "avx512f", "avx512_vnni"]) is True
    assert snippets_on(["avx2"]) is True and snippets_on(None) is True  # tests see an AVX2 host (conftest.py)


def test_openvino_int8_is_quantized_with_symmetric_activations_on_amx_hosts_only():
    from sentkit.encoders.export_cache import _options
    from sentkit.encoders.openvino.export import host_int8_options

    assert host_int8_options(["avx2", "avx512_vnni", "amx_tile", "amx_int8"]).preset == "performance"
    assert host_int8_options(["avx2", "avx512f", "avx512_vnni"]).preset == "mixed"
    assert host_int8_options(None).preset == "mixed"  # tests see an AVX2 host (conftest.py)
    assert _options("openvino-int8").preset == "mixed"  # and so does the cache key of `@openvino-int8`


@pytest.mark.slow
@needs_nncf
def test_openvino_int8_suffix_is_calibrated_checked_and_cached(tmp_path, monkeypatch, data_root):
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SENTKIT_DATA", str(data_root))
    encoder = make_tiny_encoder(pooling="mean")
    source = encoder.save(tmp_path / "tiny")
    int8 = load_encoder(f"{source}@openvino-int8")
    meta = int8.meta
    assert meta["int8"]["method"] == "nncf quantize (static)" and meta["int8"]["overflow_fix"] == "enable"
    assert meta["int8"]["calibration"]["sentences"] >= 250 and meta["check"]["cosine"]["mean"] >= 0.99
    assert meta["versions"]["openvino"] != "not installed" and meta["versions"]["nncf"] != "not installed"
    assert cosines(int8.encode(SENTENCES), encoder.encode(SENTENCES)).min() >= 0.99
    stamp = (int8.folder / "sentkit_cache_key.json").read_text()
    (int8.folder / "model.bin").write_bytes(b"truncated")  # a damaged weights file is exported again
    again = load_encoder(f"{source}@openvino-int8")
    assert (again.folder / "sentkit_cache_key.json").read_text() != stamp
    assert cosines(again.encode(SENTENCES), encoder.encode(SENTENCES)).min() >= 0.99
    # on an AMX host `@int8` is this export; without the benchmark data it is still this export once cached,
    # and the dynamic one (saying why) where it would have to be calibrated
    import sentkit.provenance as provenance

    monkeypatch.setattr(provenance, "this_cpu_flags", lambda: ("avx2", "avx512_vnni", "amx_int8"))
    chosen = load_encoder(f"{source}@int8")
    assert chosen.folder == again.folder and chosen.runtime_info["variant"] == "openvino-int8"
    # exported again there: AMX hosts quantize activations symmetrically, the others as NNCF's "mixed"
    assert again.meta["int8"]["preset"] == "mixed" and chosen.meta["int8"]["preset"] == "performance"
    assert chosen.runtime_info["int8_choice"]["host_kind"] == "amx"
    monkeypatch.setenv("SENTKIT_DATA", str(tmp_path / "no-data"))
    cached = load_encoder(f"{source}@int8")
    assert cached.folder == again.folder and cached.runtime_info["variant"] == "openvino-int8"
    monkeypatch.setenv("SENTKIT_CACHE", str(tmp_path / "empty-cache"))
    dynamic = load_encoder(f"{source}@int8")
    assert dynamic.runtime_info["variant"] == "int8-dynamic" and dynamic.folder.name.endswith("-int8")
    assert (
        "calibrates on the benchmark data, which is not there" in dynamic.runtime_info["int8_choice"]["why"]
    )
