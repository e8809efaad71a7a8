"""Training rows for a run (a Dataset, a callable or a data spec) checked against the objective, and the
collator that tokenizes text columns and tensorises integer id columns per batch."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from sentkit.datasets.columns import INT_COLUMNS, text_columns
from sentkit.errors import ConfigError

# Objectives that contrast the rows of a batch (in-batch negatives) learn nothing from a batch of one row.
DEFAULT_MIN_BATCH_ROWS = 2


def training_rows(spec, data_root: str | Path | None = None):
    """A `datasets.Dataset` from a Dataset, a callable returning one, or a data spec, rows in file order.

    Specs (files, folders, `xnli[:langs]`, corpus names) are resolved by
    `sentkit.training_data.specs.load_training_data`; the Trainer shuffles the rows with the run's seed.
    """
    import datasets
    from sentkit.training_data.specs import load_training_data

    if isinstance(spec, datasets.Dataset):
        return spec
    if callable(spec):
        return training_rows(spec(), data_root)
    if not str(spec).strip():
        raise ConfigError(
            "data: no training data: pass --data (a file, a folder, xnli[:langs] or a corpus name)"
        )
    return load_training_data(str(spec), shuffle=False, data_root=data_root or None)


def min_batch_rows(objective) -> int:
    """Rows a batch needs for the objective's loss to mean something (`objective.min_batch_rows`, default 2)."""
    return int(getattr(objective, "min_batch_rows", DEFAULT_MIN_BATCH_ROWS))


def int_columns(objective) -> tuple[str, ...]:
    """Columns the collator turns into LongTensors: the contract's id columns plus `objective.int_columns`."""
    return tuple(dict.fromkeys((*INT_COLUMNS, *getattr(objective, "int_columns", ()))))


def extra_text_columns(objective) -> tuple[str, ...]:
    """Text columns beyond anchor/positive/negative the objective reads (`objective.extra_text_columns`)."""
    return tuple(getattr(objective, "extra_text_columns", ()))


def checked_training_rows(dataset, objective, name: str, batch_size: int, world_size: int, max_rows: int = 0):
    """The rows to train on (first `max_rows` when > 0) and whether to drop a last batch too small to train on.

    Raises a one-line ConfigError when a column the objective needs is missing, an id column holds
    non-integers, or there are fewer rows (in the data or in one batch across processes) than the
    objective's `min_batch_rows`.
    """
    missing = [c for c in objective.required_columns if c not in dataset.column_names]
    if missing:
        raise ConfigError(
            f"data: objective {name!r} needs columns {list(objective.required_columns)}; "
            f"the training data has {dataset.column_names}"
        )
    if max_rows > 0:
        dataset = dataset.select(range(min(max_rows, len(dataset))))
    for column in int_columns(objective):
        if column in dataset.column_names and not _is_int_feature(dataset.features[column]):
            raise ConfigError(
                f"data: column {column!r} must hold integer ids (or lists of them), "
                f"got {dataset.features[column]}"
            )
    need = min_batch_rows(objective)
    if len(dataset) < need:
        raise ConfigError(
            f"data: {len(dataset)} training row(s); objective {name!r} contrasts the rows of a batch "
            f"and needs at least {need}"
        )
    if batch_size * world_size < need:
        raise ConfigError(
            f"batch_size: objective {name!r} contrasts the rows of a batch and needs at least {need} "
            f"rows per step, got {batch_size} x {world_size} process(es)"
        )
    # the last batch holds len % batch_size rows: below `need` its loss is 0 (nothing to contrast)
    drop_last = 0 < len(dataset) % batch_size < need
    return dataset, drop_last


DATA_RECORD_FILE = "data.json"


def data_record(spec, dataset) -> dict[str, Any]:
    """Provenance of the rows a run trains on: the spec as given, its absolute path and (for a file) sha256,
    and a sha256 of the rows themselves, which a resume must find again (`check_same_data`)."""
    from sentkit.datasets.corpus import CORPORA

    record: dict[str, Any] = {"spec": None, "path": None, "sha256": None}
    if isinstance(spec, (str, Path)) and str(spec).strip():
        record["spec"] = str(spec)
        path = Path(str(spec).strip()).expanduser()
        if str(spec).strip() not in CORPORA and path.exists():  # a corpus name wins over a local path
            record["path"] = str(path.resolve())
            if path.is_file():
                from sentkit.cache import sha256_file

                record["sha256"] = sha256_file(path)
    record["rows"] = len(dataset)
    record["rows_sha256"] = rows_sha256(dataset)
    return record


def rows_sha256(dataset) -> str:
    """sha256 of the column names and every row's values, in order (any loader, any source)."""
    digest = hashlib.sha256(json.dumps(dataset.column_names).encode("utf-8"))
    for batch in dataset.iter(batch_size=4096):
        digest.update(json.dumps(batch, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()


def check_same_data(run_dir: Path, record: dict[str, Any]) -> None:
    """Refuse (one line) to resume a run on rows other than those it started on (its data.json)."""
    path = run_dir / DATA_RECORD_FILE
    if not path.is_file():  # a run from before data.json was written: nothing to compare with
        return
    old = json.loads(path.read_text(encoding="utf-8"))
    if old.get("rows_sha256") == record["rows_sha256"]:
        return

    # the file's sha256 when both runs read a file and it changed (what `sha256sum` shows), else the rows'
    key = "sha256" if old.get("sha256") and record["sha256"] and old["sha256"] != record["sha256"] else None
    label = "sha256" if key else "rows sha256"

    def describe(r: dict) -> str:
        where = r.get("path") or r.get("spec") or "rows passed in Python"
        return f"{where} ({r.get('rows')} rows, {label} {str(r.get(key or 'rows_sha256'))[:12]})"

    raise ConfigError(
        f"{run_dir}: the run being resumed started on other training data: {describe(old)}, now "
        f"{describe(record)}; resume on the same data, or pass --overwrite to start over"
    )


def _is_int_feature(feature) -> bool:
    import datasets

    if isinstance(feature, datasets.Value):
        return feature.dtype.startswith(("int", "uint"))
    inner = getattr(feature, "feature", None)  # Sequence / List of ids
    return inner is not None and _is_int_feature(inner)


class SentenceCollator:
    """Tokenizes the text columns of a batch on the fly, all padded to one length so they stack.

    Returns {column: {input_ids, attention_mask, ...}} for text columns (anchor, positive, negative and
    the objective's `extra_text_columns`), a LongTensor (batch,) or
    (batch, k) for each integer id column (`int_columns`), a tensor for other numeric columns and a
    list for the rest: the batch an objective's forward receives.
    """

    def __init__(
        self,
        encoder,
        max_length: int,
        int_columns: Iterable[str] = INT_COLUMNS,
        extra_text_columns: Iterable[str] = (),
    ) -> None:
        self.encoder = encoder
        self.max_length = max_length
        self.int_columns = frozenset(int_columns)
        self.extra_text_columns = tuple(extra_text_columns)

    def __call__(self, rows: Sequence[dict]) -> dict[str, Any]:
        columns = text_columns(rows[0].keys())
        columns += [c for c in self.extra_text_columns if c in rows[0] and c not in columns]
        prefix = getattr(self.encoder, "prefix", "")
        texts = [prefix + row[c] for c in columns for row in rows]
        tokens = self.encoder.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        n = len(rows)
        batch: dict[str, Any] = {
            c: {k: v[i * n : (i + 1) * n] for k, v in tokens.items()}  # (batch, seq) each
            for i, c in enumerate(columns)
        }
        for key in rows[0].keys():
            if key in columns:
                continue
            values = [row[key] for row in rows]
            if key in self.int_columns:
                batch[key] = id_tensor(key, values)  # (batch,) or (batch, k)
                continue
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            batch[key] = torch.tensor(values) if numeric else values
        return batch


def id_tensor(column: str, values: Sequence) -> torch.Tensor:
    """A LongTensor of integer ids: one per row, or an equal-length list per row."""

    def is_id(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if all(is_id(v) for v in values):
        return torch.tensor(values, dtype=torch.long)
    if all(isinstance(v, (list, tuple)) and all(is_id(x) for x in v) for v in values):
        if len({len(v) for v in values}) == 1:
            return torch.tensor(values, dtype=torch.long)
    bad = next((v for v in values if not is_id(v)), values[0])
    raise ValueError(
        f"column {column!r}: expected an integer id (or equal-length lists of ids) per row, got {bad!r}"
    )
