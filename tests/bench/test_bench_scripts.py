"""The evaluation-speed bench scripts on small inputs: they run, their numbers add up, mining is sane."""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sentkit.provenance import cpu_flags, machine_info

BENCH = Path(__file__).resolve().parents[2] / "bench"
RESEARCH = {path.stem for path in (BENCH / "research").glob("*.py")}


def _bench(name: str):
    """A benchmark's module (`bench.NAME`, or `bench.research.NAME` for a research probe), imported as
    `python -m` runs it from the repository root."""
    return importlib.import_module(f"bench.research.{name}" if name in RESEARCH else f"bench.{name}")


def test_planted_bitext_is_one_to_one_and_mined_back(tmp_path):
    mining = _bench("bitext_mining")
    x, y, gold = mining.planted_bitext(1500, 64, paired=0.2, noise=1.0, seed=0, chunk=400)
    planted = gold[gold >= 0]
    assert x.shape == y.shape == (1500, 64) and len(planted) == 300 and len(set(planted.tolist())) == 300
    out = tmp_path / "mining.json"
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB -> MiB
    wall, cpu_time = time.perf_counter(), time.process_time()
    result = mining.main(["--n", "1500", "--paired", "0.2", "--threads", "1", "--out", str(out)])
    wall, cpu_time = time.perf_counter() - wall, time.process_time() - cpu_time
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu = result["runs"]["cpu"]
    assert cpu["f1"] > 90  # planted translations (cosine ~0.75 vs ~0.2) are found back by margin mining
    # the mining run's numbers lie inside what this process measured around the whole script
    assert rss_before - 0.05 <= cpu["rss_peak_mib"] <= rss_after + 0.05  # the high-water mark, in MiB
    assert cpu["wall_s"] <= wall + 0.005 and cpu["cpu_s"] <= cpu_time + 0.005
    assert ("gpu" in result["runs"]) == (result["gpus"] > 0)
    assert result["threads"] == 1 and result["machine"] == machine_info()
    assert result["machine"]["cpus"] == os.cpu_count()
    assert result["versions"]["numpy"] == np.__version__ and "faiss" in result["versions"]
    assert json.loads(out.read_text())["planted_pairs"] == 300


class _FakeClock:
    """Stands in for a bench module's `time`: the clocks move only when a test says so."""

    def __init__(self) -> None:
        self.wall = self.cpu = 100.0

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.cpu

    def advance(self, wall: float, cpu: float) -> None:
        self.wall += wall
        self.cpu += cpu

    def strftime(self, fmt: str) -> str:
        return time.strftime(fmt)


def test_mining_times_and_memory_are_the_measured_differences(monkeypatch):
    """With clocks and getrusage scripted: wall 2.5 s and CPU 4.25 s spent in mine_pairs, the RSS
    high-water mark 200 MiB before and 500 MiB after (getrusage reports KiB on Linux)."""
    from types import SimpleNamespace

    mining = _bench("bitext_mining")
    clock = _FakeClock()
    peaks = iter([200 * 1024, 500 * 1024, 500 * 1024])  # before, after, and after again for the increase
    monkeypatch.setattr(mining, "time", clock)
    monkeypatch.setattr(
        mining,
        "resource",
        SimpleNamespace(RUSAGE_SELF=0, getrusage=lambda who: SimpleNamespace(ru_maxrss=next(peaks))),
    )
    real_mine = mining.mine_pairs

    def mine_pairs(*args, **kwargs):
        clock.advance(wall=2.5, cpu=4.25)
        return real_mine(*args, **kwargs)

    monkeypatch.setattr(mining, "mine_pairs", mine_pairs)
    x, y, gold = mining.planted_bitext(400, 16, paired=0.5, noise=0.3, seed=0)
    run = mining.mine_and_score(x, y, gold)
    assert (run["wall_s"], run["cpu_s"]) == (2.5, 4.25)
    assert (run["rss_peak_mib"], run["rss_peak_increase_mib"]) == (500.0, 300.0)


def test_speed_rows_divide_sentences_by_seconds():
    from bench.common import speed_rows

    rows = speed_rows({"a": [2.0, 0.5, 1.0], "b": [4.0, 5.0]}, {"a": [3.0, 1.0, 2.0], "b": [4.0, 4.0]}, n=10)
    assert rows["a"] == {
        "best_sent_per_s": 20.0,  # 10 sentences in the fastest 0.5 s
        "median_sent_per_s": 10.0,  # median 1.0 s
        "seconds": [2.0, 0.5, 1.0],
        "cpu_seconds": [3.0, 1.0, 2.0],
    }
    assert (rows["b"]["best_sent_per_s"], rows["b"]["median_sent_per_s"]) == (2.5, 10 / 4.5)


def test_encode_speed_scores_stsb_from_pair_rows_and_refuses_cpu_fp16():
    bench = _bench("encode_speed")
    gold = np.array([5.0, 1.0, 3.0])
    # pair i is rows 2i and 2i+1: cosines 1.0, 0.0 and 0.6, so the ranking follows the gold exactly
    vectors = np.array([[1, 0], [2, 0], [1, 0], [0, 3], [1, 0], [0.6, 0.8]], dtype=np.float32)
    assert bench.stsb_spearman(vectors, gold) == pytest.approx(100.0)
    # pairs 0, 2, 1: cosines 1.0, 0.6, 0.0 (ranks 3, 2, 1) against gold ranks 3, 1, 2: 1 - 6 * 2 / 24
    assert bench.stsb_spearman(vectors[[0, 1, 4, 5, 2, 3]], gold) == pytest.approx(50.0)
    assert [bench.runner_name("sentkit", p) for p in ("fp32", "bf16")] == ["sentkit", "sentkit bf16"]
    with pytest.raises(SystemExit, match="fp16 needs --device cuda"):
        bench.main(["--precisions", "fp32,fp16"])
    with pytest.raises(SystemExit, match="expected fp32, fp16 or bf16"):
        bench.main(["--precisions", "fp8"])


def test_profile_task_splits_encode_and_scoring(data_root, tiny_encoder):
    from argparse import Namespace

    from sentkit.evaluate import _CachingEncoder

    profile = _bench("eval_profile")
    counted = profile.CpuTimedEncoder(tiny_encoder)
    timed = _CachingEncoder(counted)
    args = Namespace(seed=0, batch_size=64, data_root=data_root, langs=["ko"], kmeans="sklearn+faiss")
    before = counted.wall, counted.cpu
    row = profile.profile_task("mewsc16-100", timed, counted, args)
    assert row["sentences_encoded"] == 100 and row["class"] == "ClusteringTask"
    # encode_s is the wall time the counting encoder measured for this task's calls
    assert (row["encode_s"], row["encode_cpu_s"]) == (
        round(counted.wall - before[0], 2),
        round(counted.cpu - before[1], 2),
    )
    assert row["scoring_s"] + 0.05 >= row["kmeans_s"] > 0  # k-means is part of scoring (each rounded)
    # the three parts cover the wall time (up to rounding and a descheduled moment between them)
    assert row["load_s"] + row["encode_s"] + row["scoring_s"] == pytest.approx(row["wall_s"], abs=0.5)
    again = profile.profile_task("knn-mewsc16-100", timed, counted, args)
    assert again["sentences_encoded"] == 0  # the same 100 rows come from the run-wide cache


def test_profile_splits_scripted_time_exactly(data_root, monkeypatch):
    """Clocks that move only inside the model's encode (0.25 s wall, 0.5 s CPU a call): loading and
    scoring take 0, encoding all of it; the second task's rows come from the run-wide cache (0 s)."""
    from argparse import Namespace

    from sentkit.evaluate import _CachingEncoder

    profile = _bench("eval_profile")
    clock = _FakeClock()
    monkeypatch.setattr(profile, "time", clock)

    class ScriptedEncoder(profile.RandomEncoder):
        def encode(self, sentences, batch_size=64, show_progress=False):
            clock.advance(wall=0.25, cpu=0.5)
            return super().encode(sentences, batch_size, show_progress)

    counted = profile.CpuTimedEncoder(ScriptedEncoder(16))
    timed = _CachingEncoder(counted)
    args = Namespace(seed=0, batch_size=64, data_root=data_root, langs=["ko"], kmeans="faiss")
    row = profile.profile_task("mewsc16-100", timed, counted, args)
    assert row["sentences_encoded"] == 100
    times = ("load_s", "encode_s", "encode_cpu_s", "scoring_s", "wall_s", "cpu_s")
    assert [row[k] for k in times] == [0.0, 0.25, 0.5, 0.0, 0.25, 0.5]
    again = profile.profile_task("knn-mewsc16-100", timed, counted, args)
    assert again["sentences_encoded"] == 0 and again["sentences_requested"] == 100
    assert [again[k] for k in times] == [0.0] * 6


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


def test_int8_bench_ceilings_per_arithmetic_and_ratios_to_the_fastest_anchor():
    bench = _bench("int8_speed")
    ceilings = _bench("gemm_ceilings")
    # one layer, h = 2, f = 4, 3 tokens: weights 2*3*(16 + 16) = 192, attention 4*9*2 = 72 (sum: 264 above)
    assert bench.flops_split(np.array([3]), 1, 2, 4) == (192.0, 72.0)
    # weights at 192 GOP/s take 1 ns, attention at 72 GFLOP/s takes 1 ns: 2 ns a sentence
    assert ceilings.ceiling_sent_per_s(192.0, 72.0, 192.0, 72.0) == pytest.approx(5e8)
    probes = [
        {"int8_torch": {"layer_mix": 3.0}, "int8_onnxruntime": {"skipped": "x"}},
        {"int8_onnxruntime": {"layer_mix": 5.0}},
    ]
    assert ceilings.best_rate(probes, ("int8_torch", "int8_onnxruntime")) == 5.0
    assert ceilings.best_rate(probes, ("bf16_torch",)) is None
    labels = ("sentkit int8-static", "st openvino-int8", "sentkit openvino fp32", "st torch bf16")
    assert [bench.arithmetic_of(r) for r in labels] == ["int8", "int8", "fp32", "bf16"]
    # bf16 runners: automatic only where the CPU multiplies bfloat16 natively
    assert [bench.wants_bf16("auto", f) for f in (["avx2", "fma"], ["avx512_bf16"], ["amx_bf16"])] == [
        False,
        True,
        True,
    ]
    assert bench.wants_bf16("on", ["avx2"]) and not bench.wants_bf16("off", ["amx_bf16"])
    timings = {
        "sentkit int8": {"best_sent_per_s": 300.0, "median_sent_per_s": 240.0, "seconds": [1.0, 2.0, 4.0]},
        "st onnx-int8": {"best_sent_per_s": 150.0, "median_sent_per_s": 100.0, "seconds": [3.0, 3.0, 2.0]},
        "st openvino-int8": {"best_sent_per_s": 200.0, "median_sent_per_s": 80.0},
    }
    ratios = bench.vs_fastest_anchor(timings)
    assert ratios["fastest_anchor"] == {"best": "st openvino-int8", "median": "st onnx-int8"}
    assert ratios["speed_vs_fastest_anchor"]["sentkit int8"] == 1.5
    assert ratios["median_speed_vs_fastest_anchor"]["sentkit int8"] == 2.4
    # round by round against the anchor fastest by median: 3/1, 3/2, 2/4
    rounds = ratios["round_speed_vs_fastest_anchor"]["sentkit int8"]
    assert rounds == {"each": [3.0, 1.5, 0.5], "min": 0.5, "max": 3.0}
    assert ratios["round_speed_vs_fastest_anchor"]["st openvino-int8"]["each"] == []
    assert bench.vs_fastest_anchor({"sentkit int8": timings["sentkit int8"]}) == {}


def test_gemm_probes_measure_int8_and_say_why_bf16_is_absent():
    ceilings = _bench("gemm_ceilings")
    probes = ceilings.probe_all(64, 32, 64, 1, ["avx2", "fma"])
    assert probes["int8_torch"]["layer_mix"] > 0 or "skipped" in probes["int8_torch"]
    if importlib.util.find_spec("onnxruntime") is not None:
        assert set(probes["int8_onnxruntime"]) == {"qkvo", "ffn_in", "ffn_out", "layer_mix"}
    assert probes["bf16_torch"] == {
        "skipped": "no avx512_bf16 / amx_bf16 on this CPU (torch would emulate bf16)"
    }


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
        "planted_sample",
    ]
    forward = run["index"]["forward"]
    assert forward["index"] == "flat" and forward["dtype"] in ("float32", "bfloat16")
    assert 0 < forward["fraction_of_bound"] and result["bound_gflops"] > 0
    assert set(result["matmul_gflops"]) == {"float32", "bfloat16"}
    assert list(result["cpu_flags"]) == list(cpu_flags())  # the one reading every per-CPU choice uses
    sample = run["planted_sample"]
    assert sample["queries"] == 200 and sample["recall_at_4"] == 1.0  # exact search against itself
    assert (
        sample["planted_found_exact"] == sample["planted_found_run"] == 1.0
    )  # at this noise: always in the 4-NN
    assert run["f1"] > 80 and run["planted_pairs"] == 200
    # an approximate index: mining measured its recall against exact search
    approx = bench.main(argv + ["--index", "IVF16,Flat", "--nprobe", "4", "--out", str(tmp_path / "a.json")])
    forward = approx["runs"][0]["index"]["forward"]
    assert forward["factory"] == "IVF16,Flat" and forward["recall"]["queries"] == 200
    assert 0.3 < forward["recall"]["recall_at_k"] <= 1.0 and "fraction_of_bound" not in forward
    assert json.loads(out.read_text())["runs"][0]["n"] == 2000


def test_encode_scale_corpus_cycles_real_sentences_and_measures_a_process_tree(tmp_path):
    bench = _bench("encode_scale")
    corpus = bench.write_corpus(tmp_path / "c.txt", 7, ["a", "b", "c"])
    assert corpus.read_text().splitlines() == ["a", "b", "c", "a", "b", "c", "a"]
    run = bench.measured([sys.executable, "-c", "import time; x = bytearray(200 * 2**20); time.sleep(0.5)"])
    assert run["peak_tree_rss_mib"] > 150 and run["wall_s"] >= 0.5


def test_mine_real_runs_every_set_and_index_on_the_small_cache(tmp_path):
    bench = _bench("mine_real")
    out = tmp_path / "mine_real.json"
    argv = ["--small", "--sets", "real,realistic-3000,structureless-2000", "--exact-max", "2500"]
    argv += ["--f1-sample", "200", "--queries", "200", "--index", "auto", "--index", "IVF16,Flat"]
    argv += ["--index", "IVF16,Flat"]  # asked twice: searched once
    result = bench.main(argv + ["--nprobe", "4", "--threads", "1", "--out", str(out)])
    runs = result["models"]["small-synthetic"]
    assert [s["set"] for s in runs] == ["real", "realistic-3000", "structureless-2000"]
    real, realistic, _ = runs
    assert not real["f1_is_estimate"] and realistic["f1_is_estimate"]
    assert real["runs"][0]["same_as_exact"]  # auto is exact at this size: the reference run is reused
    ivf = real["runs"][1]
    assert ivf["forward"]["factory"] == "IVF16,Flat" and ivf["forward"]["nprobe"] == 4
    assert 0.3 < ivf["sample_forward"]["recall_at_k"] <= 1.0 and ivf["sample_forward"]["queries"] == 200
    assert real["runs"][2]["same_as"] == "IVF16,Flat" and real["runs"][2]["f1"] == ivf["f1"]
    assert realistic["exact"]["f1"]["estimate"] and realistic["runs"][1]["f1"]["estimate"]
    assert realistic["planted_pairs"] == 300 and realistic["exact"]["f1"]["f1"] > 50
    st = realistic["st_recipe"]
    assert st["settings"]["nprobe"] == 3 and st["f1"]["estimate"]
    assert realistic["runs"][1]["st_f1_ratio"] == pytest.approx(
        st["f1"]["f1"] / realistic["runs"][1]["f1"]["f1"], abs=1e-3
    )
    assert list(result["cpu_flags"]) == list(cpu_flags()) and "faiss" in result["versions"]
    assert json.loads(out.read_text())["half"] == "A"


def test_mine_e2e_runs_the_mine_command_on_shard_folders_and_scores_its_tsv(tmp_path):
    bench = _bench("mine_e2e")
    result = bench.main(["--small", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "e2e.json")])
    planted = result["planted_pairs"]
    assert planted["planted"] == 300 and planted["pairs"] > 0
    best = planted["best"]
    assert best["f1"] == pytest.approx(
        200 * best["precision"] * best["recall"] / (100 * (best["precision"] + best["recall"])), abs=0.01
    )
    assert best["f1"] > 50  # the planted pairs are found: rows and texts ("x i", "y j") line up
    mine = result["mine"]
    assert mine["wall_s"] > 0 and mine["peak_rss_mib"] > 50
    assert mine["sidecar"]["index"]["forward"]["index"] == "flat"  # 3,000 x 3,000: auto searches exactly
    probe = result["host_speed"]["before"]  # the host's speed beside the run, to compare days
    assert probe["sgemm_gflops"] > 0 and 0 < probe["pq_fastscan_search_s"] and probe["sizes"]["rows"] == 5000
    # the TSV's rows are the set's rows: every mined pair is read back with its score
    score, src, tgt = bench.read_mined(tmp_path / "work" / "pairs.tsv")
    assert len(score) == planted["pairs"] and src.max() < 3000 and tgt.max() < 3000


def test_list_layouts_count_codes_scanned_and_lists_probed(tmp_path):
    bench = _bench("mine_lists")
    argv = ["--small", "--nlist", "40,76", "--spill", "0,1", "--shares", "54,108,216", "--queries", "400"]
    result = bench.main([*argv, "--out", str(tmp_path / "lists.json")])
    assert [r["nlist"] for r in result["layouts"]] == [40, 76] and result["partner_queries"] > 100
    cells = {(c["nlist"], c["spill_lambda"], c["nprobe"]): c for c in result["cells"]}
    assert set(cells) == {(40, lam, p) for lam in (None, 0.0, 1.0) for p in (1, 2, 4)} | {
        (76, None, p) for p in (2, 4, 8)
    }
    plain, spill = cells[40, None, 2], cells[40, 0.0, 2]
    # every key in two lists: the probed lists hold about twice the codes, and more neighbours are reached
    assert 1.6 < spill["codes_scanned_per_query"] / plain["codes_scanned_per_query"] < 2.4
    assert spill["neighbour_list_probed"] > plain["neighbour_list_probed"]
    # probing every list reaches every neighbour
    assert cells[40, None, 4]["codes_scanned_per_query"] < 3000
    every = bench.main(["--small", "--nlist", "40", "--shares", "2048", "--out", str(tmp_path / "all.json")])
    (top,) = every["cells"]
    assert top["nprobe"] == 40
    assert top["codes_scanned_per_query"] == 3000 and top["neighbour_list_probed"] == 1.0
    assert top["partner_list_probed"] == 1.0


def test_two_way_layouts_see_a_pair_from_the_other_side(tmp_path):
    bench = _bench("mine_lists")
    argv = ["--small", "--nlist", "40", "--shares", "52,1024,2048", "--two-way", "--queries", "400"]
    result = bench.main([*argv, "--out", str(tmp_path / "two.json")])
    one_way = {c["nprobe"]: c for c in result["cells"] if "two_way" not in c}
    two_way = {(c["two_way"], c["nprobe"]): c for c in result["cells"] if "two_way" in c}
    assert set(two_way) == {(layout, p) for layout in ("reverse", "group-union") for p in (1, 20, 40)}
    # a group is the rows nearest one list: with one list probed a row, its union is that list
    assert two_way["group-union", 1]["lists_per_group"] == 1.0
    for key in ("codes_scanned_per_query", "neighbour_list_probed", "partner_list_probed"):
        assert two_way["group-union", 1][key] == two_way["reverse", 1][key]
    # every list probed: 3,000 codes a row, every pair seen both ways
    for layout in ("reverse", "group-union"):
        full = two_way[layout, 40]
        assert full["codes_scanned_per_query"] == 3000 and full["neighbour_list_probed"] == 1.0
    # a union holds each member's own lists: it scans more and sees at least what the rows' own probes see
    half = two_way["group-union", 20], two_way["reverse", 20]
    assert half[0]["codes_scanned_per_query"] > half[1]["codes_scanned_per_query"]
    assert half[0]["neighbour_list_probed"] >= half[1]["neighbour_list_probed"]
    assert one_way[20]["neighbour_list_probed"] < 1.0


def test_fastscan_grid_recall_grows_with_probes_and_candidates(tmp_path):
    bench = _bench("mine_fastscan_grid")
    argv = ["--small", "--nprobe", "1,4,32", "--refine", "1,16", "--queries", "400"]
    result = bench.main([*argv, "--out", str(tmp_path / "grid.json")])
    assert [i["factory"] for i in result["indexes"]] == ["IVF76,PQ16x4fs"]  # the preset at 3,000 x 32 dims
    recall = {(c["nprobe"], c["refine"]): c["recall_at_k"] for c in result["grid"]}
    assert len(recall) == 6 and all(0 <= r <= 1 for r in recall.values())
    assert recall[1, 16] <= recall[4, 16] <= recall[32, 16]  # more lists probed, never fewer found
    assert recall[32, 1] < recall[32, 16]  # 4 candidates ranked by 4-bit codes miss what 64 re-scored keep
    assert recall[32, 16] > 0.85
    # where planted partners are lost, backward: kept in the top k => fetched => its list probed
    back = bench.main([*argv, "--direction", "backward", "--out", str(tmp_path / "back.json")])
    assert back["partner_in_exact_topk"] > 0.5 and back["settings"]["direction"] == "backward"
    cells = {(c["nprobe"], c["refine"]): c for c in back["grid"]}
    for c in cells.values():
        assert c["partner_queries"] > 100
        assert c["partner_in_topk"] <= c["partner_fetched"] <= c["partner_list_probed"]
    assert cells[1, 16]["partner_list_probed"] < cells[32, 16]["partner_list_probed"]
    # other code sizes and list counts, one index each, over the same queries
    sizes = bench.main([*argv, "--pq-m", "16,8", "--nlist", "40", "--out", str(tmp_path / "sizes.json")])
    assert [i["factory"] for i in sizes["indexes"]] == ["IVF40,PQ16x4fs", "IVF40,PQ8x4fs"]
    by = {(c["factory"], c["nprobe"], c["refine"]): c["recall_at_k"] for c in sizes["grid"]}
    assert len(by) == 12
    assert by["IVF40,PQ8x4fs", 32, 1] < by["IVF40,PQ16x4fs", 32, 1]  # coarser codes rank worse unrefined
    # any factory string, an HNSW coarse quantizer included
    other = bench.main(
        [*argv, "--factory", "IVF40,Flat;IVF40_HNSW16,Flat", "--out", str(tmp_path / "f.json")]
    )
    assert [i["factory"] for i in other["indexes"]] == ["IVF40,Flat", "IVF40_HNSW16,Flat"]
    flat = {(c["factory"], c["nprobe"], c["refine"]): c for c in other["grid"]}
    assert flat["IVF40,Flat", 32, 16]["recall_at_k"] == 1.0  # 32 of 40 lists, uncompressed rows
    assert flat["IVF40_HNSW16,Flat", 32, 16]["recall_at_k"] > 0.98
    # a rotated index (OPQ): its lists are those of the rotated rows, so a partner fetched had its list probed
    opq = bench.main(
        [
            *argv,
            "--direction",
            "backward",
            "--factory",
            "OPQ16,IVF76,PQ16x4fs",
            "--out",
            str(tmp_path / "o.json"),
        ]
    )
    for c in opq["grid"]:
        assert c["partner_in_topk"] <= c["partner_fetched"] <= c["partner_list_probed"]


def test_openvino_config_times_each_compilation_on_sentences_and_passages(tmp_path):
    pytest.importorskip("openvino")
    from argparse import Namespace

    from conftest import make_tiny_encoder
    from sentkit.encoders.openvino.export import export_openvino

    bench = _bench("openvino_config")
    assert bench.passages(["a b c", "d e", "f g h i"], 4) == ["a b c d", "e f g h", "i"]
    tiny = make_tiny_encoder(pooling="mean").eval()
    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    sentences = [f"sentence {i} " * (1 + i % 7) for i in range(40)]
    sets = {"sentences": sentences, "passages of 60 words": bench.passages(sentences, 60)}
    gold = np.arange(20, dtype=float)
    args = Namespace(threads=2, batch_size=8, repeats=2)
    res = bench.bench_model("tiny", sets, gold, args, folder=folder)
    assert list(res["openvino"]) == list(bench.CONFIGS)
    assert [v["streams"] for v in res["openvino"].values()] == [1, 1, 2, 1]
    # tests see an AVX2 host (conftest.py): sentkit's default keeps the plugin's fused attention
    assert res["openvino"]["sentkit default"]["snippets"] is True
    short, long = res["sets"]["sentences"], res["sets"]["passages of 60 words"]
    assert long["max_tokens"] > 60 > short["max_tokens"] and long["mean_tokens"] > short["mean_tokens"]
    assert long["texts"] == len(sets["passages of 60 words"])
    for row in (short, long):
        assert list(row["timings"]) == list(bench.CONFIGS)
        assert row["median_vs_plugin_default"]["plugin default (1 stream, snippets on)"] == 1.0
        assert (
            min(row["min_cosine_to_plugin_default"].values()) > 0.9999
        )  # settings change speed, not vectors
        assert all(len(t["seconds"]) == 2 for t in row["timings"].values())
    assert len(set(short["stsb_spearman"].values())) == 1 and "stsb_spearman" not in long


def test_openvino_op_profile_sums_kernels_and_layer_roles_and_rates_weight_products():
    bench = _bench("openvino_op_profile")
    role = bench.role_of
    assert (
        role("/model/encoder/layer.11/intermediate/dense/MatMul", "FullyConnected")
        == "intermediate/dense/MatMul"
    )
    assert role("/0/auto_model/encoder/layer.3/output/Add", "Add") == "output/Add"
    assert role("/m/layer.2/output/dense/MatMul/DequantizationMultiply", "FullyConnectedQuantizedLegacy") == (
        "output/dense/MatMul"
    )
    assert role("/model/embeddings/Gather", "Gather") == "outside layers/model/embeddings/Gather"
    assert role("Softmax_67009", "Softmax") == "Softmax (made by the plugin)"
    rows = [
        ("/m/layer.0/intermediate/dense/MatMul", "FullyConnected", "brgemm_i8", 0.003),
        ("/m/layer.1/intermediate/dense/MatMul", "FullyConnected", "brgemm_i8", 0.001),
        ("/m/layer.0/output/dense/MatMul", "FullyConnected", "brgemm_i8", 0.002),
        ("/m/layer.0/output/Add", "Add", "jit_f32", 0.002),
        ("Softmax_1", "Softmax", "jit_f32", 0.001),
        ("Softmax_2", "Softmax", "jit_f32", 0.001),
    ]
    # 2 layers of a 4 -> 8 -> 4 model over 1000 padded tokens: each product is 2 * 1000 * 2 * 4 * 8 ops
    res = bench.summarize(rows, tokens=1000, layers=2, shapes=bench.product_shapes(4, 8))
    assert res["total_seconds"] == pytest.approx(0.010)
    assert res["by_kernel"]["FullyConnected [brgemm_i8]"]["share"] == pytest.approx(0.6)
    assert list(res["by_role"])[0] == "intermediate/dense/MatMul"
    assert res["by_role"]["intermediate/dense/MatMul"]["seconds"] == pytest.approx(0.004)
    assert res["weight_products"]["intermediate/dense/MatMul"]["gops"] == pytest.approx(128_000 / 0.004 / 1e9)
    assert res["weight_products"]["output/dense/MatMul"]["gops"] == pytest.approx(128_000 / 0.002 / 1e9)
    assert res["by_role"]["Softmax (made by the plugin)"]["share"] == pytest.approx(0.2)
    assert "attention/self/query/MatMul" not in res["weight_products"]  # not in the rows: not rated

    # against an anchor: 6 ms of products and 4 ms of other kernels for sentkit, 8 + 4 ms for the anchor
    anchor = {
        "total_seconds": 0.012,
        "by_kernel": {"FullyConnected [brgemm_bf16]": {"seconds": 0.008}, "Add [jit]": {"seconds": 0.004}},
    }
    bound = bench.two_x_bound(res, anchor)
    assert bound["sentkit"] == {"weight_products": pytest.approx(0.006), "other": pytest.approx(0.004)}
    assert bound["measured_kernel_ratio"] == pytest.approx(1.2)
    assert bound["ratio_if_products_at_twice_the_anchor_rate"] == pytest.approx(0.012 / (0.004 + 0.004))
    assert bound["other_kernels_allowed_for_2x"] == pytest.approx(0.002)  # 6 ms total: 4 ms of products


def test_openvino_op_profile_runs_an_export_with_the_encoders_settings(tmp_path):
    pytest.importorskip("openvino")
    from argparse import Namespace

    from conftest import make_tiny_encoder
    from sentkit.encoders.openvino.export import export_openvino

    bench = _bench("openvino_op_profile")
    tiny = make_tiny_encoder(pooling="mean").eval()
    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    shapes = {"layers": 2, "hidden": 32, "intermediate": 64}
    sentences = [f"sentence {i} " * (1 + i % 5) for i in range(30)]
    args = Namespace(threads=2, batch_size=8)
    res = bench.profile_model(
        "tiny", "openvino", sentences, args, snippets=False, folder=folder, shapes=shapes
    )
    assert res["openvino"]["snippets"] is False and res["openvino"]["streams"] == 1
    assert sum(r["share"] for r in res["by_kernel"].values()) == pytest.approx(1.0)
    assert res["total_seconds"] == pytest.approx(sum(r["seconds"] for r in res["by_role"].values()))
    assert res["padded_tokens"] >= sum(len(s.split()) for s in sentences)
    assert set(res["weight_products"]) == set(bench.product_shapes(32, 64))  # every product found by name
    assert res["folder"] == str(folder)

    # the same batches on a copy with ReLU in place of the GELU, beside the export itself
    args.variant, args.activations = "openvino", "erf,relu"
    gold = np.arange(len(sentences) // 2, dtype=float)
    rows = bench.activation_rows(res, sentences, gold, args, snippets=False)
    assert list(rows) == ["erf", "relu"] and rows["relu"]["computes"] == bench.ACTIVATIONS["relu"]
    for row in rows.values():
        assert (
            row["first_ffn"]["gops"] > 0 and row["total_seconds"] > 0 and -100 <= row["stsb_spearman"] <= 100
        )
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder

    vectors = OpenVinoEncoder(folder, threads=2).encode(sentences, batch_size=8)
    a, b = vectors[0::2], vectors[1::2]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    expected = 100 * np.corrcoef(np.argsort(np.argsort(cos)), np.argsort(np.argsort(gold)))[0, 1]
    assert rows["erf"]["stsb_spearman"] == pytest.approx(expected)  # pairs (2i, 2i + 1) against gold[i]


def test_int8_bench_times_onnxruntime_dynamic_int8_by_name_where_int8_runs_another_path(monkeypatch):
    from types import SimpleNamespace

    import sentkit.encoders.export_cache as export_cache

    bench = _bench("int8_speed")
    for chosen, extra in (("openvino-int8", True), ("int8-dynamic", False)):
        calls = []

        def fake(name, variant, threads=None, chosen=chosen, calls=calls):
            calls.append(variant)
            return SimpleNamespace(runtime_info={"variant": chosen if variant == "int8" else variant})

        monkeypatch.setattr(export_cache, "cached_export", fake)
        skipped: dict = {}
        exports = bench.sentkit_exports("m", 2, skipped)
        assert ("sentkit int8-dynamic" in exports) is extra and calls.count("int8-dynamic") == int(extra)
        assert exports["sentkit int8"].runtime_info["variant"] == chosen and not skipped
        assert bench.arithmetic_of("sentkit int8-dynamic") == "int8"


def test_openvino_op_profile_swaps_the_gelu_of_an_export_for_another_activation(tmp_path):
    pytest.importorskip("openvino")
    import openvino as ov

    from conftest import make_tiny_encoder
    from sentkit.encoders.openvino.encoder import OpenVinoEncoder
    from sentkit.encoders.openvino.export import export_openvino

    bench = _bench("openvino_op_profile")
    tiny = make_tiny_encoder(pooling="mean").eval()
    folder = export_openvino(tiny, tmp_path / "ov", source="tiny-bert")
    assert bench.with_activation(folder, "erf", tmp_path / "erf") == folder  # the export itself

    def types(path):
        return [op.get_type_name() for op in ov.Core().read_model(str(path / "model.xml")).get_ordered_ops()]

    gelus = types(folder).count("Gelu")
    assert gelus == 2  # one per layer of the tiny model
    sentences = [f"sentence {i} " * (1 + i % 5) for i in range(12)]

    def unit(vectors):
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    own = unit(OpenVinoEncoder(folder, threads=1).encode(sentences))
    cosine = {}
    for activation, op in (("tanh", "Gelu"), ("quick", "Swish"), ("relu", "Relu")):
        copy = bench.with_activation(folder, activation, tmp_path / activation)
        assert types(copy).count(op) == gelus and (op == "Gelu" or "Gelu" not in types(copy))
        assert (copy / "sentkit_onnx.json").is_file() and (folder / "model.xml").is_file()  # export untouched
        vectors = unit(OpenVinoEncoder(copy, threads=1).encode(sentences))
        cosine[activation] = float((own * vectors).sum(axis=1).min())
    # tanh and x sigmoid(1.702 x) approximate erf's GELU; ReLU drops the negative part GELU keeps, and
    # moves the vectors a hundred times as far
    assert cosine["tanh"] > 0.99999 and cosine["quick"] > 0.99999
    assert 1 - cosine["relu"] > 100 * max(1 - cosine["tanh"], 1 - cosine["quick"])
    with pytest.raises(SystemExit, match="not one of"):
        bench.with_activation(folder, "silu", tmp_path / "silu")


def test_bench_scripts_import_each_other_as_a_package_and_time_gemms_with_the_library():
    """No script puts its folder on sys.path to reach another; the GEMM probes use the library's one timer."""
    from sentkit.mining import gemm

    scripts = sorted(BENCH.rglob("*.py"))
    assert [p.name for p in scripts if "sys.path" in p.read_text(encoding="utf-8")] == []
    assert _bench("gemm_ceilings").best_seconds is gemm.best_seconds
    assert _bench("host_speed").best_seconds is gemm.best_seconds
    assert not hasattr(_bench("int8_speed"), "gemm_gflops")  # its fp32 probe is gemm_ceilings.fp32_torch


def test_the_library_gemm_timer_takes_the_fastest_call_after_a_warm_up(monkeypatch):
    from sentkit.mining import gemm

    calls, clock = [], iter([0.0, 3.0, 10.0, 11.0, 20.0, 22.0])  # timed calls of 3, 1 and 2 seconds
    monkeypatch.setattr(gemm.time, "perf_counter", lambda: next(clock))
    assert gemm.best_seconds(lambda: calls.append(1), 3) == 1.0
    assert len(calls) == 4  # the warm-up call is not timed
