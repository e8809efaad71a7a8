"""Shards: a fixed number of consecutive rows of one input file, encoded and written as one file.

Shard names are deterministic (`shard-<input>-<chunk>.npy`: the input's index in the sorted input list and
the chunk's index in that file), so a rerun knows which shards exist and a Ray run writes exactly the files
an in-process run writes. A shard is encoded from its own texts alone (`encoder.encode(texts)`), so its
bytes do not depend on which worker or engine ran it.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_bytes
from sentkit.corpus.identity import describe_change, file_identity, same_identity
from sentkit.corpus.readers import InputFile, iter_rows
from sentkit.errors import SentkitError

SHARD_FORMATS = ("npy", "parquet")
DTYPES = ("float32", "float16")
DEFAULT_SHARD_SIZE = 100_000  # rows: 147 MiB of float32 384-d vectors held per worker while it encodes


class InputChanged(SentkitError):
    """The input no longer holds the rows a finished shard was encoded from."""


@dataclass(frozen=True)
class ShardSettings:
    """Everything that decides which rows go into which shard file and what bytes it holds; a rerun into
    the same folder must repeat them (the manifest records them)."""

    shard_size: int = DEFAULT_SHARD_SIZE
    dtype: str = "float32"
    format: str = "npy"
    batch_size: int = 64
    input_format: str = "auto"
    text_field: str = "text"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class ShardWork:
    """One shard to encode: rows first_row .. first_row + len(texts) - 1 of input `input`."""

    name: str
    input: int
    chunk: int
    first_row: int
    texts: list[str]
    text_sha256: str


@dataclass(frozen=True)
class InputEnd:
    """Input `input` was read to its end: it has `rows` rows; `identity` is the file's identity taken when it
    was opened and found unchanged once read (identity.py; None: not reported, so not recorded)."""

    input: int
    rows: int
    identity: dict | None = None


def shard_name(input_index: int, chunk: int, fmt: str) -> str:
    return f"shard-{input_index:05d}-{chunk:06d}.{fmt}"


def text_digest(texts: Sequence[str]) -> str:
    """sha256 of a shard's texts, each length-prefixed (texts may hold newlines): what a rerun compares to
    decide that a finished shard still matches its input rows."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def iter_work(
    source: InputFile,
    input_index: int,
    settings: ShardSettings,
    done: dict[int, dict] | None = None,
    known_rows: int | None = None,
) -> Iterator[ShardWork | InputEnd]:
    """The shards of one input still to encode, then its `InputEnd`.

    `done` maps chunk index -> manifest record of shards already written: those are read past, their texts
    checked against the recorded digest (InputChanged when they differ). `known_rows`: the row count a
    previous run found, for an input already read to its end (a different count is InputChanged). The file's
    identity is taken before it is opened and compared after each shard's rows and at its end: a file changed
    while it is read stops the run (InputChanged) before the shard read across the change is handed on.
    """
    done = done or {}
    opened = _identity(source.path)
    texts: list[str] = []
    chunk, first_row, rows = 0, 1, 0
    for row, text in iter_rows(source, settings.text_field):
        if known_rows is not None and row > known_rows:
            raise InputChanged(
                f"{source.path}: has more than the {known_rows} rows it had when it was encoded; "
                "encode the changed input into a new folder"
            )
        texts.append(text)
        rows = row
        if len(texts) == settings.shard_size:
            _check_unchanged(source, opened)
            yield from _emit(source, input_index, chunk, first_row, texts, settings, done)
            chunk, first_row, texts = chunk + 1, row + 1, []
    _check_unchanged(source, opened)
    if texts:
        yield from _emit(source, input_index, chunk, first_row, texts, settings, done)
    if known_rows is not None and rows != known_rows:
        raise InputChanged(
            f"{source.path}: has {rows} rows, {known_rows} when it was encoded; "
            "encode the changed input into a new folder"
        )
    yield InputEnd(input_index, rows, opened)


def _identity(path: str) -> dict | None:
    try:
        return file_identity(path)
    except OSError:
        return None  # the reader names the missing file


def _check_unchanged(source: InputFile, opened: dict | None) -> None:
    now = _identity(source.path)
    if opened is not None and not same_identity(opened, now):
        change = describe_change(opened, now) if now is not None else "deleted"
        raise InputChanged(
            f"{source.path}: changed while it was read ({change}); its finished shards are kept and "
            "checked against it by the next run: rerun once nothing writes to it"
        )


def _emit(source, input_index, chunk, first_row, texts, settings, done) -> Iterator[ShardWork]:
    digest = text_digest(texts)
    record = done.get(chunk)
    if record is None:
        yield ShardWork(
            shard_name(input_index, chunk, settings.format), input_index, chunk, first_row, texts, digest
        )
    elif record["text_sha256"] != digest or record["rows"] != len(texts):
        last = first_row + len(texts) - 1
        raise InputChanged(
            f"{source.path}: rows {first_row}-{last} differ from the rows {record['name']} was encoded from; "
            "the input changed since: encode it into a new folder"
        )


def encode_rows(encoder, work: ShardWork, batch_size: int) -> np.ndarray:
    """`encoder.encode` on a shard's texts, checked (`checked_encode`): one finite row per text."""
    from sentkit.encoders.protocol import checked_encode
    from sentkit.errors import NonFiniteVectors

    try:
        return checked_encode(encoder, work.texts, batch_size)
    except NonFiniteVectors as err:
        last = work.first_row + len(work.texts) - 1
        raise NonFiniteVectors(
            f"{err} (rows {work.first_row}-{last} of {work.name}); the shard was not written"
        ) from None


def shard_bytes(vectors: np.ndarray, settings: ShardSettings, source_path: str, first_row: int) -> bytes:
    """The shard file's bytes: a .npy matrix, or parquet with columns source, row (1-based) and vector."""
    matrix = np.ascontiguousarray(vectors, dtype=settings.dtype)  # (rows, dim)
    buf = io.BytesIO()
    if settings.format == "npy":
        np.save(buf, matrix, allow_pickle=False)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        n, dim = matrix.shape
        table = pa.table(
            {
                "source": pa.array([source_path] * n, pa.string()).dictionary_encode(),
                "row": pa.array(np.arange(first_row, first_row + n, dtype=np.int64)),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim),
            }
        )
        pq.write_table(table, buf)
    return buf.getvalue()


def encode_and_write(
    encoder, work: ShardWork, settings: ShardSettings, folder: Path, source_path: str
) -> dict:
    """Encode one shard and write its file atomically; returns its manifest record."""
    start = time.perf_counter()
    vectors = encode_rows(encoder, work, settings.batch_size)
    data = shard_bytes(vectors, settings, source_path, work.first_row)
    atomic_write_bytes(Path(folder) / work.name, data)
    return {
        "name": work.name,
        "input": work.input,
        "chunk": work.chunk,
        "first_row": work.first_row,
        "rows": len(work.texts),
        "dim": int(vectors.shape[1]),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "text_sha256": work.text_sha256,
        "seconds": round(time.perf_counter() - start, 3),
    }


class ShardCorrupt(SentkitError):
    """A listed shard file does not hold what sentkit writes: a (rows, dim) matrix of finite float32 or
    float16 values (a file edited by hand, with its manifest record edited to match)."""


def load_shard(path: str | Path, fmt: str, mmap: bool = True) -> np.ndarray:
    """A shard's vectors as an (rows, dim) array (a read-only memory map for .npy when `mmap`); a file that
    is not a float matrix is ShardCorrupt (one line naming it)."""
    try:
        if fmt == "npy":
            matrix = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        else:
            import pyarrow.parquet as pq

            column = pq.read_table(path, columns=["vector"]).column("vector").combine_chunks()
            dim = column.type.list_size
            matrix = column.values.to_numpy(zero_copy_only=False).reshape(-1, dim)
    except (ValueError, TypeError, AttributeError, OSError, KeyError) as err:
        raise ShardCorrupt(f"{path}: {CORRUPT} ({' '.join(str(err).split())})") from None
    if matrix.ndim != 2 or matrix.dtype not in (np.float32, np.float16):
        raise ShardCorrupt(f"{path}: {CORRUPT} (it holds a {matrix.ndim}-d {matrix.dtype} array)")
    return matrix


CORRUPT = "the shard file is corrupt: not the finite float matrix sentkit writes; encode into a new folder"


def check_finite(block: np.ndarray, path: str | Path, rows: np.ndarray | None = None) -> None:
    """Refuse shard rows holding NaN or inf (ShardCorrupt naming the file and the first such row: its
    0-based number in the shard, from `rows` when the block holds only some of them): sentkit never writes
    one (encode_rows checks every vector)."""
    bad = ~np.isfinite(block).all(axis=1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        row = first if rows is None else int(rows[first])
        raise ShardCorrupt(f"{path}: {CORRUPT} (row {row} holds NaN or inf)")
