"""`manifest.json`: what a shard folder holds, and the checks a rerun makes before it adds to it.

It records the settings that shape the shards, the model (name, fingerprint, dim), the inputs (path, format,
and once read to the end their row count and the identity they had when they were opened: size, mtime,
inode, device), one record per finished shard (input, first row, rows, bytes, sha256 of the file, sha256 of
the texts it was encoded from), versions, and one entry per run. A shard is listed only after its file is
complete, so a listed shard is a finished one; the manifest is rewritten atomically, so a kill leaves the
previous version. Before a folder is added to or read, its shards must tile every input's rows (coverage)
and each input must still be the file they were encoded from (its identity, else its texts).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.cache import sha256_file
from sentkit.corpus.identity import IDENTITY_KEYS, file_identity, same_identity, trusted_identity
from sentkit.corpus.readers import InputFile
from sentkit.corpus.shards import InputEnd, ShardSettings, ShardWork, iter_work, shard_name
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
    def new(
        cls, folder: Path, settings: ShardSettings, model: dict, inputs: list[InputFile], source: str = ""
    ) -> Manifest:
        """`source`: the --input as given; `input_folder` records it resolved when it is a folder (None for a
        file): `mine` never writes into it, as the next encode of that folder would read a new file there."""
        data = {
            "format": FORMAT,
            "complete": False,
            "rows": 0,
            "settings": settings.as_dict(),
            "model": model,
            "inputs": [
                {"path": s.path, "resolved": str(Path(s.path).resolve()), "format": s.format} for s in inputs
            ],
            "input_folder": str(Path(source).resolve()) if source and Path(source).is_dir() else None,
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
        """Input `end.input` was read to its end: its row count, and the identity it had when it was opened
        (none when the engine did not report one: the next run or `mine` then compares its texts)."""
        entry = self.data["inputs"][end.input]
        for key in (*IDENTITY_KEYS, "stat_ns"):
            entry.pop(key, None)
        entry["rows"] = end.rows
        if end.identity is not None:
            entry.update(end.identity)

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

    def input_unchanged(self, index: int) -> bool:
        """Input `index` has the identity recorded when it was read to its end, and that identity can be
        trusted (identity.py); False means its texts must be compared with the shards' digests."""
        entry = self.data["inputs"][index]
        try:
            current = file_identity(entry["resolved"])
        except OSError:
            return False
        return same_identity(entry, current) and trusted_identity(entry)

    def inputs_unchanged(self) -> bool:
        return all(self.input_unchanged(i) for i in range(len(self.data["inputs"])))

    def verify_texts(self, index: int) -> dict | None:
        """Read input `index` through and compare each listed shard's rows with its `text_sha256` and the row
        count with the recorded one (InputChanged when they differ); returns the identity the file had while
        it was read. Rows no shard covers are a gap (ManifestMismatch)."""
        entry = self.data["inputs"][index]
        source = InputFile(entry["resolved"], entry["format"])
        done = self.done().get(index, {})
        for item in iter_work(source, index, self.settings, done, entry.get("rows")):
            if isinstance(item, ShardWork):
                last = item.first_row + len(item.texts) - 1
                raise ManifestMismatch(
                    f"{self.path}: rows {item.first_row}-{last} of {entry['path']} have no shard; "
                    "rerun the same sentkit encode to encode them"
                )
            if isinstance(item, InputEnd):
                return item.identity
        return None

    # ---- coverage: the shards tile every input's rows ---------------------------------------------------
    def coverage_errors(self) -> tuple[list[str], list[str]]:
        """(records that cannot be right: overlapping, misplaced, unknown; rows of a fully read input that
        no shard covers), each as a message. The first kind means the manifest was edited: refused; the
        second can be encoded again."""
        size, fmt = self.settings.shard_size, self.settings.format
        inputs = self.data["inputs"]
        wrong: list[str] = []
        seen: set[tuple[int, int]] = set()
        for record in self.shards:
            index, chunk = record.get("input"), record.get("chunk")
            name = record.get("name")
            if (
                not isinstance(index, int)
                or not 0 <= index < len(inputs)
                or not isinstance(chunk, int)
                or chunk < 0
            ):
                wrong.append(f"{name} names input {index!r}, chunk {chunk!r}")
                continue
            if not isinstance(name, str) or name != Path(name).name or name in ("", ".", ".."):
                wrong.append(f"shard {name!r} is a path outside the shard folder (a shard is a file in it)")
                continue
            first = chunk * size + 1
            known = inputs[index].get("rows")
            rows = size if known is None else min(size, known - first + 1)
            if (index, chunk) in seen:
                wrong.append(f"{name} is listed twice")
            elif name != shard_name(index, chunk, fmt) or record.get("first_row") != first:
                wrong.append(
                    f"{name} records rows from {record.get('first_row')}, chunk {chunk} starts at {first}"
                )
            elif rows <= 0:
                wrong.append(f"{name} lies past the {known} rows of {inputs[index]['path']}")
            elif not _rows_fit(record.get("rows"), rows, known is None):
                wrong.append(
                    f"{name} records {record.get('rows')} rows, expected {rows} (rows {first}-{first + rows - 1})"
                )
            seen.add((index, chunk))
        missing: list[str] = []
        for index, entry in enumerate(inputs):
            if entry.get("rows") is None:
                continue
            for chunk in range(-(-entry["rows"] // size)):
                if (index, chunk) not in seen:
                    first = chunk * size + 1
                    last = min(first + size - 1, entry["rows"])
                    missing.append(f"rows {first}-{last} of {entry['path']}")
        return wrong, missing

    def check_records(self) -> list[str]:
        """Refuse a manifest whose shard records cannot be right (edited by hand); returns the row ranges of
        fully read inputs that no shard covers (a record deleted: those shards can be encoded again)."""
        wrong, missing = self.coverage_errors()
        if wrong:
            more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
            raise ManifestMismatch(
                f"{self.path}: {wrong[0]}{more}; the manifest was edited: encode into a new folder"
            )
        return missing

    def check_covered(self) -> None:
        """Refuse a folder whose shards do not cover every row of every input exactly once (for reading)."""
        missing = self.check_records()
        if missing:
            more = f" (and {len(missing) - 1} more ranges)" if len(missing) > 1 else ""
            raise ManifestMismatch(
                f"{self.path}: {missing[0]}{more} have no shard; rerun the same sentkit encode to encode them"
            )
        total = sum(r["rows"] for r in self.shards)
        if self.data.get("rows") != total:
            raise ManifestMismatch(
                f"{self.path}: records {self.data.get('rows')} rows, its shards hold {total}; "
                "the manifest was edited: encode into a new folder"
            )

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


def _rows_fit(recorded, expected: int, last_unknown: bool) -> bool:
    """A record's row count is the chunk's: the shard size, or up to it for a chunk that may be the last of an
    input not yet read to its end."""
    if isinstance(recorded, bool) or not isinstance(recorded, int):
        return False
    return recorded == expected or (last_unknown and 0 < recorded < expected)


def _describe(inputs: list[tuple[str, str]]) -> str:
    names = ", ".join(path for path, _ in inputs[:2])
    return names + (f" and {len(inputs) - 2} more" if len(inputs) > 2 else "")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
