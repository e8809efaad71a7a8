"""`sentkit compare`: paired differences between two results files, and the refusals that keep it honest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.compare import ItemsDiffer, compare_pooled, compare_runs, comparison_text
from sentkit.evaluate import evaluate

WORDS = "red blue green cat dog bird runs eats sleeps under over near house tree river fast slow big".split()


def _sts_file(path: Path, n: int = 700, seed: int = 0) -> Path:
    """Pairs whose second sentence swaps k of six words (gold 5 - k): 2 x 700 values, a sidecar's worth."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        first = list(rng.choice(WORDS, size=6))
        k = int(rng.integers(0, 6))
        second = [w if i >= k else str(rng.choice(WORDS)) for i, w in enumerate(first)]
        rows.append(f"{' '.join(first)}\t{' '.join(second)}\t{5 - k}")
    path.write_text("sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    sts = f"sts:{_sts_file(tmp / 'pairs.tsv')}"
    (tmp / "src.txt").write_text("".join(f"Satz {i} {WORDS[i % 18]}\n" for i in range(40)))
    (tmp / "tgt.txt").write_text("".join(f"sentence {i + i % 2} {WORDS[i % 18]}\n" for i in range(40)))
    tasks = [sts, f"bitext:{tmp / 'src.txt'}+{tmp / 'tgt.txt'}"]
    paths = {}
    for label, dim in (("a", 32), ("a_again", 32), ("b", 512)):
        run = evaluate(NgramEncoder(dim=dim, name=f"tri{dim}"), tasks, out=tmp / label, show_progress=False)
        paths[label] = Path(run["path"])
    return {"tmp": tmp, "sts": sts, "tasks": tasks, **paths}


def test_identical_runs_differ_by_zero_with_p_one(files):
    result = compare_runs(files["a"], files["a_again"])
    assert list(result["tasks"]) == files["tasks"] and not result["not_compared"]
    for entry in result["tasks"].values():
        for key, diff in entry["scores"].items():
            assert (diff["delta"], diff["ci"], diff["p_value"]) == (0.0, [0.0, 0.0], 1.0), key
    text = comparison_text(result)
    assert "+0.00  [+0.00, +0.00]  1.000" in text


def test_difference_is_b_minus_a_over_the_same_items(files):
    result = compare_runs(files["a"], files["b"])
    a, b = (json.loads(files[k].read_text())["tasks"] for k in ("a", "b"))
    for task, entry in result["tasks"].items():
        main = entry["scores"]["main_score"]
        assert main["a"] == pytest.approx(a[task]["main_score"]) and main["b"] == pytest.approx(
            b[task]["main_score"]
        )
        assert main["delta"] == pytest.approx(b[task]["main_score"] - a[task]["main_score"])
        assert main["ci"][0] <= main["delta"] <= main["ci"][1] and 0 < main["p_value"] <= 1
    sts = result["tasks"][files["sts"]]["scores"]["main_score"]
    assert sts["delta"] > 1 and sts["p_value"] < 0.05  # 512 trigram buckets collide far less than 32


def test_cli_prints_the_table_and_writes_json(files, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", str(files["a"]), str(files["b"]), "--out", str(out), "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"A: tri32 ({files['a']})\nB: tri512 ({files['b']})\n")
    assert "200 resamples, seed 0" in printed and f"comparison written to {out}" in printed
    saved = json.loads(out.read_text())
    assert saved["bootstrap"]["resamples"] == 200 and set(saved["tasks"]) == set(files["tasks"])


def _refusal(capsys, *argv) -> str:
    assert main(["compare", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sentkit: error: ")
    return err


def test_different_items_are_refused(files, tmp_path, capsys):
    """The same task name on an edited file (one gold score changed) is not the same items."""
    path = _sts_file(tmp_path / "pairs.tsv")
    spec = f"sts:{path}"
    before = evaluate(NgramEncoder(dim=32), [spec], out=tmp_path / "before", show_progress=False)["path"]
    lines = path.read_text().splitlines()
    lines[5] = lines[5].rsplit("\t", 1)[0] + "\t2.5"
    path.write_text("\n".join(lines) + "\n")
    after = evaluate(NgramEncoder(dim=32), [spec], out=tmp_path / "after", show_progress=False)["path"]
    with pytest.raises(ItemsDiffer, match=r"was not scored on the same items .*\(all: item hash"):
        compare_runs(before, after)
    assert "leave the task out with --tasks" in _refusal(capsys, before, after)


def test_an_altered_or_missing_sidecar_is_refused(files, tmp_path, capsys):
    import shutil

    copy = tmp_path / files["b"].name
    shutil.copy(files["b"], copy)
    sidecar = files["b"].with_name(files["b"].name.replace(".json", ".items.npz"))
    arrays = dict(np.load(sidecar))
    first = sorted(arrays)[0]
    arrays[first] = arrays[first] + 1e-9  # one value nudged, every array still well formed
    np.savez_compressed(tmp_path / sidecar.name, **arrays)
    assert "differs from" in _refusal(capsys, files["a"], copy) and "(altered?)" in _refusal(
        capsys, files["a"], copy
    )
    (tmp_path / sidecar.name).unlink()
    assert "per-item sidecar of" in _refusal(capsys, files["a"], copy)


def test_runs_without_items_are_listed_not_compared(files, tmp_path):
    old = json.loads(files["a"].read_text())
    bitext = files["tasks"][1]
    del old["tasks"][bitext]["items"]  # as written before sentkit kept per-item values
    path = files["a"].parent / "old.json"
    path.write_text(json.dumps(old))
    result = compare_runs(path, files["b"])
    assert list(result["tasks"]) == [files["sts"]]
    assert result["not_compared"] == {bitext: f"no per-item values in {path} (written by an older sentkit)"}
    assert f"{bitext}: not compared" in comparison_text(result)


def test_runs_without_any_items_are_refused_naming_the_file(files, tmp_path, capsys):
    old = json.loads(files["a"].read_text())
    for task in old["tasks"].values():
        del task["items"]  # as written before sentkit kept per-item values
    old.pop("items_file", None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    err = _refusal(capsys, path, files["b"])
    assert err == (
        f"sentkit: error: {path}: no per-item values for any of the 2 shared tasks (written by an older "
        "sentkit), so nothing can be compared; evaluate the model again with `sentkit eval` to get them\n"
    )
    assert capsys.readouterr().out == ""  # no empty table
    other = tmp_path / "old2.json"
    other.write_text(path.read_text())
    both = _refusal(capsys, path, other, "--tasks", files["sts"])
    assert f"{path} and {other}: no per-item values for the shared task " in both


def test_an_edited_main_score_is_refused(files, tmp_path, capsys):
    run = json.loads(files["b"].read_text())
    sts = run["tasks"][files["sts"]]
    recorded = sts["main_score"]
    sts["main_score"] = recorded + 5.0  # edited by hand; the per-item values still give the old score
    path = files["b"].parent / "edited.json"  # beside its sidecar
    path.write_text(json.dumps(run))
    with pytest.raises(ValueError) as err:
        compare_runs(files["a"], path)
    assert str(err.value) == (
        f"{path}: tasks.{files['sts']}.main_score is {recorded + 5.0!r} but its per-item values give "
        f"{recorded:.6g} (edited by hand?); compare needs the scores as sentkit eval wrote them"
    )
    assert "main_score is" in _refusal(capsys, files["a"], path)
    sts["main_score"] = recorded
    sts["scores"]["main_score"] = recorded - 1.0  # its copy among the scores edited instead
    path.write_text(json.dumps(run))
    assert f"tasks.{files['sts']}.scores.main_score is {recorded - 1.0!r}" in _refusal(
        capsys, files["a"], path
    )


def test_tasks_option_and_its_errors(files, capsys):
    result = compare_runs(files["a"], files["b"], tasks=[files["sts"]])
    assert list(result["tasks"]) == [files["sts"]]
    assert "not scored in both" in _refusal(capsys, files["a"], files["b"], "--tasks", "stsb")


def test_pooled_over_one_pair_is_the_paired_comparison(files):
    paired = compare_runs(files["a"], files["b"], resamples=300)
    pooled = compare_pooled([(files["a"], files["b"])], resamples=300)
    assert list(pooled["tasks"]) == list(paired["tasks"]) and not pooled["not_compared"]
    for task, entry in pooled["tasks"].items():
        for key, diff in entry["scores"].items():
            assert diff.pop("deltas") == [paired["tasks"][task]["scores"][key]["delta"]]
            assert diff == paired["tasks"][task]["scores"][key], (task, key)


def test_pooled_over_two_pairs_is_the_mean_difference(files):
    """(a, b) and (a, a_again): deltas d and 0, so the pooled difference is d / 2, with half the interval."""
    one = compare_runs(files["a"], files["b"], tasks=[files["sts"]])["tasks"][files["sts"]]["scores"]
    two = compare_pooled([(files["a"], files["b"]), (files["a"], files["a_again"])], tasks=[files["sts"]])
    main, alone = two["tasks"][files["sts"]]["scores"]["main_score"], one["main_score"]
    assert main["deltas"] == [alone["delta"], 0.0]
    assert main["delta"] == pytest.approx(alone["delta"] / 2)
    assert main["ci"] == pytest.approx([alone["ci"][0] / 2, alone["ci"][1] / 2])
    assert main["p_value"] == alone["p_value"]  # halving every difference keeps which ones are extreme
    assert [p["b"]["model"] for p in two["pairs"]] == ["tri512", "tri32"]


def test_pooled_refuses_pairs_on_other_items(files, tmp_path):
    with pytest.raises(ValueError, match="not scored in every file"):
        compare_pooled([(files["a"], files["b"]), (files["a"], files["a"])], tasks=["stsb"])
    path = _sts_file(tmp_path / "pairs.tsv")
    spec = f"sts:{path}"

    def pair(folder: str) -> tuple[str, str]:
        return tuple(
            evaluate(NgramEncoder(dim=dim), [spec], out=tmp_path / folder / str(dim), show_progress=False)[
                "path"
            ]
            for dim in (32, 64)
        )

    first = pair("first")
    lines = path.read_text().splitlines()
    lines[5] = lines[5].rsplit("\t", 1)[0] + "\t2.5"  # one gold score edited: other items
    path.write_text("\n".join(lines) + "\n")
    second = pair("second")  # consistent within the pair, not with the first pair
    assert compare_pooled([second])["tasks"][spec]["scores"]["main_score"]["deltas"]
    with pytest.raises(ItemsDiffer, match="no pooled comparison exists"):
        compare_pooled([first, second])
