"""`sentkit mine`: parallel sentence pairs from two corpora (or their encoded shard folders).

k nearest neighbours both ways (search.py), candidate scores (margin.py: the ratio margin over k, each
side's k-NN means taken over the whole other side), retrieval (retrieval.py), an optional score
threshold, then a TSV sorted by score (score, both row ids, both texts) and a JSON sidecar recording the
configuration, the index each direction used, counts, timings per stage and versions.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_text_writer, atomic_write_json, check_writable_file
from sentkit.corpus.manifest import MANIFEST, ManifestMismatch
from sentkit.corpus.readers import input_files, iter_rows
from sentkit.errors import InvalidArgument
from sentkit.mining.margin import DEFAULT_K, candidate_scores
from sentkit.mining.recall import report_recall
from sentkit.mining.retrieval import select_pairs
from sentkit.mining.search import IndexConfig, check_index, search
from sentkit.mining.vectors import ArrayVectors, ShardVectors
from sentkit.provenance import machine_info, package_versions

TSV_HEADER = ("score", "src_id", "tgt_id", "src_text", "tgt_text")


@dataclass(frozen=True)
class MineConfig:
    k: int = DEFAULT_K
    scoring: str = "margin"
    retrieval: str = "max"
    threshold: float | None = None  # keep pairs scoring at least this (margin: 1.04-1.06, see the docs)
    index: IndexConfig = field(default_factory=IndexConfig)


@dataclass
class Mined:
    """Pairs as row positions into the two sides, best first, and what it took to find them."""

    src: np.ndarray
    tgt: np.ndarray
    score: np.ndarray
    candidates: int  # pairs retrieved before the threshold
    info: dict


def mine(x, y, config: MineConfig = MineConfig(), log: Callable[[str], None] | None = None) -> Mined:
    """Mine pairs between vector sets `x` and `y` (sentkit.mining.vectors); see the module docstring.
    An approximate index's measured recall goes to `log`, and a low one to a DataWarning."""
    check_index(config.index, x.dim)  # before either search starts
    timings: dict[str, float] = {}
    start = time.perf_counter()
    x_sims, x_nn, fwd = search(x, y, config.k, config.index)  # (nx, k): y neighbours of each x
    timings["knn_forward_s"] = round(time.perf_counter() - start, 2)
    report_recall(fwd, "forward", log)
    start = time.perf_counter()
    y_sims, y_nn, bwd = search(y, x, config.k, config.index)  # (ny, k): x neighbours of each y
    timings["knn_backward_s"] = round(time.perf_counter() - start, 2)
    report_recall(bwd, "backward", log)
    neighbours = (x_sims, x_nn, y_sims, y_nn)
    start = time.perf_counter()
    x_scores, y_scores = candidate_scores(neighbours, config.scoring)
    timings["score_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    src, tgt, score = select_pairs(neighbours, x_scores, y_scores, config.retrieval)
    timings["select_s"] = round(time.perf_counter() - start, 2)
    candidates = len(src)
    if config.threshold is not None:
        kept = score >= config.threshold
        src, tgt, score = src[kept], tgt[kept], score[kept]
    return Mined(
        src, tgt, score, candidates, {"index": {"forward": fwd, "backward": bwd}, "timings": timings}
    )


def write_pairs(path: str | Path, mined: Mined, x, y) -> None:
    """The TSV: a header, then score, src_id, tgt_id, src_text, tgt_text per pair, best first (texts with
    backslash, tab, newline and carriage return escaped as \\\\, \\t, \\n, \\r)."""
    src_ids, tgt_ids = x.ids(mined.src), y.ids(mined.tgt)
    src_texts, tgt_texts = x.texts(mined.src), y.texts(mined.tgt)
    with atomic_text_writer(path) as fh:
        fh.write("\t".join(TSV_HEADER) + "\n")
        for score, sid, tid, stext, ttext in zip(mined.score, src_ids, tgt_ids, src_texts, tgt_texts):
            fh.write(f"{float(score):.6f}\t{_cell(sid)}\t{_cell(tid)}\t{_cell(stext)}\t{_cell(ttext)}\n")


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


# ---- the command: two sides in, pairs and a sidecar out ------------------------------------------------------
@dataclass
class MineRequest:
    src: str
    tgt: str
    out: str
    model: str | None = None
    config: MineConfig = field(default_factory=MineConfig)
    batch_size: int = 64
    input_format: str = "auto"
    text_field: str = "text"


def sidecar_path(out: str | Path) -> Path:
    """Where the run's JSON record goes: beside the TSV, `pairs.tsv` -> `pairs.tsv.json`."""
    return Path(f"{out}.json")


def mine_files(
    request: MineRequest,
    load_model: Callable[[str], object] | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Run `sentkit mine`: open (or encode) both sides, mine, write the TSV and its sidecar; returns the
    sidecar's content."""
    check_writable_file(request.out)
    out = Path(request.out).resolve()
    for side in (request.src, request.tgt):
        if Path(side).resolve() == out:
            raise InvalidArgument(f"--out {request.out} is also an input; choose another file")
    is_folder = {name: _is_shard_folder(path) for name, path in (("src", request.src), ("tgt", request.tgt))}
    if not all(is_folder.values()) and not request.model:
        text_side = request.src if not is_folder["src"] else request.tgt
        raise InvalidArgument(
            f"--model is needed to encode {text_side} (or give folders written by sentkit encode)"
        )
    if all(is_folder.values()) and request.model:
        raise InvalidArgument(
            "--model applies to text inputs; both sides are encoded folders (their model is recorded)"
        )
    timings: dict[str, float] = {}
    # folders first: their checks need no model
    sides = {
        name: ShardVectors(path)
        for name, path in (("src", request.src), ("tgt", request.tgt))
        if is_folder[name]
    }
    encoder = fingerprint = None
    if request.model:
        encoder = (load_model or _load_encoder)(request.model)
        from sentkit.encoders.fingerprint import model_fingerprint

        fingerprint = model_fingerprint(encoder)
    for name, path in (("src", request.src), ("tgt", request.tgt)):
        if name not in sides:
            start = time.perf_counter()
            sides[name] = _encode_side(
                path, encoder, request, {"name": request.model, "fingerprint": fingerprint}
            )
            timings[f"encode_{name}_s"] = round(time.perf_counter() - start, 2)
            log(f"{path}: encoded {sides[name].n} rows in {timings[f'encode_{name}_s']} s")
    x, y = sides["src"], sides["tgt"]
    if x.model.get("fingerprint") != y.model.get("fingerprint"):
        raise ManifestMismatch(
            f"{request.src} and {request.tgt} were encoded by different models "
            f"({x.model.get('name')!r}, {y.model.get('name')!r}); mining compares vectors of one model"
        )
    if x.n == 0 or y.n == 0:
        raise InvalidArgument(f"{request.src if x.n == 0 else request.tgt}: no rows to mine")
    mined = mine(x, y, request.config, log)
    start = time.perf_counter()
    write_pairs(request.out, mined, x, y)
    timings |= mined.info["timings"] | {"write_s": round(time.perf_counter() - start, 2)}
    import faiss

    sidecar = {
        "what": "sentkit mine: k-NN both ways, candidate scores, retrieval, threshold; pairs sorted by score",
        "src": {"path": request.src, "rows": x.n, "kind": "shards" if is_folder["src"] else "text"},
        "tgt": {"path": request.tgt, "rows": y.n, "kind": "shards" if is_folder["tgt"] else "text"},
        "model": {"name": x.model.get("name"), "fingerprint": x.model.get("fingerprint"), "dim": x.dim},
        "config": asdict(request.config),
        "index": mined.info["index"],
        "candidates": mined.candidates,
        "pairs": len(mined.src),
        "timings": timings,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "versions": package_versions() | {"faiss": faiss.__version__},
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write_json(sidecar_path(request.out), sidecar)
    return sidecar


def _is_shard_folder(path: str) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def _encode_side(path: str, encoder, request: MineRequest, model: dict) -> ArrayVectors:
    """A corpus file (or folder of files) encoded in memory, with `file:row` ids."""
    ids, texts = [], []
    for source in input_files(path, request.input_format):
        for number, text in iter_rows(source, request.text_field):
            ids.append(source.row_id(number))
            texts.append(text)
    from sentkit.encoders.protocol import checked_encode

    vectors = checked_encode(encoder, texts, batch_size=request.batch_size)  # NonFiniteVectors: nothing mined
    return ArrayVectors(vectors.reshape(len(texts), -1), ids, texts, model)


def _load_encoder(name: str):
    from sentkit.encoders import load_encoder

    return load_encoder(name)
