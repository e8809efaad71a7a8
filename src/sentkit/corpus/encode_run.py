"""One `sentkit encode` run into a shard folder: check what the folder holds, encode what is missing.

Order of work: every check that needs no model (output folder, inputs, an existing manifest's settings,
inputs and shard records), then the model (its fingerprint, which covers a --precision other than fp32, must
match the manifest's; the device must exist, and the precision must run there),
then the shard files against their recorded sha256. A finished folder whose shards cover every row and whose
inputs have their recorded identity is left alone ("nothing to do"). Otherwise the engine re-reads the
inputs, compares the finished shards' texts and encodes the missing shards; the manifest lists each finished
shard, is rewritten at most every SAVE_EVERY_S seconds while shards arrive and always when the run ends,
fails or is interrupted (Ctrl-C or SIGTERM). A shard written but not yet listed when the process is killed is
simply encoded again by the next run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sentkit.atomic import check_writable_dir
from sentkit.corpus.cpu_limits import check_local_counts
from sentkit.corpus.engine_local import (
    EncodeJob,
    check_precision,
    precision_fingerprint,
    resolve_device,
    run_local,
)
from sentkit.corpus.manifest import MANIFEST, Manifest, now
from sentkit.corpus.readers import InputFile, input_files
from sentkit.corpus.shards import InputEnd, ShardSettings, ShardWork
from sentkit.errors import InvalidArgument, OutputPathError
from sentkit.output_lock import exclusive_lock

ENGINES = ("auto", "local", "ray")
SAVE_EVERY_S = 10.0
LOCK_FILE = ".lock"


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run, raised where the run is so that it stops as Ctrl-C does: the manifest is
    rewritten with the finished shards and the run recorded as stopped. The CLI exits 128 + SIGTERM."""

    exit_code = 128 + signal.SIGTERM


@dataclass
class EncodeRequest:
    """A `sentkit encode` into a shard folder, as the CLI passes it on."""

    input: str
    output: str
    model: str
    settings: ShardSettings
    engine: str = "auto"
    workers: int | None = None
    threads: int | None = None
    device: str = "auto"
    precision: str = "fp32"
    address: str | None = None


def encode_corpus(
    request: EncodeRequest,
    load_model: Callable[[str], object] | None = None,
    log: Callable[[str], None] | None = None,
    before_shard: Callable[[ShardWork], None] | None = None,
) -> dict:
    """Encode the shards of `request.input` missing from `request.output`; returns a summary
    (`status` "complete" or "nothing to do", shards written, shards and rows in the folder)."""
    log = log or _stderr
    folder = Path(request.output)
    engine = choose_engine(request.engine, request.address, request.workers)
    check_local_counts(request.threads, request.workers, request.address)
    check_writable_dir(folder)
    if folder.is_dir() and not (folder / MANIFEST).is_file() and _foreign_files(folder):
        raise OutputPathError(f"{folder}: holds files but no {MANIFEST}; give an empty or a new folder")
    inputs = input_files(request.input, request.settings.input_format)
    manifest = Manifest.load(folder)
    if manifest is not None:
        _check_without_model(manifest, request.settings, inputs)

    if request.threads is not None:
        import torch

        torch.set_num_threads(request.threads)
    encoder = (load_model or _load_encoder)(request.model)
    from sentkit.encoders.fingerprint import model_fingerprint

    fingerprint = precision_fingerprint(model_fingerprint(encoder), request.precision)
    model = {"name": request.model, "fingerprint": fingerprint, "precision": request.precision}
    if engine == "local" or request.address is None:  # a cluster's GPUs are not this machine's
        device = resolve_device(encoder, request.device)  # before the folder exists
    else:
        device = "cuda" if request.device == "cuda" else "cpu"  # fp16 on a cluster: only with --device cuda
    check_precision(encoder, request.precision, device)
    if engine == "ray":
        encoder = None  # the actors load their own copies
    folder.mkdir(parents=True, exist_ok=True)
    busy = f"{folder}: another sentkit encode is writing into this folder"
    with exclusive_lock(folder / LOCK_FILE, busy), sigterm_as_interrupt():
        _remove_temporary_files(folder)
        manifest = Manifest.load(folder)  # again, under the lock
        if manifest is not None:
            manifest.check_request(request.settings, model, inputs)
            missing = manifest.check_records()
            manifest.check_shard_files()
            if missing:
                more = f" and {len(missing) - 1} more ranges" if len(missing) > 1 else ""
                log(f"{manifest.path}: no shard for {missing[0]}{more}; encoding them")
                manifest.data["complete"] = False
            elif manifest.complete:
                _recheck_inputs(manifest, log)
                rows, shards = manifest.data["rows"], len(manifest.shards)
                log(
                    f"nothing to do: {folder} already holds all {rows} rows ({shards} shards) of {request.input}"
                )
                return {
                    "status": "nothing to do",
                    "written": 0,
                    "shards": shards,
                    "rows": rows,
                    "folder": str(folder),
                }
        else:
            manifest = Manifest.new(folder, request.settings, model, inputs, source=request.input)
            manifest.save()
        job = EncodeJob(
            inputs=inputs,
            folder=folder.resolve(),  # workers write there, whatever their working directory
            settings=request.settings,
            model=_portable_name(request.model),
            done=manifest.done(),
            known_rows=[manifest.known_rows(i) for i in range(len(inputs))],
            threads=request.threads,
            device=request.device,
            precision=request.precision,
            workers=request.workers,
            address=request.address,
            before_shard=before_shard,
        )
        return _run(job, engine, encoder, manifest, log)


def choose_engine(engine: str, address: str | None = None, workers: int | None = None) -> str:
    """The engine to run. "auto" is in process, and Ray when `--address` (a cluster) or `--workers` (an
    actor pool) asks for it: on one machine Ray's start-up and daemons cost time and memory for no speed."""
    if engine not in ENGINES:
        raise InvalidArgument(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "auto":
        engine = "ray" if address or workers is not None else "local"
    if engine == "local" and address:
        raise InvalidArgument("--address names a Ray cluster; it needs --engine ray (or auto)")
    if engine == "local" and workers is not None:
        raise InvalidArgument("--workers sets the Ray actor count; it needs --engine ray (or auto)")
    if engine == "ray" and importlib.util.find_spec("ray") is None:
        flag = "--address" if address else "--workers" if workers is not None else "--engine ray"
        raise InvalidArgument(f"{flag} runs on Ray, which is not installed: pip install 'sentkit[ray]'")
    return engine


def _run(job: EncodeJob, engine: str, encoder, manifest: Manifest, log) -> dict:
    info: dict = {"engine": engine, "started": now()}
    start = last_save = time.perf_counter()
    written = rows_written = 0
    try:
        if engine == "local":
            items = run_local(job, encoder, info)
            import torch

            info["threads"] = torch.get_num_threads()
        else:
            from sentkit.corpus.engine_ray import run_ray

            items = run_ray(job, info)
        for item in items:
            if isinstance(item, InputEnd):
                manifest.end_input(item)
                continue
            seconds = item.pop("seconds", None)
            manifest.add_shard(item)
            written += 1
            rows_written += item["rows"]
            source = job.inputs[item["input"]].path
            last = item["first_row"] + item["rows"] - 1
            rate = f", {item['rows'] / seconds:.0f} rows/s" if seconds else ""
            log(f"{item['name']}: rows {item['first_row']}-{last} of {source}{rate}")
            if time.perf_counter() - last_save >= SAVE_EVERY_S:
                manifest.save()
                last_save = time.perf_counter()
        manifest.mark_complete()
        info["status"] = "complete"
    except BaseException as err:
        info["status"] = f"stopped: {type(err).__name__}: {' '.join(str(err).split())[:300]}"
        raise
    finally:
        info |= {"shards_written": written, "rows_written": rows_written}
        info["seconds"] = round(time.perf_counter() - start, 2)
        manifest.add_run(info)
        manifest.save()
    total_rows, shards = manifest.data["rows"], len(manifest.shards)
    dim = manifest.data["model"].get("dim")
    log(
        f"{manifest.folder}: {written} shards written this run; {shards} shards, {total_rows} rows"
        + (f" x {dim} {job.settings.dtype}" if dim else "")
    )
    return {
        "status": "complete",
        "written": written,
        "shards": shards,
        "rows": total_rows,
        "folder": str(manifest.folder),
    }


def _recheck_inputs(manifest: Manifest, log) -> None:
    """A finished folder: every input whose identity differs from the recorded one, or cannot be trusted, has
    its texts compared with the shards' digests (InputChanged, nothing written, when they differ); the
    identity it had while it was read is then recorded."""
    rechecked = []
    for index, entry in enumerate(manifest.data["inputs"]):
        if manifest.input_unchanged(index):
            continue
        log(
            f"{entry['path']}: not the size, mtime, ctime or inode recorded when it was encoded (or recorded "
            "too soon after it was written, or by an older sentkit); comparing its rows with the shards' texts"
        )
        identity = manifest.verify_texts(index)
        rechecked.append(InputEnd(index, entry["rows"], identity))
    for end in rechecked:
        manifest.end_input(end)
    if rechecked:
        manifest.save()


def _check_without_model(manifest: Manifest, settings: ShardSettings, inputs: list[InputFile]) -> None:
    """The manifest checks that need no model, run before it loads (seconds to minutes)."""
    recorded = {
        "fingerprint": manifest.data["model"].get("fingerprint"),
        "name": manifest.data["model"].get("name"),
    }
    manifest.check_request(settings, recorded, inputs)
    manifest.check_records()


def _load_encoder(name: str):
    from sentkit.encoders import load_encoder

    return load_encoder(name)


def _portable_name(name: str) -> str:
    """A model name a worker process can load from any directory: local folders made absolute."""
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def _foreign_files(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name != LOCK_FILE and not _is_temporary(p.name)]


def _is_temporary(name: str) -> bool:
    # atomic_write_bytes writes `.<name>.<random>.tmp` beside the target
    return name.startswith((".shard-", f".{MANIFEST}.")) and name.endswith(".tmp")


def _remove_temporary_files(folder: Path) -> None:
    """Half-written shard or manifest files left by a killed run (never listed in the manifest)."""
    for path in folder.iterdir():
        if _is_temporary(path.name):
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """SIGTERM raises Terminated in the main thread while the run holds the folder; a second SIGTERM
    kills as usual (the manifest on disk is then the previous, complete version)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
