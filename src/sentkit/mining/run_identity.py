"""What a mining run's neighbour lists depend on: the identity its work folder is resumed under
(work_folder.py)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from sentkit.corpus.identity import file_identity
from sentkit.corpus.readers import input_files
from sentkit.mining import knn_run
from sentkit.mining.key_part import EXACT_KINDS
from sentkit.mining.search import resolve_kind


def side_identity(path: str, vectors=None, input_format: str = "auto") -> dict:
    """A shard folder by its shard records and model (`vectors`: its ShardVectors), a text input by each
    file's identity (path, size, times, inode)."""
    if vectors is not None:
        records = json.dumps([vectors.manifest.data["shards"], vectors.model], sort_keys=True)
        digest = hashlib.sha256(records.encode()).hexdigest()
        return {"kind": "shards", "path": str(Path(path).resolve()), "shards_sha256": digest}
    files = [file_identity(source.path) for source in input_files(path, input_format)]
    return {"kind": "text", "path": str(Path(path).resolve()), "files": files}


def run_identity(sides: dict, fingerprint, config, rows: dict[str, int], dim: int, key_parts: int) -> dict:
    """The identity of a run over `sides` ({"src", "tgt"}: side_identity) with the model `fingerprint`, the
    MineConfig `config` and the mined rows per side: the parts count only where an approximate index
    searches (each part fetches its own candidates; exact lists do not depend on it)."""
    index = config.index
    approximate = any(
        resolve_kind(index, rows[q], rows[kk], dim)[0] not in EXACT_KINDS
        for q, kk in (("src", "tgt"), ("tgt", "src"))
    )
    return {
        "src": sides["src"],
        "tgt": sides["tgt"],
        "model": fingerprint,
        "rows": rows,
        "k": config.k,
        "index": asdict(index),
        "block_rows": knn_run.BLOCK_ROWS,
        "key_parts": key_parts if approximate else None,
    }
