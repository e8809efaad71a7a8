"""docs/seeds.md, "Repeating a run to the last digit": the figures it quotes are those of the results files
in docs/results/isa/, and those files say how their kernels were capped (provenance.machine_info)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISA = ROOT / "docs" / "results" / "isa"
PAGE = (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8")


def only_results(folder: str) -> dict:
    (path,) = (ISA / folder).glob("*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_two_jacsts_scores_are_the_capped_and_uncapped_runs_of_one_host():
    capped, uncapped = only_results("minilm-en_jacsts_avx2_cap"), only_results("minilm-en_jacsts_uncapped")
    assert capped["machine"]["cpu"] == uncapped["machine"]["cpu"]  # the same AVX-512 host
    assert "avx512f" in capped["machine"]["cpu"]["flags"]
    assert (
        capped["machine"]["torch_cpu_capability"] == "AVX2"
        and "AVX2" in capped["machine"]["isa_caps"].values()
    )
    assert uncapped["machine"]["torch_cpu_capability"] == "AVX512" and "isa_caps" not in uncapped["machine"]
    low, high = (r["tasks"]["jacsts"]["main_score"] for r in (capped, uncapped))
    assert (
        f"minilm-en scores {low:.5f} where its kernels use AVX2 and {high:.5f} where they use AVX-512" in PAGE
    )
    # the capped score is the one the AVX2 host recorded for the same model and task
    recorded = json.loads((ROOT / "docs/results/confirm/jcse.json").read_text(encoding="utf-8"))
    assert recorded["scored"]["once"]["minilm-en/direct"]["scores"]["jacsts"]["main_score"] == low != high
    assert recorded["machine"]["cpu"]["flags"] == ["avx2", "fma", "f16c"]


def test_the_trained_rows_moved_by_what_the_page_says():
    uncapped = json.loads((ISA / "jcse_confirm_uncapped_partial.json").read_text(encoding="utf-8"))
    recorded = json.loads((ROOT / "docs/results/confirm/jcse.json").read_text(encoding="utf-8"))
    moves = [
        abs(score["main_score"] - recorded["scored"][seed][row]["scores"][task]["main_score"])
        for seed, rows in uncapped["scored"].items()
        for row, entry in rows.items()
        for task, score in entry["scores"].items()
    ]
    assert len(moves) >= 20 and 0 < max(moves)
    assert f"JCSE's trained\nrows moved by up to {max(moves):.4f} points" in PAGE


def test_the_index_counts_the_models_the_uncapped_run_scored():
    uncapped = json.loads((ISA / "jcse_confirm_uncapped_partial.json").read_text(encoding="utf-8"))
    recorded = json.loads((ROOT / "docs/results/confirm/jcse.json").read_text(encoding="utf-8"))
    scored, planned = (sum(len(rows) for rows in r["scored"].values()) for r in (uncapped, recorded))
    index = (ROOT / "docs" / "results-index.md").read_text(encoding="utf-8")
    assert scored < planned and f"stopped after {scored} of its {planned} models" in index


def test_the_xnli_accuracies_are_the_recorded_run_and_a_run_without_the_openblas_cap():
    uncapped = json.loads((ISA / "amr_confirm_openblas_uncapped_partial.json").read_text(encoding="utf-8"))
    recorded = json.loads((ROOT / "docs/results/confirm/amr.json").read_text(encoding="utf-8"))
    avx2, avx512 = (
        r["scored"]["once"]["muse-m/s"]["scores"]["xnli"]["main_score"] for r in (recorded, uncapped)
    )
    assert (
        f"XNLI accuracy in AMR retrofitting's example is {avx2:.1f} with OpenBLAS's\nAVX2 kernels and {avx512:.1f}"
        in PAGE
    )
    assert avx2 != avx512


def test_the_cpu_development_runs_scored_their_starts_as_avx512_kernels_do():
    """JCSE's and AMR retrofitting's development runs predate the CPU-flag field; their start models'
    scores are those the AVX-512 kernels give (not the AVX2 ones), as the results page says."""
    jcse, amr = (
        json.loads((ROOT / "docs/results" / name).read_text(encoding="utf-8"))["scored"]["once"]
        for name in ("jcse_minilm.json", "amr_retrofit.json")
    )
    start = jcse["minilm-en/direct"]["scores"]["jacsts"]["main_score"]
    assert start == only_results("minilm-en_jacsts_uncapped")["tasks"]["jacsts"]["main_score"]
    uncapped = json.loads((ISA / "amr_confirm_openblas_uncapped_partial.json").read_text(encoding="utf-8"))
    xnli = amr["muse-m/s"]["scores"]["xnli"]["main_score"]
    assert xnli == uncapped["scored"]["once"]["muse-m/s"]["scores"]["xnli"]["main_score"]
    results = " ".join((ROOT / "docs" / "results.md").read_text(encoding="utf-8").split())
    assert f"minilm-en's JAC-STS {start:.5f} and muse-m's XNLI {xnli:.1f}" in results
