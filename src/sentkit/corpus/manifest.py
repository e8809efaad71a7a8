"""`manifest.json`: what a shard folder holds, and the checks a rerun makes before it adds to it.

It records the settings that shape the shards, the model (name, fingerprint, dim), the inputs (path, format,
and once read to the end their row count, size and mtime), one record per finished shard (input, first row,
rows, bytes, sha256 of the file, sha256 of the texts it was encoded from), versions, and one entry per run.
A shard is listed only after its file is complete, so a listed shard is a finished one; the manifest is
rewritten atomically, so a kill leaves the previous version.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.cache import sha256_file
from sentkit.corpus.readers import InputFile
from sentkit.corpus.shards import InputEnd, ShardSettings
from sentkit.errors import SentkitError
from sentkit.provenance import package_versions

MANIFEST = "manifest.json"
FORMAT = "sentkit-shards/1"


class ManifestMismatch(SentkitError):
    """A shard folder whose manifest does not fit the request or its own files: refused, nothing written."""


class Manifest:
    """The manifest of one shard folder, in memory; `save` writes it."""

    def __init__(self, data: dict, folder: Path) -> None:
        self.data = data
        self.folder = Path(folder)

    # ---- creating and reading --------------------------------------------------------------------------
    @classmethod
    def new(cls, folder: Path, settings: ShardSettings, model: dict, inputs: list[InputFile]) -> Manifest:
        data = {
            "format": FORMAT,
            "complete": False,
            "rows": 0,
            "settings": settings.as_dict(),
            "model": model,
            "inputs": [
                {"path": s.path, "resolved": str(Path(s.path).resolve()), "format": s.format} for s in inputs
            ],
            "shards": [],
            "versions": package_versions(),
            "runs": [],
        }
        return cls(data, folder)

    @classmethod
    def load(cls, folder: Path) -> Manifest | None:
        """The folder's manifest, None when it has none; unreadable JSON or a foreign file is refused."""
        path = Path(folder) / MANIFEST
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ManifestMismatch(
                f"{path}: cannot be read as JSON ({err}); not a sentkit shard folder"
            ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ManifestMismatch(
                f"{path}: expected a manifest with format {FORMAT!r}; not a sentkit shard folder"
            )
        return cls(data, folder)

    def save(self) -> None:
        self.data["shards"].sort(key=lambda r: (r["input"], r["chunk"]))
        self.data["rows"] = sum(r["rows"] for r in self.data["shards"])
        atomic_write_json(self.folder / MANIFEST, self.data)

    # ---- what it holds -----------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.folder / MANIFEST

    @property
    def complete(self) -> bool:
        return bool(self.data.get("complete"))

    @property
    def settings(self) -> ShardSettings:
        return ShardSettings(**self.data["settings"])

    @property
    def shards(self) -> list[dict]:
        return self.data["shards"]

    def done(self) -> dict[int, dict[int, dict]]:
        """input index -> chunk index -> shard record, for every finished shard."""
        out: dict[int, dict[int, dict]] = {}
        for record in self.shards:
            out.setdefault(record["input"], {})[record["chunk"]] = record
        return out

    def known_rows(self, index: int) -> int | None:
        """The row count of input `index` when a run read it to its end, else None."""
        return self.data["inputs"][index].get("rows")

    def add_shard(self, record: dict) -> None:
        self.data["shards"] = [r for r in self.shards if r["name"] != record["name"]] + [record]
        self.data.setdefault("model", {})["dim"] = record["dim"]

    def end_input(self, end: InputEnd) -> None:
        entry = self.data["inputs"][end.input]
        entry["rows"] = end.rows
        stat = os.stat(entry["resolved"])
        entry["size"], entry["mtime_ns"] = stat.st_size, stat.st_mtime_ns

    def mark_complete(self) -> None:
        """Called when a run ended without error: complete once every input was read to its end and its
        shards cover all its rows (with Ray, an input's end can be reported before its last shard is)."""
        covered: dict[int, int] = {}
        for record in self.shards:
            covered[record["input"]] = covered.get(record["input"], 0) + record["rows"]
        ended = all("rows" in e for e in self.data["inputs"])
        if ended and any(covered.get(i, 0) != e["rows"] for i, e in enumerate(self.data["inputs"])):
            raise RuntimeError(
                f"{self.path}: the shards do not cover every input row; rerun to encode the rest"
            )
        self.data["complete"] = ended

    def inputs_unchanged(self) -> bool:
        """Every input still has the size and modification time it had when it was read to its end."""
        for entry in self.data["inputs"]:
            try:
                stat = os.stat(entry["resolved"])
            except OSError:
                return False
            if (stat.st_size, stat.st_mtime_ns) != (entry.get("size"), entry.get("mtime_ns")):
                return False
        return True

    # ---- checks before a run adds to the folder ----------------------------------------------------------
    def check_request(self, settings: ShardSettings, model: dict, inputs: list[InputFile]) -> None:
        """Refuse (one line) a request that would mix other settings, another model or other inputs in."""
        where = self.path
        recorded = self.data["settings"]
        for key, value in settings.as_dict().items():
            if recorded.get(key) != value:
                raise ManifestMismatch(
                    f"{where}: written with {key}={recorded.get(key)!r}, this run asks {key}={value!r}; "
                    "repeat the first run's options or encode into a new folder"
                )
        if self.data["model"].get("fingerprint") != model["fingerprint"]:
            raise ManifestMismatch(
                f"{where}: written by model {self.data['model'].get('name')!r} "
                f"({self.data['model'].get('fingerprint')}), not {model['name']!r} ({model['fingerprint']}); "
                "encode into a new folder"
            )
        recorded_inputs = [(e["resolved"], e["format"]) for e in self.data["inputs"]]
        asked = [(str(Path(s.path).resolve()), s.format) for s in inputs]
        if recorded_inputs != asked:
            raise ManifestMismatch(
                f"{where}: written for input {_describe(recorded_inputs)}, this run reads {_describe(asked)}; "
                "encode into a new folder"
            )

    def check_shard_files(self) -> None:
        """Every listed shard file exists with the recorded size and sha256 (edited or truncated: refused)."""
        for record in self.shards:
            path = self.folder / record["name"]
            if not path.is_file():
                raise ManifestMismatch(f"{path}: listed in {MANIFEST} but missing; encode into a new folder")
            size = path.stat().st_size
            if size != record["bytes"]:
                raise ManifestMismatch(
                    f"{path}: {size} bytes, {MANIFEST} records {record['bytes']} (truncated or replaced); "
                    "encode into a new folder"
                )
            if sha256_file(path) != record["sha256"]:
                raise ManifestMismatch(
                    f"{path}: content differs from the sha256 in {MANIFEST} (edited after it was written); "
                    "encode into a new folder"
                )

    def add_run(self, run: dict) -> None:
        self.data["runs"].append(run)


def _describe(inputs: list[tuple[str, str]]) -> str:
    names = ", ".join(path for path, _ in inputs[:2])
    return names + (f" and {len(inputs) - 2} more" if len(inputs) > 2 else "")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
