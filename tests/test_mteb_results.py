"""Reading MTEB result files (no mteb import needed): percent scores, sentkit task names, merged STS12-16."""

from __future__ import annotations

import json

import pytest

from sentkit.errors import DataFormatError
from sentkit.mteb_results import looks_like_mteb, read_mteb_runs


def _result(task: str, subsets: dict[str, float], split: str = "test") -> str:
    rows = [{"main_score": v, "hf_subset": k, "languages": ["eng-Latn"]} for k, v in subsets.items()]
    return json.dumps(
        {"task_name": task, "mteb_version": "2.26.24", "dataset_revision": "r", "scores": {split: rows}}
    )


def test_years_merge_pairs_rename_and_unknown_tasks_keep_their_name(tmp_path):
    folder = tmp_path / "results" / "org__model" / "rev1"
    folder.mkdir(parents=True)
    for k, year in enumerate(("STS12", "STS13", "STS14", "STS15", "STS16")):
        (folder / f"{year}.json").write_text(_result(year, {"default": 0.70 + k / 100}))
    (folder / "STS17.json").write_text(_result("STS17", {"es-en": 0.5, "en-en": 0.9, "ko-ko": 0.4}))
    (folder / "Banking77Classification.json").write_text(_result("Banking77Classification", {"default": 0.8}))
    assert looks_like_mteb(tmp_path / "results")
    (run,) = read_mteb_runs([tmp_path / "results"])
    assert run["model"] == "org/model (MTEB)" and run["source"] == "mteb"
    years = run["tasks"]["sts12-16"]
    assert years["main_score"] == pytest.approx(72.0)  # mean of 70..74
    assert years["scores"]["STS14"] == pytest.approx(72.0)
    assert not any(t.startswith("mteb:STS1") for t in run["tasks"])
    sts17 = run["tasks"]["sts17"]
    assert sts17["scores"]["en-es"] == pytest.approx(50.0) and sts17["scores"]["en-en"] == pytest.approx(90.0)
    assert sts17["main_score"] == pytest.approx(60.0)  # mean over the subsets in the file
    assert run["tasks"]["mteb:Banking77Classification"]["main_score"] == pytest.approx(80.0)


def test_bad_mteb_file_names_file(tmp_path):
    path = tmp_path / "STS17.json"
    path.write_text(json.dumps({"task_name": "STS17", "scores": {"test": [{"hf_subset": "en-en"}]}}))
    with pytest.raises(
        DataFormatError, match=r"STS17\.json: expected subset scores with a main_score in split 'test'"
    ):
        read_mteb_runs([path])
    assert not looks_like_mteb(tmp_path / "missing.json")
