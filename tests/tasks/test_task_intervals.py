"""Every task type writes a 95% bootstrap interval beside its scores and per-item values that reproduce
them from the results file (inline or from the sidecar), so runs can be compared item by item."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.datasets.bucc import BuccSample
from sentkit.evaluate import evaluate, results_table
from sentkit.stats.bootstrap import confidence_intervals, point_scores
from sentkit.stats.items import TaskItems, read_sidecar
from sentkit.tasks import TASKS
from sentkit.tasks.bitext import BuccTask
from sentkit.tasks.task import Task

TOPICS = ("football match goal", "stock market price", "rain storm weather", "guitar concert song")


def _write(path, rows, header):
    path.write_text("\n".join("\t".join(map(str, r)) for r in [header, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def user_specs(tmp_path_factory):
    """One small file-backed task per family that reads user files (the same task classes as the benchmarks)."""
    tmp = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(0)
    labelled = [
        (f"{TOPICS[k].split()[rng.integers(3)]} {w} {i}", k, lang)
        for i, (k, lang) in enumerate((i % 4, ("de", "en")[i % 2]) for i in range(48))
        for w in [rng.choice(["today", "again", "now", "late", "big"])]
    ]
    _write(tmp / "labelled.tsv", labelled, ("text", "label", "lang"))
    train = [(f"{TOPICS[i % 4]} {i}", i % 4) for i in range(40)]
    # every third test row names another topic than its label: no classifier gets those right
    test = [
        (f"{TOPICS[(i + (i % 3 == 0)) % 4].split()[i % 3]} item {i}", i % 4, ("de", "fr")[i % 2])
        for i in range(30)
    ]
    _write(tmp / "train.tsv", train, ("text", "label"))
    _write(tmp / "test.tsv", test, ("text", "label", "lang"))
    (tmp / "src.txt").write_text("".join(f"Satz Nummer {i} {TOPICS[i % 4]}\n" for i in range(30)))
    # odd lines carry another line's number: their translations are not found
    (tmp / "tgt.txt").write_text(
        "".join(f"sentence number {i + 2 * (i % 2)} {TOPICS[i % 4]}\n" for i in range(30))
    )
    _write(tmp / "queries.tsv", [(f"q{i}", TOPICS[i]) for i in range(4)], ("id", "text"))
    _write(tmp / "corpus.tsv", [(f"d{i}", f"{TOPICS[i % 4]} doc {i}") for i in range(20)], ("id", "text"))
    qrels = [(f"q{(i + (i % 5 == 0)) % 4}", f"d{i}", 1) for i in range(20)]  # a few relevant off-topic docs
    _write(tmp / "qrels.tsv", qrels, ("query_id", "doc_id", "relevance"))
    return {
        "clustering": f"clustering:{tmp / 'labelled.tsv'}",
        "knn": f"knn:{tmp / 'labelled.tsv'}",
        "classification": f"classification:{tmp / 'train.tsv'}+{tmp / 'test.tsv'}",
        "bitext": f"bitext:{tmp / 'src.txt'}+{tmp / 'tgt.txt'}",
        "retrieval": f"retrieval:{tmp / 'queries.tsv'}+{tmp / 'corpus.tsv'}+{tmp / 'qrels.tsv'}",
    }


BUILTIN = ["stsb", "alignment-uniformity", "qabot", "tatoeba", "mewsc16-100", "knn-mewsc16-100"]


@pytest.fixture(scope="module")
def runs(user_specs, data_root, tmp_path_factory):
    """Built-in tasks on real data (Tatoeba, MewsC-16 in two languages) and every user-file family."""
    out = tmp_path_factory.mktemp("results")
    encoder = NgramEncoder(dim=128)
    english = evaluate(
        encoder, ["stsb", "alignment-uniformity", "qabot", *user_specs.values()], out=out / "a",
        data_root=data_root, show_progress=False,
    )  # fmt: skip
    multi = evaluate(
        encoder, ["tatoeba", "mewsc16-100", "knn-mewsc16-100"], langs=["de", "fr"], out=out / "b",
        data_root=data_root, show_progress=False,
    )  # fmt: skip
    assert not english["errors"] and not multi["errors"]
    return {**english["tasks"], **multi["tasks"]}, [english, multi]


def _items_from_file(run: dict, task: str) -> TaskItems:
    """The task's per-item values as `sentkit compare` reads them: from the file, sidecar checked."""
    from pathlib import Path

    path = Path(run["path"])
    saved = json.loads(path.read_text())
    ref = saved.get("items_file")
    sidecar = read_sidecar(path.parent / ref["path"], ref["sha256"], path) if ref else None
    return TaskItems.from_record(saved["tasks"][task]["items"], sidecar, f"{path}: {task}")


@pytest.mark.parametrize("family", ["clustering", "knn", "classification", "bitext", "retrieval", *BUILTIN])
def test_every_task_type_has_intervals_and_items_that_reproduce_its_scores(runs, user_specs, family):
    tasks, results = runs
    name = user_specs.get(family, family)
    record = tasks[name]
    low, high = record["main_score_ci"]
    assert low <= record["main_score"] <= high and low < high
    assert list(record).index("main_score_ci") == list(record).index("main_score") + 1  # beside it
    groups = set(record["items"]["groups"])
    assert groups and groups <= set(record["ci"]) and "main_score" in record["ci"]
    for key in record["ci"]:
        assert record["ci"][key][0] <= record["scores"][key] + 1e-9 and key in record["scores"]
    run = next(r for r in results if name in r["tasks"])
    points = point_scores(_items_from_file(run, name))
    for key in points.keys() & record["scores"].keys():
        assert points[key] == pytest.approx(record["scores"][key], abs=1e-9), key
    assert record["items"]["data_sha256"] and record["bootstrap_s"] < 30


def test_breakdowns_get_their_own_intervals(runs):
    tasks, _ = runs
    assert set(tasks["tatoeba"]["ci"]) == {
        "main_score",
        "deu",
        "fra",
        "deu->eng",
        "eng->deu",
        "fra->eng",
        "eng->fra",
    }
    assert set(tasks["mewsc16-100"]["ci"]) == {"main_score", "de", "fr"}
    assert set(tasks["knn-mewsc16-100"]["ci"]) == {"main_score", "de->de", "fr->fr"}
    assert set(tasks["qabot"]["ci"]) == {"main_score", "map", "mrr", "p@1", "p@5"}
    assert set(tasks["alignment-uniformity"]["ci"]) == {"main_score", "alignment", "uniformity"}


def test_large_item_arrays_live_in_a_sidecar_named_with_its_sha256(runs):
    import hashlib
    from pathlib import Path

    _, (english, _) = runs
    path = Path(english["path"])
    saved = json.loads(path.read_text())
    sidecar = path.parent / saved["items_file"]["path"]
    assert sidecar.name == path.name.replace(".json", ".items.npz")
    assert saved["items_file"]["sha256"] == hashlib.sha256(sidecar.read_bytes()).hexdigest()
    stsb = saved["tasks"]["stsb"]["items"]["groups"]["en"]
    assert stsb["n"] == 1379 and "sidecar" in stsb["arrays"]["pred"]  # 2 x 1379 values: too many to inline
    qabot = saved["tasks"]["qabot"]["items"]["groups"]["map"]
    assert "data" in qabot["arrays"]["value"]  # 4 x 20 values stay in the JSON
    assert saved["bootstrap"] == {"method": "percentile", "level": 0.95, "resamples": 1000, "seed": 0}


def test_markdown_table_shows_the_interval(runs):
    _, (english, _) = runs
    table = results_table(english)
    low, high = english["tasks"]["stsb"]["main_score_ci"]
    assert f"| stsb | {english['tasks']['stsb']['main_score']:.2f} | [{low:.2f}, {high:.2f}] |" in table
    assert "95% CI: percentile bootstrap over each task's test items, 1000 resamples, seed 0" in table
    assert "en " in table and f"[{low:.2f}, {high:.2f}]" in table.split("- **stsb**")[1]


def _bucc_sample(n: int = 40) -> tuple[BuccSample, dict]:
    rng = np.random.default_rng(4)
    table, src_ids, src, trg_ids, trg, gold = {}, [], [], [], [], []
    for i in range(n):
        v = rng.normal(size=16)
        noise = 0.1 if i < n // 2 else 3.0  # half the pairs are findable
        table[f"satz {i}"], table[f"sentence {i}"] = v, v + rng.normal(size=16) * noise
        (
            src_ids.append(f"de-{i}"),
            src.append(f"satz {i}"),
            trg_ids.append(f"en-{i}"),
            trg.append(f"sentence {i}"),
        )
        gold.append((f"de-{i}", f"en-{i}"))
    return BuccSample("de-en", src_ids, src, trg_ids, trg, gold), table


class _DictEncoder:
    name = "dict"

    def __init__(self, table):
        self.table = table

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.stack([self.table[s] for s in sentences]).astype(np.float32)


def test_bucc_items_reproduce_the_two_fold_f1():
    sample, table = _bucc_sample()
    task = BuccTask(name="bucc", languages=("de-en",), _data={"de-en": sample})
    scores = task.evaluate(_DictEncoder(table))
    assert 20 < scores["main_score"] < 100
    points = point_scores(task.items)
    for key in ("de-en_cosine", "de-en_margin", "cosine", "margin", "main_score"):
        assert points[key] == pytest.approx(scores[key], abs=1e-9), key
    per_source = task.items.groups["de-en_margin"].arrays
    assert per_source["gold"].tolist() == [1] * 40 and set(per_source["fold"].tolist()) == {0, 1}
    low, high = confidence_intervals(task.items)["main_score"]
    assert low < scores["main_score"] < high


def test_items_that_do_not_reproduce_the_score_fail_the_task(tmp_path, monkeypatch):
    class Drifted(Task):
        def evaluate(self, encoder):
            self.items = TaskItems(unit="row")
            self.items.add("en", "percent", "ids", hit=np.array([True, False, False, False]))
            self.items.aggregate("main_score", ["en"])
            return {"main_score": 50.0, "en": 50.0}  # the items say 25

    monkeypatch.setitem(TASKS._items, "_t-drifted", lambda **kw: Drifted(name="_t-drifted"))
    res = evaluate(NgramEncoder(), ["_t-drifted"], out=tmp_path, show_progress=False)
    assert res["errors"]["_t-drifted"] == {
        "type": "RuntimeError",
        "message": "task '_t-drifted': its per-item values give main_score = 25.0, not 50.0",
    }


# ---- intervals over too few items ---------------------------------------------------------------------
README_PAIRS = [  # the README's own `sts:` example: 4 pairs
    ("A man is playing a guitar.", "Someone plays an instrument.", 4.2),
    ("A man is playing a guitar.", "The stock market fell today.", 0.1),
    ("A woman slices an onion.", "Someone is cutting vegetables.", 3.8),
    ("Ein Hund läuft im Park.", "A dog runs in the park.", 5.0),
]


def test_a_four_pair_sts_file_warns_that_its_interval_means_nothing(tmp_path):
    from sentkit.errors import DataWarning

    spec = f"sts:{_write(tmp_path / 'pairs.tsv', README_PAIRS, ('sentence1', 'sentence2', 'score'))}"
    with pytest.warns(DataWarning) as caught:
        res = evaluate(NgramEncoder(dim=128), [spec], out=tmp_path / "res", show_progress=False)
    record = res["tasks"][spec]
    low, high = record["main_score_ci"]
    expected = (
        "only 4 items: too few for a bootstrap interval (at least 30 needed), so its "
        f"95% CI [{low:.2f}, {high:.2f}] does not measure the uncertainty"
    )
    assert record["warnings"] == [expected]
    assert [str(w.message) for w in caught] == [f"task {spec}: {expected}"]
    saved = json.loads(open(res["path"]).read())
    assert saved["tasks"][spec]["warnings"] == [expected]
    assert f"- **{spec}**: warning: only 4 items" in results_table(res)


def _items(n: int, hits: np.ndarray | None = None, strata: int = 1) -> TaskItems:
    items = TaskItems(unit="sentence")
    rng = np.random.default_rng(0)
    for s in range(strata):
        hit = rng.random(n) < 0.5 if hits is None else hits
        items.add(f"l{s}", "percent", f"ids{s}", hit=hit)
    items.aggregate("main_score", [f"l{s}" for s in range(strata)])
    return items


def test_interval_warnings_threshold_and_zero_width():
    from sentkit.stats.bootstrap import MIN_ITEMS, interval_warnings

    assert MIN_ITEMS == 30
    ok = _items(30)
    assert interval_warnings(ok, confidence_intervals(ok)) == []
    few = _items(29)
    assert interval_warnings(few, confidence_intervals(few))[0].startswith("only 29 items: too few")
    mixed = TaskItems(unit="sentence")
    mixed.add("de", "percent", "a", hit=np.ones(100, dtype=bool))
    mixed.add("fr", "percent", "b", hit=np.zeros(5, dtype=bool))
    mixed.aggregate("main_score", ["de", "fr"])
    assert interval_warnings(mixed, confidence_intervals(mixed)) == [
        "1 of its 2 item sets hold fewer than 30 items (fr: 5): their 95% CIs do not measure the uncertainty"
    ]
    perfect = _items(200, hits=np.ones(200, dtype=bool))  # every resample scores 100
    assert interval_warnings(perfect, confidence_intervals(perfect)) == [
        "every resample gave main_score 100.00, so its 95% CI [100.00, 100.00] has no width and does not "
        "measure the uncertainty"
    ]
