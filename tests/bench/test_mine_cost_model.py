"""bench/mine_cost_model.py on hand-made runs (the fit recovers the costs they were made from; the projection
scales as its formulas say) and bench/mine_distributed.py's pieces: a run's record from a distributed sidecar
with fields missing, the ratios to the in-process run, and the script end to end on a small set."""

from __future__ import annotations

import json
import math

import pytest

from bench import mine_cost_model as model
from bench import mine_distributed as dist

ROWS, DIM, HOST_CORES = 10_000, 64, 2
# IVF256 over 10,000 keys, 16 lists probed, 5,000 training rows, 4-bit codes of 32 sub-quantizers: 16 bytes
INDEX = {"index": "approximate", "factory": "IVF256,PQ32x4fs", "nlist": 256, "nprobe": 16, "train_size": 5000}
INDEX |= {"keys": ROWS, "recall": {"recall_at_k": 0.97}}
COSTS = {  # core-seconds per unit, what the hand-made runs are timed from
    "build": 2e-11,
    "search": 1e-10,
    "merge": 3e-8,
    "margin_retrieval": 2e-6,
    "io": 1e-9,
    "transfer": 5e-10,
    "recall": 3e-11,
}
# the units of one direction, by hand: 10,000 queries x 16 lists x 10,000/256 codes a list x 16 bytes
SEARCH_UNITS = 10_000 * 16 * (10_000 / 256) * 16  # 1e8 bytes
BUILD_UNITS = 64 * 256 * (10 * 5000 + 10_000)  # 64 dims x 256 centroids x (10 k-means passes + every key)
RECALL_UNITS = 1000 * 10_000 * 64  # 1,000 sampled queries against every key


def timed_run(config: str, cores: int, engine: dict) -> dict:
    """A run whose timings follow COSTS exactly: parallel stages on `cores`, the driver's on one core."""
    build = COSTS["build"] * BUILD_UNITS / cores
    search = COSTS["search"] * SEARCH_UNITS / cores
    parts = engine.get("key_parts") or 1
    merge = COSTS["merge"] * 2 * ROWS * parts if engine.get("kind") == "ray" else None
    transfer = COSTS["transfer"] * 2 * ROWS * DIM * 4 if engine.get("kind") == "ray" else None
    timings = {
        "skip_scan_src_s": COSTS["io"] * ROWS * DIM * 4,
        "skip_scan_tgt_s": COSTS["io"] * ROWS * DIM * 4,
        "recall_s": COSTS["recall"] * 2 * RECALL_UNITS / HOST_CORES,
        "exchange_s": COSTS["margin_retrieval"] * 2 * ROWS * 0.25,
        "score_s": COSTS["margin_retrieval"] * 2 * ROWS * 0.25,
        "select_s": COSTS["margin_retrieval"] * 2 * ROWS * 0.25,
        "write_s": COSTS["margin_retrieval"] * 2 * ROWS * 0.25,
    }
    for direction in ("forward", "backward"):
        timings[f"knn_{direction}_s"] = build + search + ((merge or 0) + (transfer or 0)) / 2
        timings[f"index_build_{direction}_s"] = build
    if merge is not None:
        timings |= {"merge_s": merge, "transfer_s": transfer}
    return {
        "config": config,
        "engine": engine,
        "timings": timings,
        "index": {"forward": INDEX, "backward": INDEX},
    }


def hand_made_runs() -> list[dict]:
    return [
        timed_run("local", HOST_CORES, {"kind": "local"}),
        timed_run("w1", 1, {"kind": "ray", "workers": 1, "cpus_per_worker": 1, "key_parts": 1}),
        timed_run("w2", 2, {"kind": "ray", "workers": 2, "cpus_per_worker": 1, "key_parts": 2}),
        # four one-CPU nodes simulated on the 2 host cores: the search stages had 2 cores, not 4
        timed_run("nodes4", 2, {"kind": "ray", "workers": 4, "cpus_per_worker": 1, "key_parts": 4}),
    ]


def test_the_fit_recovers_the_per_unit_costs_the_runs_were_timed_from():
    observed = [model.observations(run, ROWS, DIM, HOST_CORES) for run in hand_made_runs()]
    assert observed[0]["search"]["units"] == pytest.approx(2 * SEARCH_UNITS)  # 2e8 bytes, both directions
    assert observed[0]["build"]["units"] == pytest.approx(2 * BUILD_UNITS)
    assert [o["search"]["cores"] for o in observed] == [2, 1, 2, 2]
    assert "merge" not in observed[0] and observed[2]["merge"]["units"] == 2 * ROWS * 2  # per query per part
    costs = model.fit(observed)
    assert set(costs) == set(COSTS)  # search_flat: no exact run
    for stage, cost in COSTS.items():
        assert costs[stage]["core_s_per_unit"] == pytest.approx(cost, rel=1e-9), stage
        assert costs[stage]["max_relative_residual"] < 1e-9
    assert costs["merge"]["runs"] == 3 and costs["search"]["runs"] == 4


def test_the_fit_is_least_squares_through_the_origin():
    # two runs of one stage that disagree: units 1 and 3, seconds 2 and 3 -> c = (1*2 + 3*3) / (1 + 9) = 1.1
    observed = [
        {"io": {"seconds": 2.0, "units": 1.0, "cores": 1}},
        {"io": {"seconds": 3.0, "units": 3.0, "cores": 1}},
    ]
    cost = model.fit(observed)["io"]
    assert cost["core_s_per_unit"] == pytest.approx(1.1)
    assert cost["max_relative_residual"] == 0.45  # |2 - 1.1| / 2 (the other: |3 - 3.3| / 3 = 0.1)


ANCHOR = {"nlist": 2048, "nprobe": 96, "recall_at_k": 0.98}
FIXED = {"costs": {s: {"core_s_per_unit": c} for s, c in COSTS.items()}, "anchor": ANCHOR, "node_cores": 64}
FIXED |= {"network_gbit": 10.0}


def test_the_projection_follows_its_formulas():
    # 100M keys: one index of the whole side, lists 2^round(log2(2 sqrt(1e8))) = 16,384; 96/2048 of them probed
    p = model.project(100_000_000, 384, 1, scaling="fraction", **FIXED)
    assert (p["index"]["nlist"], p["index"]["nprobe"]) == (16_384, 768)
    assert p["index"]["train_rows"] == 39 * 16_384  # 638,976: the preset's 39 rows a list, above 65,536
    assert p["index"]["factory"] == "IVF16384,PQ192x4fs" and p["index"]["fetched_per_part"] == 256
    # both directions: 2 x 1e8 queries x 768 lists x 1e8/16,384 codes x 96 bytes = 9e16 bytes on 64 cores
    assert p["units"]["search"] == pytest.approx(9e16, rel=1e-12)
    assert p["seconds"]["search"] == pytest.approx(1e-10 * 9e16 / 64, rel=1e-6)
    # coarse: 2 x 1e8 queries x 16,384 centroids x 384 dims; refine: 2 x 1e8 x 256 candidates x 384 dims, both
    # priced per product at the recall check's cost (no exact run fitted)
    assert p["units"]["coarse"] == 2e8 * 16_384 * 384 and p["units"]["refine"] == 2e8 * 256 * 384
    assert p["products_priced_by"] == "recall" and p["not_fitted"] == []
    assert p["seconds"]["coarse"] == pytest.approx(3e-11 * 2e8 * 16_384 * 384 / 64, abs=0.05)
    assert p["seconds"]["refine"] == pytest.approx(3e-11 * 2e8 * 256 * 384 / 64, abs=0.05)
    # build: 10 k-means passes of 638,976 rows on the driver's 64 cores, then 1e8 keys added on the workers'
    train = 2 * 10 * 638_976 * 16_384 * 384 / 64
    add = 2 * 1e8 * 16_384 * 384 / 64
    assert p["seconds"]["build"] == pytest.approx(2e-11 * (train + add), abs=0.05)
    # the driver's stages run on one core: 2e8 rows of margins, 2 x 1e8 x 384 x 4 bytes read
    assert p["seconds"]["margin_retrieval"] == pytest.approx(2e-6 * 2e8, rel=1e-6)
    assert p["seconds"]["io"] == pytest.approx(1e-9 * 2e8 * 384 * 4, rel=1e-6)
    assert p["seconds"]["network"] == pytest.approx(2e8 * 384 * 4 / 1.25e9, abs=0.05)  # 10 Gbit/s, rounded
    assert p["wall_s"] == pytest.approx(sum(p["seconds"].values()), abs=1.0)
    assert p["dominant_stage"] == "search"
    # sqrt scaling from the same anchor: 96 x sqrt(16,384 / 2,048) = 271.5 -> 272 lists
    assert model.project(100_000_000, 384, 1, scaling="sqrt", **FIXED)["index"]["nprobe"] == 272
    # memory: 1e8 x (4 x 384 + 96 + 8) bytes of rows, codes and ids + the centroids + 1 GiB of process
    worker = (1e8 * 1640 + 16_384 * 384 * 4) / 2**30 + 1
    assert p["worker_memory_gib"] == pytest.approx(worker, abs=0.05)
    # the driver: the measured bytes a row (bench/mine_driver_memory.py's results file) x 1e8 rows + 1 GiB
    assert p["driver_memory_gib"] == pytest.approx(1e8 * model.driver_bytes_per_row() / 2**30 + 1, abs=0.05)
    assert (
        50 < model.driver_bytes_per_row() < 200
    )  # (n,) proposals and 2n sorted proposals: tens of bytes each


def test_the_products_are_priced_by_exact_search_else_recall_else_left_out():
    exact = {**FIXED, "costs": {**FIXED["costs"], "search_flat": {"core_s_per_unit": 5e-11}}}
    p = model.project(100_000_000, 384, 1, scaling="fraction", **exact)
    assert p["products_priced_by"] == "search_flat"
    assert p["seconds"]["coarse"] == pytest.approx(5e-11 * 2e8 * 16_384 * 384 / 64, abs=0.05)
    bare = {**FIXED, "costs": {s: c for s, c in FIXED["costs"].items() if s != "recall"}}
    p = model.project(100_000_000, 384, 1, scaling="fraction", **bare)
    assert p["products_priced_by"] is None and {"coarse", "refine", "recall"} <= set(p["not_fitted"])
    assert "coarse" not in p["seconds"] and "refine" not in p["seconds"]


def test_a_training_sample_follows_sentkits_rule():
    # 1M rows: 2,048 lists, 39 training rows a list = 79,872 (what the 1M e2e run's index recorded)
    index = model.side_index(1_000_000, 384, ANCHOR, "fraction")
    assert (index["nlist"], index["train_rows"], index["factory"]) == (2048, 79_872, "IVF2048,PQ192x4fs")
    assert model.side_index(100_000, 384, ANCHOR, "fraction")["train_rows"] == 65_536  # the floor
    assert model.side_index(1_000_000_000, 1024, ANCHOR, "fraction")["train_rows"] == 39 * 65_536


def test_the_shared_index_scans_the_same_codes_whatever_the_node_count():
    eight = model.project(1_000_000_000, 384, 8, scaling="fraction", **FIXED)
    sixteen = model.project(1_000_000_000, 384, 16, scaling="fraction", **FIXED)
    # one index of the whole side: 65,536 lists, 96/2048 of them probed, whatever the node count
    assert {key: v for key, v in eight["index"].items() if key != "part_rows"} == {
        key: v for key, v in sixteen["index"].items() if key != "part_rows"
    }
    assert (eight["index"]["nlist"], eight["index"]["nprobe"]) == (65_536, 3072)
    assert (eight["index"]["part_rows"], sixteen["index"]["part_rows"]) == (125_000_000, 62_500_000)
    # codes scanned per query summed over the parts: independent of nodes, so twice the cores halve the scan
    assert sixteen["units"]["search"] == eight["units"]["search"]
    assert sixteen["seconds"]["search"] == pytest.approx(eight["seconds"]["search"] / 2, abs=0.1)
    # each query ranked once against the centroids, spread over the workers: twice the cores halve it
    assert sixteen["units"]["coarse"] == eight["units"]["coarse"]
    assert sixteen["seconds"]["coarse"] == pytest.approx(eight["seconds"]["coarse"] / 2, abs=0.1)
    # repeated per part: the re-scoring and the merge's partial lists, linear in nodes
    for stage in ("refine", "merge"):
        assert sixteen["units"][stage] == 2 * eight["units"][stage], stage
    # ... so the re-scoring's wall time does not fall (on twice the cores) and the merge's doubles
    assert sixteen["seconds"]["refine"] == eight["seconds"]["refine"]
    assert sixteen["seconds"]["merge"] == pytest.approx(2 * eight["seconds"]["merge"], abs=0.1)
    # each worker: its part's rows, codes and ids, and one copy of the 65,536 x 384 float32 quantizer
    for p in (eight, sixteen):
        part = p["index"]["part_rows"]
        assert p["worker_memory_gib"] == pytest.approx((part * 1640 + 65_536 * 384 * 4) / 2**30 + 1, abs=0.05)


def test_the_projection_scales_as_the_model_says():
    one = model.project(100_000_000, 384, 1, scaling="fraction", **FIXED)
    ten = model.project(1_000_000_000, 384, 10, scaling="fraction", **FIXED)
    # the codes scanned grow with n^2 (a fixed share of the lists of n keys), the cores with the nodes
    assert ten["seconds"]["search"] / one["seconds"]["search"] == pytest.approx(100 / 10, rel=1e-9)
    # the driver's per-row stages grow with n alone; the merge with n x parts
    assert ten["seconds"]["margin_retrieval"] / one["seconds"]["margin_retrieval"] == pytest.approx(10)
    assert ten["seconds"]["merge"] / one["seconds"]["merge"] == pytest.approx(100)
    # the coarse ranking: 10 x the queries x 4 x the lists, once each, on 10 x the cores
    assert ten["units"]["coarse"] / one["units"]["coarse"] == pytest.approx(10 * 4)
    assert ten["seconds"]["coarse"] / one["seconds"]["coarse"] == pytest.approx(4, rel=1e-3)
    # 1024 dims: 8/3 the bytes scanned and read
    wide = model.project(100_000_000, 1024, 1, scaling="fraction", **FIXED)
    assert wide["seconds"]["search"] / one["seconds"]["search"] == pytest.approx(1024 / 384, rel=1e-9)
    # 1e9 x (1536 + 96 + 8) bytes = 1,527 GiB over 256 x 0.85 - 1 GiB - the 96 MiB quantizer a node: 8 nodes;
    # but a worker holds its rows only up to half the node: 1e9 x 1536 bytes = 1,431 GiB over 108.8 GiB: 14
    assert model.nodes_for_memory(1_000_000_000, 384, 256.0) == 14
    # 1e8 rows: 153 GiB of parts fit one node's 216.5, but their 143 GiB of rows need two halves
    assert model.nodes_for_memory(100_000_000, 384, 256.0) == 2
    # the re-scoring each part repeats and the merge rising with the nodes bound the time from below
    target = 48 * 3600.0
    nodes = model.nodes_for_time(
        1_000_000_000, 384, target, {**FIXED, "scaling": "fraction", "node_gib": 256.0}
    )
    wall = [
        model.project(1_000_000_000, 384, m, scaling="fraction", **FIXED)["wall_s"]
        for m in (nodes - 1, nodes)
    ]
    assert wall[1] <= target < wall[0]  # the fewest nodes that finish within two days


def test_a_target_no_node_count_meets_is_none():
    # a driver so slow that its margins alone exceed the target, however many nodes search
    slow = {**FIXED, "costs": {**FIXED["costs"], "margin_retrieval": {"core_s_per_unit": 1.0}}}
    assert (
        model.nodes_for_time(1_000_000, 384, 3600.0, {**slow, "scaling": "fraction", "node_gib": 256.0})
        is None
    )
    # products so slow that every part's re-scoring alone exceeds the target: more nodes do not shorten it
    # (2 directions x 1e6 queries x 256 candidates x 384 dims x 2e-6 core-s on a node's 64 cores = 6,144 s)
    slow_products = {**FIXED, "costs": {**FIXED["costs"], "recall": {"core_s_per_unit": 2e-6}}}
    fixed = {**slow_products, "scaling": "fraction", "node_gib": 256.0}
    assert model.nodes_for_time(1_000_000, 384, 3600.0, fixed) is None


def test_code_bytes_and_cores_of_a_run():
    assert model.code_bytes("IVF2048,PQ192x4fs", 384) == 96
    assert model.code_bytes("OPQ64,IVF16384,PQ64", 384) == 64
    assert model.code_bytes(None, 1024) == 256
    assert model.run_cores({"engine": {"kind": "local"}}, 2) == 2
    assert model.run_cores({"engine": {"kind": "ray", "workers": 4}}, 2) == 2  # capped at the host's cores
    assert model.run_cores({"engine": {"kind": "ray", "workers": 2, "cpus_per_worker": 8}}, 64) == 16


def test_cost_model_end_to_end_on_a_written_file(tmp_path):
    source = tmp_path / "mine_distributed.json"
    runs = hand_made_runs()
    source.write_text(
        json.dumps({"runs": runs, "set": {"rows_a_side": ROWS, "dim": DIM}, "machine": {"cpus": HOST_CORES}})
    )
    result = model.main(["--from", str(source), "--out", str(tmp_path / "cost.json")])
    assert result["costs"]["search"]["core_s_per_unit"] == pytest.approx(1e-10)
    assert result["not_fitted"] == ["search_flat"] and result["anchor_index"]["nprobe"] == 16
    sizes = {(p["rows_a_side"], p["dim"], p["scaling"]) for p in result["projections"]}
    assert {(n, d, s) for n in model.SIZES for d in model.DIMS for s in ("fraction", "sqrt")} <= sizes
    assert all(p["wall_s"] > 0 and math.isfinite(p["wall_s"]) for p in result["projections"])
    assert [entry["name"].split()[0] for entry in result["published"]] == ["WikiMatrix", "CCMatrix"]
    assert json.loads((tmp_path / "cost.json").read_text())["fit_method"].startswith("least squares")


def test_a_distributed_run_record_reads_the_sidecar_with_fields_missing():
    import numpy as np

    gold = np.array([1, -1, 0])
    sidecar = {  # no resumed_blocks, no recall on the backward index, no cpus_per_worker
        "engine": {
            "kind": "ray",
            "workers": 4,
            "nodes": 4,
            "worker_peak_rss_mib": [300.0, 310.5, 305.0, 299.0],
        },
        "timings": {"knn_forward_s": 6.0, "knn_backward_s": 4.0, "merge_s": 1.0},
        "index": {"forward": {"index": "approximate", "recall": {"recall_at_k": 0.96}}, "backward": {}},
        "peak_rss_mib": 800.0,
    }
    measured = {"command": ["mine"], "wall_s": 20.0, "tree_peak_rss_mib": 900.0}
    args = type("Args", (), {"threshold": None})()
    record = dist.run_record(
        "nodes4",
        measured,
        sidecar,
        np.array([1.2, 1.1]),
        np.array([0, 2]),
        np.array([1, 0]),
        gold,
        "ab",
        args,
    )
    assert record["recall_at_k"] == {"forward": 0.96, "backward": None}
    assert record["worker_peak_rss_mib_max"] == 310.5 and record["driver_peak_rss_mib"] == 800.0
    assert record["resumed_blocks"] is None and record["k"] is None
    assert record["planted_pairs"]["best"]["f1"] == 100.0  # both planted pairs mined back
    cluster = record["simulated_cluster"]
    assert cluster["nodes"] == 4 and cluster["oversubscribed"] == (4 > (dist.os.cpu_count() or 1))
    local = {"wall_s": 10.0, "timings": {"knn_forward_s": 3.0, "knn_backward_s": 2.0, "merge_s": 0.0}}
    ratios = dist.ratios_to(record, local)
    assert ratios["end_to_end"] == 2.0 and ratios["knn_both"] == 2.0
    assert ratios["stages"] == {"knn_forward_s": 2.0, "knn_backward_s": 2.0}  # a zero reference is no ratio
    assert "nodes4" in dist.table([record | {"ratio_to_local": ratios}])


def test_configurations_map_to_mine_flags():
    assert dist.parse_configs("local,w2,nodes4") == ["local", "w2", "nodes4"]
    assert dist.engine_flags("local") == [] and dist.engine_flags("w2") == ["--workers", "2"]
    assert dist.engine_flags("nodes4", "10.0.0.1:6379") == ["--address", "10.0.0.1:6379", "--workers", "4"]
    assert (dist.simulated_nodes("nodes4"), dist.simulated_nodes("w2")) == (4, 0)
    for bad in ("local,local", "w0", "gpu", ""):
        with pytest.raises(SystemExit):
            dist.parse_configs(bad)


def test_mine_distributed_runs_the_in_process_command_on_a_small_set(tmp_path):
    result = dist.main(
        ["--small", "--configs", "local", "--work", str(tmp_path / "w"), "--out", str(tmp_path / "d.json")]
    )
    (run,) = result["runs"]
    assert result["set"]["planted_pairs"] == 300 and result["set"]["distractor_rows_a_side"] == 2700
    assert run["engine"]["kind"] == "local" and run["wall_s"] > 0 and run["tree_peak_rss_mib"] > 50
    assert run["index"]["forward"]["index"] == "approximate"  # --small takes the IVF path
    assert 0.5 < run["recall_at_k"]["forward"] <= 1.0
    assert run["planted_pairs"]["best"]["f1"] > 20 and run["tsv_equals_local"]
    assert run["ratio_to_local"]["end_to_end"] == 1.0
    # the cost model fits on what it wrote
    costs = model.main(["--from", str(tmp_path / "d.json"), "--out", str(tmp_path / "c.json")])["costs"]
    assert {"build", "search", "margin_retrieval", "io", "recall"} <= set(costs)
