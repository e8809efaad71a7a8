"""The evaluation-speed bench scripts on small inputs: they run, their numbers add up, mining is sane."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

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
    assert row["encode_s"] > 0 and row["scoring_s"] >= row["kmeans_s"] > 0
    assert row["load_s"] + row["encode_s"] + row["scoring_s"] == pytest.approx(row["wall_s"], abs=0.05)
    again = profile.profile_task("knn-mewsc16-100", timed, counted, args)
    assert again["sentences_encoded"] == 0  # the same 100 rows come from the run-wide cache
