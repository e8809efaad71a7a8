"""The evaluation-speed bench scripts on small inputs: they run, their numbers add up, mining is sane."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_planted_bitext_is_one_to_one_and_mined_back(tmp_path):
    mining = _bench("bitext_mining")
    x, y, gold = mining.planted_bitext(1500, 64, paired=0.2, noise=1.0, seed=0, chunk=400)
    planted = gold[gold >= 0]
    assert x.shape == y.shape == (1500, 64) and len(planted) == 300 and len(set(planted.tolist())) == 300
    out = tmp_path / "mining.json"
    result = mining.main(["--n", "1500", "--paired", "0.2", "--threads", "1", "--out", str(out)])
    cpu = result["runs"]["cpu"]
    assert cpu["f1"] > 90  # planted translations (cosine ~0.75 vs ~0.2) are found back by margin mining
    assert cpu["cpu_s"] >= 0 and cpu["rss_peak_mib"] > 0
    assert ("gpu" in result["runs"]) == (result["gpus"] > 0)
    assert json.loads(out.read_text())["planted_pairs"] == 300


def test_profile_task_splits_encode_and_scoring(data_root, tiny_encoder):
    from argparse import Namespace

    from sentkit.evaluate import _CachingEncoder

    profile = _bench("eval_profile")
    counted = profile.CpuTimedEncoder(tiny_encoder)
    timed = _CachingEncoder(counted)
    args = Namespace(seed=0, batch_size=64, data_root=data_root, langs=["ko"], kmeans="sklearn+faiss")
    row = profile.profile_task("mewsc16-100", timed, counted, args)
    assert row["sentences_encoded"] == 100 and row["class"] == "ClusteringTask"
    assert row["encode_s"] > 0
    assert row["scoring_s"] + 0.05 >= row["kmeans_s"] > 0  # k-means is part of scoring (each rounded)
    # the three parts cover the wall time (up to rounding and a descheduled moment between them)
    assert row["load_s"] + row["encode_s"] + row["scoring_s"] == pytest.approx(row["wall_s"], abs=0.5)
    again = profile.profile_task("knn-mewsc16-100", timed, counted, args)
    assert again["sentences_encoded"] == 0  # the same 100 rows come from the run-wide cache


def test_int8_bench_flops_and_interleaved_rounds():
    bench = _bench("int8_speed")
    # one layer, h = 2, f = 4, a 3-token sentence: 2*3*(4*4 + 2*2*4) + 4*9*2 = 192 + 72 = 264
    assert bench.flops_per_sentence(np.array([3]), layers=1, hidden=2, intermediate=4) == 264.0
    # MiniLM's shapes at 14 tokens: 6 * (28 * 1,769,472 + 4 * 196 * 384) = 299,077,632
    assert bench.flops_per_sentence(np.array([14]), 6, 384, 1536) == 299_077_632.0

    calls, probes = [], []

    def runner(name):
        def run(sentences, timed=False):
            calls.append(name)
            vectors = np.full((len(sentences), 2), 1.0, dtype=np.float32)
            return (0.5, 0.5, vectors) if timed else vectors

        return run

    timings, vectors = bench.interleaved(
        {"a": runner("a"), "b": runner("b")}, ["x"] * 10, 3, 4, between_rounds=lambda: probes.append(1)
    )
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-up, then rounds in alternating order
    assert len(probes) == 3 and timings["a"]["best_sent_per_s"] == timings["a"]["median_sent_per_s"] == 20.0
    assert vectors["b"].shape == (10, 2)


def test_onnx_op_profile_sums_kernel_time_per_operator(tmp_path):
    pytest.importorskip("onnxruntime")
    profile = _bench("onnx_op_profile")
    trace = [
        {"cat": "Session", "name": "model_run", "dur": 999},
        {"cat": "Node", "name": "/l0/MatMul_kernel_time", "dur": 30, "args": {"op_name": "MatMul"}},
        {"cat": "Node", "name": "/l0/MatMul_fence_before", "dur": 5, "args": {"op_name": "MatMul"}},
        {"cat": "Node", "name": "/l1/MatMul_kernel_time", "dur": 40, "args": {"op_name": "MatMul"}},
        {"cat": "Node", "name": "/l0/Softmax_kernel_time", "dur": 10, "args": {"op_name": "Softmax"}},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    assert profile.kernel_time_by_op(str(path)) == {"MatMul": 70, "Softmax": 10}  # largest first, fences out


def test_mine_scale_runs_every_stage_on_a_small_size(tmp_path):
    bench = _bench("mine_scale")
    out = tmp_path / "mine_scale.json"
    argv = [
        "--sizes",
        "2000",
        "--dim",
        "32",
        "--noise",
        "0.5",
        "--shard-size",
        "500",
        "--recall-queries",
        "200",
    ]
    result = bench.main(argv + ["--threads", "1", "--out", str(out)])
    run = result["runs"][0]
    assert list(run["stages"]) == [
        "generate",
        "write_shards",
        "knn_forward",
        "knn_backward",
        "margin",
        "retrieve_max",
        "write_tsv",
        "recall_sample",
    ]
    assert run["index"]["forward"]["index"] == "flat" and run["recall_ivfpq_vs_exact"]["queries"] == 200
    recall = run["recall_ivfpq_vs_exact"]
    assert recall["planted_found_exact"] == 1.0  # at this noise a translation is always among its 4 exact NN
    assert 0.5 < recall["planted_found_ivfpq"] <= 1.0 and 0 < recall["recall_at_4"] <= 1.0
    assert run["f1"] > 80 and run["planted_pairs"] == 200
    assert json.loads(out.read_text())["runs"][0]["n"] == 2000


def test_encode_scale_corpus_cycles_real_sentences_and_measures_a_process_tree(tmp_path):
    bench = _bench("encode_scale")
    corpus = bench.write_corpus(tmp_path / "c.txt", 7, ["a", "b", "c"])
    assert corpus.read_text().splitlines() == ["a", "b", "c", "a", "b", "c", "a"]
    run = bench.measured([sys.executable, "-c", "import time; x = bytearray(200 * 2**20); time.sleep(0.5)"])
    assert run["peak_tree_rss_mib"] > 150 and run["wall_s"] >= 0.5
