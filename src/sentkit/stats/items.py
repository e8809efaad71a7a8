"""The per-item values behind a task's scores, so its scores can be recomputed on resampled items.

A task fills a `TaskItems` while it evaluates: one `ItemGroup` per breakdown key (an STS set, a language,
a language pair) holding, item by item, what its metric needs (the model's cosine and the gold score per
STS pair, 0/100 per Tatoeba sentence, per-seed cluster ids per clustering text), plus `aggregates`
(main_score and other means of groups). Groups on the same items share a `stratum` and are resampled
together. Each group carries a hash of its items' identity (texts, gold values), so two runs can be checked
to be on the same items before they are compared.

In a results file the arrays are inline when small and otherwise in the sidecar `<results>.items.npz`,
which the results file names with its sha256.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_bytes
from sentkit.cache import sha256_file
from sentkit.errors import DataFormatError, MissingDataError
from sentkit.stats.statistics import STATISTICS

INLINE_VALUES = 1000  # a task whose arrays hold at most this many numbers keeps them in the results JSON
COMBINES = ("mean", "negative_sum")  # how an aggregate joins its groups' scores


def digest_rows(*columns: Iterable) -> str:
    """sha256 of rows made of the given parallel columns (texts, labels, gold scores): the items' identity."""
    h = hashlib.sha256()
    cols = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in columns]
    if len({len(c) for c in cols}) > 1:
        raise ValueError(f"columns differ in length: {[len(c) for c in cols]}")
    for row in zip(*cols):
        h.update("\x1f".join(map(str, row)).encode("utf-8") + b"\x1e")
    return h.hexdigest()


@dataclass
class ItemGroup:
    """The items behind one score: `arrays` with one row per item, scored by `statistic` (bootstrap.py)."""

    statistic: str
    stratum: str
    ids_sha256: str
    arrays: dict[str, np.ndarray]

    @property
    def n(self) -> int:
        return len(next(iter(self.arrays.values())))


@dataclass
class Aggregate:
    """A score made of group scores: their mean, or minus their sum (alignment + uniformity)."""

    combine: str
    groups: list[str]


@dataclass
class TaskItems:
    """Everything a task's scores are recomputed from; `unit` says what one item is, for readers."""

    unit: str
    groups: dict[str, ItemGroup] = field(default_factory=dict)
    aggregates: dict[str, Aggregate] = field(default_factory=dict)
    extra_sha256: str = ""  # inputs that are not items but change the scores (a classifier's training set)

    def add(self, key: str, statistic: str, ids_sha256: str, stratum: str | None = None, **arrays) -> None:
        """Add the group scored as `key`; groups with the same `stratum` (default: the key) share items."""
        if statistic not in STATISTICS:
            raise ValueError(f"unknown statistic {statistic!r} (known: {', '.join(STATISTICS)})")
        arrays = {name: np.asarray(a) for name, a in arrays.items()}
        lengths = {name: len(a) for name, a in arrays.items()}
        if not arrays or len(set(lengths.values())) != 1 or 0 in lengths.values():
            raise ValueError(f"group {key!r}: expected non-empty arrays of one length, got {lengths}")
        group = ItemGroup(statistic, stratum or key, ids_sha256, arrays)
        same = [g for g in self.groups.values() if g.stratum == group.stratum]
        if same and same[0].n != group.n:
            raise ValueError(f"group {key!r}: stratum {group.stratum!r} has {same[0].n} items, got {group.n}")
        self.groups[key] = group

    def aggregate(self, name: str, groups: Iterable[str], combine: str = "mean") -> None:
        groups = list(groups)
        missing = [g for g in groups if g not in self.groups]
        if missing or not groups or combine not in COMBINES:
            raise ValueError(f"aggregate {name!r}: unknown groups {missing} or combine {combine!r}")
        self.aggregates[name] = Aggregate(combine, groups)

    def strata(self) -> dict[str, int]:
        """Stratum name -> item count, in first-seen order."""
        out: dict[str, int] = {}
        for group in self.groups.values():
            out.setdefault(group.stratum, group.n)
        return out

    def data_sha256(self) -> str:
        """One hash of every group's items, strata and statistic (and `extra_sha256`)."""
        layout = {
            key: [g.statistic, g.stratum, g.n, g.ids_sha256, sorted(g.arrays)]
            for key, g in self.groups.items()
        }
        text = json.dumps({"groups": layout, "extra": self.extra_sha256}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_record(self, store: Callable[[np.ndarray], str] | None = None) -> dict:
        """JSON form; when `store` is given and the arrays are large, each goes through it (the sidecar)
        and the record keeps the key it returns."""
        total = sum(a.size for g in self.groups.values() for a in g.arrays.values())
        outside = store is not None and total > INLINE_VALUES
        groups = {}
        for key, g in self.groups.items():
            arrays = {}
            for name, a in g.arrays.items():
                entry: dict = {"dtype": str(a.dtype), "shape": list(a.shape)}
                entry.update({"sidecar": store(a)} if outside else {"data": a.tolist()})
                arrays[name] = entry
            groups[key] = {
                "statistic": g.statistic,
                "stratum": g.stratum,
                "n": g.n,
                "ids_sha256": g.ids_sha256,
                "arrays": arrays,
            }
        return {
            "unit": self.unit,
            "data_sha256": self.data_sha256(),
            "extra_sha256": self.extra_sha256,
            "groups": groups,
            "aggregates": {k: {"combine": a.combine, "groups": a.groups} for k, a in self.aggregates.items()},
        }

    @classmethod
    def from_record(cls, record: dict, sidecar: Mapping[str, np.ndarray] | None, where: str) -> TaskItems:
        """Rebuild from `to_record`'s form; `where` (file and task) names the place of any error."""
        try:
            items = cls(record["unit"], extra_sha256=record.get("extra_sha256", ""))
            for key, g in record["groups"].items():
                arrays = {}
                for name, entry in g["arrays"].items():
                    if "sidecar" in entry:
                        if sidecar is None or entry["sidecar"] not in sidecar:
                            raise KeyError(f"sidecar array {entry['sidecar']}")
                        value = sidecar[entry["sidecar"]]
                    else:
                        value = np.asarray(entry["data"], dtype=entry["dtype"])
                    arrays[name] = np.asarray(value, dtype=entry["dtype"]).reshape(entry["shape"])
                items.add(key, g["statistic"], g["ids_sha256"], g["stratum"], **arrays)
            for name, a in record["aggregates"].items():
                items.aggregate(name, a["groups"], a["combine"])
        except (KeyError, TypeError, ValueError) as err:
            raise DataFormatError(
                where, None, f"expected per-item values as sentkit writes them ({err})"
            ) from None
        if items.data_sha256() != record.get("data_sha256"):
            raise DataFormatError(where, None, "per-item values do not match their data_sha256 (edited?)")
        return items


def write_sidecar(path: str | Path, arrays: Mapping[str, np.ndarray]) -> str:
    """Write `arrays` as one compressed .npz, atomically; returns its sha256."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    data = buf.getvalue()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def read_sidecar(path: str | Path, sha256: str, results: str | Path) -> dict[str, np.ndarray]:
    """The sidecar's arrays, after checking it is the very file `results` was written with."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, f"the per-item sidecar of {results}; keep it beside the results file")
    actual = sha256_file(path)
    if actual != sha256:
        raise DataFormatError(
            path,
            None,
            f"sha256 {actual[:12]}... differs from {sha256[:12]}... recorded in {results} (altered?)",
        )
    with np.load(path, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}
