"""`sentkit mine`: parallel sentence pairs from two corpora (or their encoded shard folders).

k nearest neighbours both ways, query block by query block (knn_run.py, on an engine: in process or on Ray
workers each holding a part of the searched side; the finished blocks kept in a work folder beside the output,
so a stopped run resumes: work_folder.py); an approximate index's lists completed by the pairs the other
direction found (exchange.py) and their recall measured; candidate scores (margin.py: the ratio margin over k,
each side's k-NN means taken over the whole other side), retrieval (retrieval.py), an optional score
threshold, then a TSV sorted by score (score, both row ids, both texts) and a JSON sidecar recording the
configuration, the index each direction used, where it ran, counts, timings per stage and versions.
"""

from __future__ import annotations

import contextlib
import math
import resource
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_text_writer, atomic_write_json, check_output_node, check_writable_file
from sentkit.corpus.encode_run import sigterm_as_interrupt
from sentkit.corpus.manifest import MANIFEST, ManifestMismatch
from sentkit.errors import DataWarning, InvalidArgument
from sentkit.mining.engine_local import LocalEngine
from sentkit.mining.exact import resolve_device
from sentkit.mining.exchange import both_exchanged
from sentkit.mining.knn_run import knn_direction
from sentkit.mining.margin import DEFAULT_K, best_proposals
from sentkit.mining.output_guard import check_outputs
from sentkit.mining.recall import recall_against, report_recall
from sentkit.mining.retrieval import select_proposals
from sentkit.mining.run_identity import run_identity, side_identity
from sentkit.mining.search import IndexConfig, check_index, is_approximate_record
from sentkit.mining.sides import encode_text_side, read_text_side, without_unmined_rows
from sentkit.mining.size_rules import K_MAX, check_index_rows, check_k
from sentkit.mining.vectors import ShardVectors
from sentkit.mining.work_folder import MemoryWork, WorkFolder, work_path
from sentkit.output_lock import exclusive_lock
from sentkit.provenance import machine_info, package_versions, source_revision

TSV_HEADER = ("score", "src_id", "tgt_id", "src_text", "tgt_text")


@dataclass(frozen=True)
class MineConfig:
    k: int = DEFAULT_K
    scoring: str = "margin"
    retrieval: str = "max"
    threshold: float | None = None  # keep pairs scoring at least this (margin: 1.04-1.06, see the docs)
    index: IndexConfig = field(default_factory=IndexConfig)

    def __post_init__(self) -> None:
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InvalidArgument(f"threshold must be a finite number, got {self.threshold}")
        if not 1 <= self.k <= K_MAX:
            raise InvalidArgument(f"--k {self.k}: expected 1 to {K_MAX} neighbours per sentence")


@dataclass
class Mined:
    """Pairs as row positions into the two sides, best first, and what it took to find them."""

    src: np.ndarray
    tgt: np.ndarray
    score: np.ndarray
    candidates: int  # pairs retrieved before the threshold
    info: dict


def mine(
    x,
    y,
    config: MineConfig = MineConfig(),
    log: Callable[[str], None] | None = None,
    engine=None,
    work=None,
) -> Mined:
    """Mine pairs between vector sets `x` and `y` (sentkit.mining.vectors); see the module docstring.
    `engine` searches (engine_local.LocalEngine by default, engine_ray.RayEngine on a Ray cluster), `work`
    keeps the finished blocks (work_folder.WorkFolder; default: in memory). An approximate index's measured
    recall goes to `log`, and a low one to a DataWarning."""
    check_index(config.index, x.dim)  # before either search starts
    check_k(config.k, {"src": x.n, "tgt": y.n}, config.scoring)
    check_index_rows(config.index.kind, config.index.nlist, {"src": x.n, "tgt": y.n})
    engine = engine or LocalEngine()
    work = work or MemoryWork()
    timings: dict[str, float] = {}
    found = {}
    for direction, queries, keys in (("forward", x, y), ("backward", y, x)):
        start = time.perf_counter()
        found[direction] = knn_direction(direction, queries, keys, config.k, config.index, engine, work, log)
        timings[f"knn_{direction}_s"] = round(time.perf_counter() - start, 2)
    (x_sims, x_nn, fwd, fwd_exact), (y_sims, y_nn, bwd, bwd_exact) = found["forward"], found["backward"]
    _warn_about_training({"forward": fwd, "backward": bwd})
    # k is capped by the other side's rows: record the k each direction searched with
    fwd["k"], bwd["k"] = int(x_sims.shape[1]), int(y_sims.shape[1])
    if is_approximate_record(fwd) or is_approximate_record(bwd):
        start = time.perf_counter()
        own = (x_sims, x_nn), (y_sims, y_nn)
        outputs = [
            work.scratch(direction, f"exchanged_{name}", lists.shape, lists.dtype)
            for direction, pair in (("forward", own[0]), ("backward", own[1]))
            for name, lists in zip(("sims", "rows"), pair)
        ]
        (x_sims, x_nn), (y_sims, y_nn), gained = both_exchanged(x_sims, x_nn, y_sims, y_nn, outputs)
        fwd["from_other_direction"], bwd["from_other_direction"] = gained
        timings["exchange_s"] = round(time.perf_counter() - start, 2)
        start = time.perf_counter()
        for info, exact, sims, nn, lists in (
            (fwd, fwd_exact, x_sims, x_nn, own[0]),
            (bwd, bwd_exact, y_sims, y_nn, own[1]),
        ):
            if is_approximate_record(info):
                info["recall"] = recall_against(exact, sims, nn, config.index.seed, index_lists=lists)
        timings["recall_s"] = round(time.perf_counter() - start, 2)
    report_recall(fwd, "forward", log)
    report_recall(bwd, "backward", log)
    neighbours = (x_sims, x_nn, y_sims, y_nn)
    start = time.perf_counter()
    proposals = best_proposals(neighbours, config.scoring)  # (n,) arrays: the lists may stay on disk
    timings["score_s"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    src, tgt, score = select_proposals(proposals, config.retrieval)
    timings["select_s"] = round(time.perf_counter() - start, 2)
    candidates = len(src)
    if config.threshold is not None:
        kept = score >= config.threshold
        src, tgt, score = src[kept], tgt[kept], score[kept]
    info = {
        "index": {"forward": fwd, "backward": bwd},
        "timings": timings,
        "resumed_blocks": dict(work.resumed),
    }
    return Mined(src, tgt, score, candidates, info)


def _warn_about_training(index: dict) -> None:
    """One line for FAISS's k-means warnings of both directions: their codebooks fit few points."""
    notes = [
        f"{direction} {info.get('factory', '?')}: {w['centroids']} centroids from {w['points']} points "
        f"(FAISS asks for {w['wanted']})"
        for direction, info in index.items()
        for w in info.get("training_warnings", [])
    ]
    if notes:
        warnings.warn(
            f"the index's k-means trained on too few rows ({'; '.join(notes)}): its recall may be low; "
            "--index flat searches exactly (recorded in the sidecar's index.*.training_warnings)",
            DataWarning,
            stacklevel=3,
        )


def write_pairs(path: str | Path, mined: Mined, x, y) -> None:
    """The TSV: a header, then score, src_id, tgt_id, src_text, tgt_text per pair, best first (texts with
    backslash, tab, newline, carriage return and NUL escaped as \\\\, \\t, \\n, \\r, \\0)."""
    src_ids, tgt_ids = x.ids(mined.src), y.ids(mined.tgt)
    src_texts, tgt_texts = x.texts(mined.src), y.texts(mined.tgt)
    with atomic_text_writer(path) as fh:
        fh.write("\t".join(TSV_HEADER) + "\n")
        for score, sid, tid, stext, ttext in zip(mined.score, src_ids, tgt_ids, src_texts, tgt_texts):
            fh.write(f"{float(score):.6f}\t{_cell(sid)}\t{_cell(tid)}\t{_cell(stext)}\t{_cell(ttext)}\n")


def _cell(text: str) -> str:
    # backslash first, so that each escape reads back to the one character it stands for
    escaped = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return escaped.replace("\0", "\\0")


# ---- the command: two sides in, pairs and a sidecar out ------------------------------------------------------
class MiningInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during the k-NN searches: the finished blocks stay in the work folder (the CLI prints
    the message and exits `exit_code`: 130, or 143 for SIGTERM)."""

    def __init__(self, message: str, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class EngineConfig:
    """Where the k-NN searches run: on the Ray cluster at `address`, or on a Ray started here with `workers`
    key-part workers (engine_ray.py); neither: in this process (engine_local.py)."""

    address: str | None = None
    workers: int | None = None

    @property
    def distributed(self) -> bool:
        return bool(self.address or self.workers)


def make_engine(config: EngineConfig | None, exact_device: str = "auto"):
    """The engine `config` names (engine_local.LocalEngine when it names none)."""
    if config is None or not config.distributed:
        return LocalEngine()
    from sentkit.mining.engine_ray import RayEngine

    return RayEngine(config.address, config.workers, device=exact_device)


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
    engine: EngineConfig | None = None


def sidecar_path(out: str | Path) -> Path:
    """Where the run's JSON record goes: beside the TSV, `pairs.tsv` -> `pairs.tsv.json`."""
    return Path(f"{out}.json")


def mine_files(
    request: MineRequest,
    load_model: Callable[[str], object] | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Run `sentkit mine`: open (or encode) both sides, mine, write the TSV and its sidecar; returns the
    sidecar's content. Every check that needs no encoding comes first (outputs, flags, folders, texts, the
    model against the folders'); nothing is written when one fails. A second run into the same `--out`
    meanwhile is refused (`output_lock`)."""
    paths = {"src": request.src, "tgt": request.tgt}
    for path in (request.out, sidecar_path(request.out)):
        check_writable_file(path)
    check_outputs("--out", request.out, sidecar_path(request.out), list(paths.values()))
    check_output_node(work_path(request.out), "directory")  # where a run keeps its finished blocks
    with output_lock(request.out):
        return _mine_locked(request, paths, load_model, log)


def lock_path(out: str | Path) -> Path:
    """The lock a run holds while it writes `out` and its sidecar: `pairs.tsv` -> `.pairs.tsv.lock`."""
    return Path(out).with_name(f".{Path(out).name}.lock")


@contextlib.contextmanager
def output_lock(out: str | Path) -> Iterator[None]:
    """One `sentkit mine` per `--out` (sentkit.corpus.output_lock, as `sentkit encode` locks its folder): the
    lock file beside the TSV is removed when the run ends, and so are the folders made for it if the run
    left them empty."""
    lock = lock_path(out)
    made = [folder for folder in (lock.parent, *lock.parent.parents) if not folder.exists()]
    lock.parent.mkdir(parents=True, exist_ok=True)
    busy = (
        f"--out {out}: another sentkit mine is writing it (it holds {lock}); wait for it to end or choose "
        "another --out"
    )
    try:
        with exclusive_lock(lock, busy, remove=True):
            yield
    finally:
        for folder in made:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()


def _mine_locked(
    request: MineRequest, paths: dict[str, str], load_model: Callable | None, log: Callable[[str], None]
) -> dict:
    revision = source_revision()  # the code as the run starts (the tree may change while a long run goes on)
    resolve_device(request.config.index.exact_device)  # --exact-device cuda without a GPU: before any work
    is_folder = {name: _is_shard_folder(path) for name, path in paths.items()}
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
    folders = {name: ShardVectors(path) for name, path in paths.items() if is_folder[name]}
    if len(folders) == 2:
        _check_same_model(request, folders["src"].model, folders["tgt"].model)
    for name, vectors in folders.items():
        if vectors.n == 0:
            raise InvalidArgument(f"{paths[name]}: no rows to mine")
    texts = {
        name: read_text_side(path, request.input_format, request.text_field)
        for name, path in paths.items()
        if not is_folder[name]
    }
    for vectors in folders.values():  # the dim is recorded: PQ sub-quantizers must divide it
        check_index(request.config.index, vectors.dim)
    rows = {paths[name]: vectors.n for name, vectors in folders.items()}
    rows |= {paths[name]: len(side.texts) for name, side in texts.items()}
    check_k(request.config.k, rows, request.config.scoring)  # before the model loads
    check_index_rows(request.config.index.kind, request.config.index.nlist, rows)
    encoder = fingerprint = None
    if request.model:
        encoder = (load_model or _load_encoder)(request.model)
        from sentkit.encoders.fingerprint import model_fingerprint

        fingerprint = model_fingerprint(encoder)
        model = {"name": request.model, "fingerprint": fingerprint}
        for name, vectors in folders.items():  # before any encoding
            if vectors.model.get("fingerprint") != fingerprint:
                raise ManifestMismatch(
                    f"--model {request.model} is not the model {paths[name]} was encoded by "
                    f"({vectors.model.get('name')!r}); mining compares vectors of one model"
                )
    sides, skipped = {}, {}
    for name, vectors in folders.items():
        start = time.perf_counter()
        sides[name], blank, zero = without_unmined_rows(paths[name], vectors)
        skipped[name] = {"blank_rows": blank, "zero_vector_rows": zero}
        timings[f"skip_scan_{name}_s"] = round(time.perf_counter() - start, 2)
    for name, side in texts.items():
        start = time.perf_counter()
        sides[name], zero = encode_text_side(side, encoder, request.batch_size, model)
        skipped[name] = {"blank_rows": side.blank, "zero_vector_rows": zero}
        timings[f"encode_{name}_s"] = round(time.perf_counter() - start, 2)
        log(f"{side.path}: encoded {len(side.texts)} rows in {timings[f'encode_{name}_s']} s")
    for name in paths:
        if skipped[name]["blank_rows"] or skipped[name]["zero_vector_rows"]:
            log(f"{paths[name]}: {_skipped_line(skipped[name])} not mined")
    x, y = sides["src"], sides["tgt"]
    identities = {name: side_identity(paths[name], folders.get(name), request.input_format) for name in paths}
    engine = make_engine(request.engine, request.config.index.exact_device)
    try:
        parts = getattr(engine, "workers", 1)
        rows = {"src": x.n, "tgt": y.n}
        identity = run_identity(
            identities, fingerprint or x.model.get("fingerprint"), request.config, rows, x.dim, parts
        )
        work = WorkFolder(request.out, identity, log)
        try:
            with sigterm_as_interrupt():
                mined = mine(x, y, request.config, log, engine=engine, work=work)
        except KeyboardInterrupt as err:
            work.discard_if_empty()
            kept = work.finished_blocks()
            where = f"{kept} finished query blocks kept in {work.path}: rerun the same command to resume"
            raise MiningInterrupted(
                f"interrupted; {where}" if kept else "interrupted before any query block finished",
                getattr(err, "exit_code", 130),
            ) from None
        except BaseException:
            work.discard_if_empty()
            raise
        start = time.perf_counter()
        write_pairs(request.out, mined, x, y)
        timings |= mined.info["timings"] | {"write_s": round(time.perf_counter() - start, 2)}
        engine_record = engine.record()
        # the driver's share of the searches: reading the query blocks, handing them to workers, merging
        reads = sum(mined.info["index"][d].get("read_queries_s", 0.0) for d in ("forward", "backward"))
        timings["read_queries_s"] = round(reads, 2)
        if "merge_s" in engine_record:
            timings["transfer_s"] = engine_record["put_s"]
            timings["merge_s"] = engine_record["merge_s"]
    finally:
        engine.shutdown()
    import faiss

    def side_record(name: str, vectors) -> dict:
        rows = vectors.n + skipped[name]["blank_rows"] + skipped[name]["zero_vector_rows"]
        kind = "shards" if is_folder[name] else "text"
        return {"path": paths[name], "rows": rows, "mined_rows": vectors.n, **skipped[name], "kind": kind}

    sidecar = {
        "what": "sentkit mine: k-NN both ways, candidate scores, retrieval, threshold; pairs sorted by score",
        "src": side_record("src", x),
        "tgt": side_record("tgt", y),
        "model": {"name": x.model.get("name"), "fingerprint": x.model.get("fingerprint"), "dim": x.dim},
        "config": _config_record(request.config, mined.info["index"]),
        "index": mined.info["index"],
        "engine": engine_record,
        "resumed_blocks": mined.info["resumed_blocks"],
        "candidates": mined.candidates,
        "pairs": len(mined.src),
        "timings": timings,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "versions": package_versions() | {"faiss": faiss.__version__},
        **revision,
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    atomic_write_json(sidecar_path(request.out), sidecar)
    work.remove()
    return sidecar


def _check_same_model(request: MineRequest, src_model: dict, tgt_model: dict) -> None:
    if src_model.get("fingerprint") != tgt_model.get("fingerprint"):
        raise ManifestMismatch(
            f"{request.src} and {request.tgt} were encoded by different models "
            f"({_model_label(src_model)}, {_model_label(tgt_model)}); mining compares vectors of one model"
        )


def _model_label(model: dict) -> str:
    """A folder's model as a message names it: its name, and its precision when not fp32."""
    precision = model.get("precision", "fp32")
    return repr(model.get("name")) + ("" if precision == "fp32" else f" at {precision}")


def _skipped_line(skipped: dict) -> str:
    parts = [f"{skipped['blank_rows']} blank rows"] if skipped["blank_rows"] else []
    if skipped["zero_vector_rows"]:
        parts.append(f"{skipped['zero_vector_rows']} rows with a zero vector (no known word)")
    return " and ".join(parts)


def _config_record(config: MineConfig, index: dict) -> dict:
    """The configuration with the k the searches used: --k is capped by the other side's rows (each
    direction's own k is in its index record); `k_requested` keeps --k when it was more."""
    record = asdict(config)
    used = max(index["forward"]["k"], index["backward"]["k"])
    if used != config.k:
        record["k_requested"] = config.k
    record["k"] = used
    return record


def _is_shard_folder(path: str) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def _load_encoder(name: str):
    from sentkit.encoders import load_encoder

    return load_encoder(name)
