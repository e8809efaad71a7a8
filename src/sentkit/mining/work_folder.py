"""A mining run's work folder, `OUT.work/` beside `--out`: what a killed run has finished, so that the same
command resumes it.

The folder holds `manifest.json` (the run's identity and, per k-NN direction, the query blocks finished), each
direction's neighbour lists as two .npy files (similarities and rows, (queries, k), written block by block),
the trained index of an approximate direction (so a resumed run quantizes with the same codebook) and the
exact neighbours of its recall sample. A block is listed as finished only after its rows are flushed to disk,
and the manifest is replaced atomically, so a run killed at any point (Ctrl-C, SIGTERM, kill -9, a dead
worker) loses at most the blocks in flight. The pairs are computed from the lists once both directions are
complete, so a resumed run writes the TSV an uninterrupted run writes, byte for byte.

The identity is everything that decides the lists: both sides (a shard folder's shard records and model, a
text input's file identity), the model, k, the index settings, the block size and, for an approximate index,
the number of key parts (each part fetches its own candidates). A resume under another identity is refused in
one line naming what changed; the scoring, retrieval and threshold act after the lists and may change. The
folder is removed once the TSV and its sidecar are written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_bytes, atomic_write_json, check_output_node
from sentkit.corpus.manifest import ManifestMismatch

WORK_SUFFIX = ".work"
MANIFEST = "manifest.json"
WHAT = "sentkit mine work folder: finished k-NN blocks of a run that has not written its pairs yet"


def work_path(out: str | Path) -> Path:
    """The work folder of the run writing `out`: `pairs.tsv` -> `pairs.tsv.work`."""
    return Path(f"{out}{WORK_SUFFIX}")


def first_difference(old, new, where: str = "") -> tuple[str, object, object] | None:
    """(dotted key, old value, new value) of the first difference between two JSON-like values, or None."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            found = first_difference(old.get(key), new.get(key), f"{where}.{key}" if where else key)
            if found:
                return found
        return None
    return None if old == new else (where, old, new)


class MemoryWork:
    """The work record of a run without a folder (the library's `mine` on vectors): lists in memory, nothing
    resumed."""

    def __init__(self) -> None:
        self.resumed = {"forward": 0, "backward": 0}  # query blocks a stopped run had finished
        self.values: dict[tuple[str, str], object] = {}
        self.lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def neighbour_lists(self, direction: str, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        if direction not in self.lists:
            self.lists[direction] = (
                np.full((rows, k), -np.inf, dtype=np.float32),
                np.full((rows, k), -1, dtype=np.int64),
            )
        return self.lists[direction]

    def done(self, direction: str) -> set[int]:
        return set()

    def mark_done(self, direction: str, block: int) -> None:
        pass

    def get(self, direction: str, name: str):
        return self.values.get((direction, name))

    def put(self, direction: str, name: str, value) -> None:
        self.values[(direction, name)] = value

    def array(self, direction: str, name: str) -> np.ndarray | None:
        return self.values.get((direction, name))  # type: ignore[return-value]

    def put_array(self, direction: str, name: str, value: np.ndarray) -> None:
        self.values[(direction, name)] = value

    def scratch(self, direction: str, name: str, shape: tuple, dtype) -> np.ndarray:
        """An array for intermediate lists, recomputed by every run (never resumed from)."""
        return np.empty(shape, dtype=dtype)

    def remove(self) -> None:
        pass


class WorkFolder(MemoryWork):
    """`OUT.work/`: opened for `identity`, resumed when it holds the same identity, refused when another."""

    def __init__(self, out: str | Path, identity: dict, log=None) -> None:
        super().__init__()
        self.path = work_path(out)
        self.identity = json.loads(json.dumps(identity))  # as it reads back from JSON
        check_output_node(self.path, "directory")
        manifest = self.path / MANIFEST
        if manifest.is_file():
            self.data = self._read(manifest)
            changed = first_difference(self.data.get("identity"), self.identity)
            if changed and not self.finished_blocks():  # nothing finished to lose: start again
                self.remove()
                self.path.mkdir(parents=True, exist_ok=True)
                self.data = {"what": WHAT, "identity": self.identity, "directions": {}}
                self._save()
                changed = None
            if changed:
                key, before, now = changed
                raise ManifestMismatch(
                    f"{self.path}: holds an unfinished run with another {key} ({_short(before)} there, "
                    f"{_short(now)} now): rerun it with the same inputs and options to resume, or delete "
                    f"{self.path} to start again"
                )
            self.resumed = {d: len(v.get("done", [])) for d, v in self.data["directions"].items()}
            self.resumed = {"forward": 0, "backward": 0} | self.resumed
            if log and any(self.resumed.values()):
                log(
                    f"{self.path}: resuming ({self.resumed['forward']} forward and {self.resumed['backward']} "
                    "backward query blocks finished)"
                )
        else:
            if self.path.exists() and any(self.path.iterdir()):
                raise ManifestMismatch(
                    f"{self.path}: exists without {MANIFEST}, so it is not a sentkit mine work folder; move it "
                    "or choose another --out"
                )
            self.path.mkdir(parents=True, exist_ok=True)
            self.data = {"what": WHAT, "identity": self.identity, "directions": {}}
            self._save()

    def finished_blocks(self) -> int:
        """How many query blocks the folder holds finished, both directions together."""
        return sum(len(d.get("done", [])) for d in self.data["directions"].values())

    def discard_if_empty(self) -> None:
        """After a failed run: the folder goes when it holds no finished block (nothing to resume)."""
        if not self.finished_blocks():
            self.remove()

    def _read(self, manifest: Path) -> dict:
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ManifestMismatch(
                f"{manifest}: not readable as a work manifest ({err}); delete {self.path}"
            ) from None
        if (
            not isinstance(data, dict)
            or data.get("what") != WHAT
            or not isinstance(data.get("directions"), dict)
        ):
            raise ManifestMismatch(
                f"{manifest}: not a sentkit mine work manifest; delete {self.path} to start again"
            )
        return data

    def _save(self) -> None:
        atomic_write_json(self.path / MANIFEST, self.data)

    def _direction(self, direction: str) -> dict:
        return self.data["directions"].setdefault(direction, {"done": []})

    def neighbour_lists(self, direction: str, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The direction's (sims, rows) lists as writable memory maps, created (filled with -inf / -1) the
        first time; a file of another shape is refused."""
        if direction in self.lists:
            return self.lists[direction]
        opened = []
        for name, dtype, fill in (("sims", np.float32, -np.inf), ("rows", np.int64, -1)):
            path = self.path / f"{direction}.{name}.npy"
            record = self._direction(direction)
            if path.is_file() and record.get("lists") == [rows, k]:
                array = np.lib.format.open_memmap(path, mode="r+")
                if array.shape != (rows, k) or array.dtype != dtype:
                    raise ManifestMismatch(
                        f"{path}: holds {array.shape} {array.dtype}, expected ({rows}, {k}); delete {self.path}"
                    )
            else:
                array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(rows, k))
                array[:] = fill
                array.flush()
            opened.append(array)
        record = self._direction(direction)
        if record.get("lists") != [rows, k]:
            record |= {"lists": [rows, k], "done": []}
            self._save()
        self.lists[direction] = (opened[0], opened[1])
        return self.lists[direction]

    def done(self, direction: str) -> set[int]:
        return set(self._direction(direction).get("done", []))

    def mark_done(self, direction: str, block: int) -> None:
        """Block `block` of `direction` is finished: its rows are flushed, then the manifest says so."""
        for array in self.lists[direction]:
            array.flush()
        record = self._direction(direction)
        record["done"] = sorted(set(record["done"]) | {block})
        self._save()

    def get(self, direction: str, name: str):
        return self._direction(direction).get(name)

    def put(self, direction: str, name: str, value) -> None:
        self._direction(direction)[name] = value
        self._save()

    def array(self, direction: str, name: str) -> np.ndarray | None:
        path = self.path / f"{direction}.{name}.npy"
        if not path.is_file() or name not in self._direction(direction).get("arrays", []):
            return None
        return np.load(path, allow_pickle=False)

    def put_array(self, direction: str, name: str, value: np.ndarray) -> None:
        path = self.path / f"{direction}.{name}.npy"
        import io

        buffer = io.BytesIO()
        np.save(buffer, np.asarray(value), allow_pickle=False)
        atomic_write_bytes(path, buffer.getvalue())
        record = self._direction(direction)
        record["arrays"] = sorted(set(record.get("arrays", [])) | {name})
        self._save()

    def scratch(self, direction: str, name: str, shape: tuple, dtype) -> np.ndarray:
        """A memory map in the folder for intermediate lists (the exchanged lists: as large as the lists
        themselves), recomputed by every run and never listed in the manifest."""
        path = self.path / f"{direction}.{name}.scratch.npy"
        return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)

    def remove(self) -> None:
        """The run is written: its work folder goes."""
        self.lists.clear()
        shutil.rmtree(self.path, ignore_errors=True)


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
