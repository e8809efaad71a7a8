"""Per-item values: identity hashes, the JSON / sidecar round trip, and the sidecar's sha256 check."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sentkit.errors import DataFormatError, MissingDataError
from sentkit.stats.bootstrap import point_scores
from sentkit.stats.items import TaskItems, digest_rows, read_sidecar, write_sidecar


def _sts_items(n: int = 5, gold_shift: float = 0.0) -> TaskItems:
    gold = np.arange(n, dtype=float) + gold_shift
    items = TaskItems(unit="sentence pair")
    ids = digest_rows([f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)], gold)
    items.add("en", "spearman", ids, pred=np.arange(n)[::-1] * 0.1, gold=gold)
    items.aggregate("main_score", ["en"])
    return items


def test_digest_rows_is_the_sha256_of_separated_fields():
    expected = hashlib.sha256(b"a\x1fb\x1f1.5\x1e" + b"c\x1fd\x1f2\x1e").hexdigest()
    assert digest_rows(["a", "c"], ["b", "d"], [1.5, 2]) == expected
    assert digest_rows(["a", "c"], ["b", "d"], np.array([1.5, 2.0])) != expected  # 2.0 is not 2
    with pytest.raises(ValueError, match="differ in length"):
        digest_rows(["a"], ["b", "c"])


def test_a_changed_gold_score_changes_the_data_hash():
    assert _sts_items().data_sha256() == _sts_items().data_sha256()
    assert _sts_items().data_sha256() != _sts_items(gold_shift=0.5).data_sha256()


def test_inline_round_trip_keeps_arrays_and_scores():
    items = _sts_items()
    record = items.to_record()
    assert record["groups"]["en"]["arrays"]["gold"]["data"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    back = TaskItems.from_record(record, None, "r.json")
    assert point_scores(back) == point_scores(items) == {"en": -100.0, "main_score": -100.0}


def test_large_arrays_go_through_the_store_and_come_back(monkeypatch):
    monkeypatch.setattr("sentkit.stats.items.INLINE_VALUES", 4)
    stored: dict[str, np.ndarray] = {}

    def store(array):
        stored[f"k{len(stored)}"] = array
        return f"k{len(stored) - 1}"

    items = _sts_items()
    record = items.to_record(store)
    assert record["groups"]["en"]["arrays"]["pred"] == {"dtype": "float64", "shape": [5], "sidecar": "k0"}
    back = TaskItems.from_record(record, stored, "r.json")
    np.testing.assert_array_equal(back.groups["en"].arrays["pred"], items.groups["en"].arrays["pred"])
    with pytest.raises(
        DataFormatError, match=r"r.json: tasks.x.items: expected per-item values .*sidecar array k0"
    ):
        TaskItems.from_record(record, {}, "r.json: tasks.x.items")


def test_an_edited_record_is_refused():
    record = _sts_items().to_record()
    record["groups"]["en"]["ids_sha256"] = "0" * 64
    with pytest.raises(DataFormatError, match="do not match their data_sha256"):
        TaskItems.from_record(record, None, "r.json")


def test_sidecar_sha256_is_checked(tmp_path):
    path = tmp_path / "run.items.npz"
    sha = write_sidecar(path, {"a0": np.arange(3), "a1": np.ones((2, 2), dtype=bool)})
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()
    arrays = read_sidecar(path, sha, tmp_path / "run.json")
    np.testing.assert_array_equal(arrays["a0"], [0, 1, 2])
    assert arrays["a1"].dtype == bool
    with pytest.raises(
        DataFormatError, match=r"run.items.npz: sha256 .* differs from 000000000000\.\.\. recorded in"
    ):
        read_sidecar(path, "0" * 64, tmp_path / "run.json")
    path.unlink()
    with pytest.raises(MissingDataError, match="run.items.npz: file not found .*per-item sidecar of"):
        read_sidecar(path, sha, tmp_path / "run.json")


def test_groups_are_checked_when_added():
    items = TaskItems(unit="x")
    with pytest.raises(ValueError, match="unknown statistic 'median'"):
        items.add("a", "median", "ids", value=np.ones(3))
    items.add("a", "mean", "ids", "s", value=np.ones(3))
    with pytest.raises(ValueError, match="stratum 's' has 3 items, got 4"):
        items.add("b", "mean", "ids", "s", value=np.ones(4))
    with pytest.raises(ValueError, match="non-empty arrays of one length"):
        items.add("c", "spearman", "ids", pred=np.ones(3), gold=np.ones(2))
    with pytest.raises(ValueError, match="unknown groups"):
        items.aggregate("main_score", ["a", "zz"])
