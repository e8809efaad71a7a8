"""The vectors one side of a mining run reads: in memory, or an encoded shard folder read shard by shard.

Both give L2-normalised float32 blocks in row order (what a cosine search indexes), rows by position (to
re-score candidates exactly), and for output each row's id (`file:row`) and text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from sentkit.corpus.identity import IDENTITY_KEYS, file_identity, same_identity
from sentkit.corpus.manifest import Manifest, ManifestMismatch
from sentkit.corpus.readers import InputFile, iter_rows
from sentkit.corpus.shards import CORRUPT, ShardCorrupt, check_finite, load_shard

ARRAY_BLOCK_ROWS = 100_000  # rows normalised and searched at a time for in-memory vectors


def normalized(block: np.ndarray) -> np.ndarray:
    """A float32 C-contiguous copy of `block` with unit rows (zero rows stay zero): (n, d) -> (n, d)."""
    import faiss

    out = np.array(block, dtype=np.float32, order="C", copy=True)
    faiss.normalize_L2(out)
    return out


class ArrayVectors:
    """Vectors held in memory, with the ids and texts of their rows."""

    def __init__(
        self, vectors: np.ndarray, ids: Sequence[str], texts: Sequence[str], model: dict | None = None
    ):
        if vectors.ndim != 2 or len(vectors) != len(ids) or len(ids) != len(texts):
            raise ValueError(f"vectors {vectors.shape}, {len(ids)} ids and {len(texts)} texts do not line up")
        self.vectors, self._ids, self._texts = vectors, list(ids), list(texts)
        self.model = model or {}

    @property
    def n(self) -> int:
        return len(self.vectors)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.n, ARRAY_BLOCK_ROWS):
            yield start, normalized(self.vectors[start : start + ARRAY_BLOCK_ROWS])

    def take(self, rows: np.ndarray) -> np.ndarray:
        return normalized(self.vectors[np.asarray(rows)])

    def ids(self, rows: Sequence[int]) -> list[str]:
        return [self._ids[i] for i in rows]

    def texts(self, rows: Sequence[int]) -> list[str]:
        return [self._texts[i] for i in rows]


class ShardVectors:
    """A finished `sentkit encode --shard-size` folder: vectors shard by shard, texts from its inputs."""

    def __init__(self, folder: str | Path, verify: bool = True) -> None:
        """`verify=False`: the vectors only, for a process reading rows a verified reader has already
        checked (a mining worker's key part): no input file is opened and `ids`/`texts` are not offered."""
        self.folder = Path(folder)
        manifest = Manifest.load(self.folder)
        if manifest is None:
            raise ManifestMismatch(
                f"{self.folder}: no manifest.json; expected a folder written by sentkit encode"
            )
        if not manifest.complete:
            raise ManifestMismatch(
                f"{self.folder}: the encode run has not finished (rerun the same sentkit encode to complete it)"
            )
        self.manifest = manifest
        self.model = dict(manifest.data["model"])
        self.format = manifest.settings.format
        self.shards = manifest.shards
        self.offsets = np.cumsum([0] + [s["rows"] for s in self.shards])  # (shards + 1,) first global row
        if not verify:
            return
        manifest.check_covered()
        manifest.check_shard_files()
        # each input must be the file its shards were encoded from: by its recorded identity when that is
        # unchanged and trusted, else by its texts against the shards' digests (InputChanged when they differ)
        self._identities = [
            {k: e.get(k) for k in IDENTITY_KEYS} if manifest.input_unchanged(i) else manifest.verify_texts(i)
            for i, e in enumerate(manifest.data["inputs"])
        ]
        # ids keep the path as the encode run was given it; the texts are read from the resolved path, so
        # mining works from any working directory
        self.inputs = [InputFile(e["path"], e["format"]) for e in manifest.data["inputs"]]
        self._readable = [InputFile(e["resolved"], e["format"]) for e in manifest.data["inputs"]]
        self.text_field = manifest.settings.text_field

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    @property
    def dim(self) -> int:
        return int(self.model["dim"])

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        return self.blocks_between(0, self.n)

    def blocks_between(self, first: int, stop: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, unit rows) of rows first..stop-1, shard by shard: only the shards holding them are
        read (a key part of a mining worker reads its own rows)."""
        for offset, shard in zip(self.offsets, self.shards):
            end = int(offset) + shard["rows"]
            if end <= first or offset >= stop:
                continue
            lo, hi = max(first, int(offset)), min(stop, end)
            matrix = self._shard(shard, whole=(lo, hi) == (int(offset), end))
            part = matrix[lo - int(offset) : hi - int(offset)]
            if (lo, hi) != (int(offset), end):
                check_finite(part, self.folder / shard["name"], rows=np.arange(lo, hi) - int(offset))
            yield lo, normalized(part)

    def take(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        which = np.searchsorted(self.offsets, rows, side="right") - 1  # (len(rows),) shard of each row
        for s in np.unique(which):
            mask = which == s
            shard = self._shard(self.shards[s], whole=False)
            local = rows[mask] - self.offsets[s]  # rows within the shard
            picked = shard[local]  # (len(local), dim)
            check_finite(picked, self.folder / self.shards[s]["name"], rows=local)
            out[mask] = picked
        return normalized(out)

    def _shard(self, record: dict, whole: bool = True) -> np.ndarray:
        """A listed shard's matrix, refused (ShardCorrupt, naming the file) unless it is the finite
        (rows, dim) float matrix its record describes: a NaN would leave its rows without neighbours
        (`whole=False`: finiteness is left to the caller, which reads only some rows)."""
        path = self.folder / record["name"]
        matrix = load_shard(path, self.format)
        if matrix.shape != (record["rows"], self.dim):
            raise ShardCorrupt(
                f"{path}: {CORRUPT} (it holds {matrix.shape[0]} x {matrix.shape[1]}, its record "
                f"{record['rows']} rows of dim {self.dim})"
            )
        if whole:
            check_finite(matrix, path)
        return matrix

    def _locate(self, row: int) -> tuple[int, int]:
        """(input index, 1-based row in that input) of global row `row`."""
        s = int(np.searchsorted(self.offsets, row, side="right") - 1)
        shard = self.shards[s]
        return shard["input"], shard["first_row"] + row - int(self.offsets[s])

    def ids(self, rows: Sequence[int]) -> list[str]:
        out = []
        for row in rows:
            index, number = self._locate(int(row))
            out.append(self.inputs[index].row_id(number))
        return out

    def texts(self, rows: Sequence[int]) -> list[str]:
        """The texts of `rows`, read back from the inputs in one streaming pass over the files holding them."""
        wanted: dict[int, dict[int, str | None]] = {}
        located = [self._locate(int(row)) for row in rows]
        for index, number in located:
            wanted.setdefault(index, {})[number] = None
        for index, numbers in wanted.items():
            last = max(numbers)
            self._check_unchanged(index)
            for number, text in iter_rows(self._readable[index], self.text_field):
                if number in numbers:
                    numbers[number] = text
                if number >= last:
                    break
            self._check_unchanged(index)
        missing = [(i, n) for i, n in located if wanted[i][n] is None]
        if missing:
            index, number = missing[0]
            raise ManifestMismatch(
                f"{self.inputs[index].path}: has no row {number} any more; it changed after encoding"
            )
        return [wanted[i][n] for i, n in located]

    def _check_unchanged(self, index: int) -> None:
        """Input `index` is still the file checked against the shards when the folder was opened."""
        try:
            current = file_identity(self._readable[index].path)
        except OSError:
            current = None
        if not same_identity(self._identities[index], current):
            raise ManifestMismatch(
                f"{self.inputs[index].path}: changed while mining read it; its texts no longer match the "
                "vectors: rerun the same sentkit encode, then mine again"
            )
