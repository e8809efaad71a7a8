"""The Ray Data engine: one read task per input file streams its shards; an actor pool encodes them.

Each read task runs the same `iter_work` as the in-process engine (so bad input stops with the same
file:line error, and finished shards are checked and skipped the same way) and emits one block per shard.
`map_batches` hands each block to an actor holding the encoder, which writes the shard file itself and
returns its manifest record; the driver only collects records. The output folder must therefore be
reachable from every node (a shared file system) when `address` names a cluster.

On a small machine the actors must leave CPU for the read tasks: Ray schedules by requested CPUs, and two
actors asking for a whole CPU each on 2 cores starve the reader and the job stalls. `ray_layout` sizes the
requests to the cluster (fractions of a CPU) and sets each actor's torch threads explicitly.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import partial

from sentkit.corpus.engine_local import EncodeJob, place_encoder
from sentkit.corpus.shards import InputEnd, ShardWork, encode_and_write
from sentkit.errors import InvalidArgument, SentkitError

READ_CPUS = 0.25  # CPU requested by a read task: it only decompresses and splits lines
# restarts of a dead actor and retries of its lost shard (Ray Data's default is forever: a shard that kills
# its worker every time would hang the run); read tasks keep Ray's own retries of lost workers
RETRIES = 3

_INTS = ("input", "chunk", "first_row", "rows", "dim", "bytes")
_RECORD_FIELDS = ("kind", "name", *_INTS, "sha256", "text_sha256", "seconds")


def require_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise SentkitError("--engine ray needs Ray Data: pip install 'sentkit[ray]'") from err
    return ray


@dataclass(frozen=True)
class RayLayout:
    """How many encoder actors run and what each asks Ray for."""

    workers: int
    cpus_per_worker: float
    gpus_per_worker: float
    threads: int


def ray_layout(
    cluster_cpus: float,
    cluster_gpus: float,
    workers: int | None = None,
    threads: int | None = None,
    device: str = "auto",
) -> RayLayout:
    """Actors and their requests for a cluster with `cluster_cpus` CPUs and `cluster_gpus` GPUs.

    One actor per GPU when there are GPUs (and `device` allows them), else one per `threads` CPUs
    (default 1 thread). Each actor asks for at most cluster_cpus / (workers + 1) CPUs, so one worker's
    share stays free for the read tasks (READ_CPUS each) whatever the machine size.
    """
    if device == "cuda" and cluster_gpus < 1:
        raise InvalidArgument("--device cuda: the Ray cluster has no GPU")
    threads = threads or 1
    use_gpus = cluster_gpus >= 1 and device != "cpu"
    if workers is None:
        workers = int(cluster_gpus) if use_gpus else max(1, int(cluster_cpus // threads))
    share = math.floor(100 * cluster_cpus / (workers + 1)) / 100
    cpus = max(0.01, min(float(threads), share))
    gpus = 0.0
    if use_gpus:
        gpus = 1.0 if workers <= cluster_gpus else math.floor(100 * cluster_gpus / workers) / 100
    return RayLayout(workers, cpus, gpus, threads)


def run_ray(job: EncodeJob, info: dict) -> Iterator[dict | InputEnd]:
    """Encode every missing shard on Ray Data; yields shard records and input ends as they finish."""
    ray = require_ray()
    started_here = not ray.is_initialized()
    if started_here:
        if not os.environ.get("SENTKIT_DEBUG"):
            # Ray's C++ core logs a note on every actor with restarts enabled; the CLI's stderr stays ours
            os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
        if job.address:
            ray.init(
                address=job.address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR
            )
        else:
            ray.init(
                num_cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
    elif job.address:
        raise InvalidArgument("--address: Ray is already initialised in this process")
    try:
        resources = ray.cluster_resources()
        layout = ray_layout(
            resources.get("CPU", 1), resources.get("GPU", 0), job.workers, job.threads, job.device
        )
        info.update(asdict(layout), device="cuda" if layout.gpus_per_worker else "cpu")
        yield from _run(ray, job, layout)
    finally:
        if started_here:
            ray.shutdown()


def _run(ray, job: EncodeJob, layout: RayLayout) -> Iterator[dict | InputEnd]:
    # the driver prints one line per finished shard and one line for an error (the CLI's); Ray Data's
    # progress log and its copy of a worker's traceback would repeat them (SENTKIT_DEBUG=1 keeps them)
    if not os.environ.get("SENTKIT_DEBUG"):
        logging.getLogger("ray.data").setLevel(logging.CRITICAL)
        ray.data.DataContext.get_current().enable_progress_bars = False
    dataset = ray.data.read_datasource(
        _corpus_datasource(job),
        override_num_blocks=len(job.inputs),  # one read task per input file, its blocks left whole
        num_cpus=READ_CPUS,
    )
    # the actors need no resume state: kept out of their constructor arguments, these stay small
    worker_job = dataclasses.replace(job, done={}, known_rows=[])
    with warnings.catch_warnings():
        # bounded actor restarts have no named map_batches parameter in Ray 2.60: the remote-args form (kept
        # until Ray 2.64) warns that it is deprecated
        warnings.filterwarnings("ignore", message=".*ray_remote_args.* is deprecated")
        encoded = dataset.map_batches(
            _ShardWorker,
            fn_constructor_kwargs={
                "job": worker_job,
                "threads": layout.threads,
                "gpu": layout.gpus_per_worker > 0,
            },
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=layout.workers),
            num_cpus=layout.cpus_per_worker,
            num_gpus=layout.gpus_per_worker or None,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )
    try:
        for row in encoded.iter_rows():
            if row["kind"] == "end":
                yield InputEnd(int(row["input"]), int(row["rows"]))
            else:
                yield {key: row[key] for key in _RECORD_FIELDS if key != "kind"}
    except Exception as err:
        cause = _user_error(err)
        if cause is err:
            raise
        raise cause from None


def _user_error(err: BaseException) -> BaseException:
    """The exception our code raised inside a Ray task or actor, unwrapped from Ray's error wrappers
    (their text holds the remote traceback; the CLI prints the one-line original)."""
    from ray.exceptions import RayError, RayTaskError

    seen = err
    while isinstance(seen, RayError) or type(seen).__module__.startswith("ray."):
        cause = seen.cause if isinstance(seen, RayTaskError) else seen.__cause__
        if cause is None:
            return err
        seen = cause
    return seen


def _corpus_datasource(job: EncodeJob):
    """A Ray Data source with one read task per input file; each task yields one block per shard."""
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class CorpusDatasource(Datasource):
        def estimate_inmemory_data_size(self):
            return None

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            return [
                ReadTask(
                    partial(_read_input, job, index),
                    BlockMetadata(num_rows=None, size_bytes=None, input_files=[source.path], exec_stats=None),
                )
                for index, source in enumerate(job.inputs)
            ]

    return CorpusDatasource()


def _read_input(job: EncodeJob, index: int):
    import pyarrow as pa

    for item in job.work(index):
        if isinstance(item, InputEnd):
            row = {"kind": "end", "name": "", "input": index, "chunk": -1, "first_row": 0, "rows": item.rows}
            row |= {"text_sha256": "", "texts": []}
        else:
            row = {"kind": "shard", "name": item.name, "input": index, "chunk": item.chunk}
            row |= {"first_row": item.first_row, "rows": len(item.texts), "text_sha256": item.text_sha256}
            row["texts"] = item.texts
        yield pa.Table.from_pylist([row], schema=_work_schema())


class _ShardWorker:
    """A Ray actor: loads the encoder once, then encodes and writes each shard block it is handed."""

    def __init__(self, job: EncodeJob, threads: int, gpu: bool) -> None:
        import torch

        from sentkit.encoders import load_encoder

        torch.set_num_threads(threads)
        self.job = job
        self.encoder, _ = place_encoder(load_encoder(job.model), "cuda" if gpu else "cpu")

    def __call__(self, batch):
        import pyarrow as pa

        out = []
        for row in batch.to_pylist():
            if row["kind"] == "end":
                out.append({key: row.get(key) for key in _RECORD_FIELDS})
                continue
            work = ShardWork(
                row["name"], row["input"], row["chunk"], row["first_row"], row["texts"], row["text_sha256"]
            )
            if self.job.before_shard is not None:
                self.job.before_shard(work)
            source = self.job.inputs[work.input].path
            out.append(
                {"kind": "shard"}
                | encode_and_write(self.encoder, work, self.job.settings, self.job.folder, source)
            )
        return pa.Table.from_pylist(out, schema=_record_schema())


def _work_schema():
    import pyarrow as pa

    ints = [(key, pa.int64()) for key in ("input", "chunk", "first_row", "rows")]
    return pa.schema(
        [
            ("kind", pa.string()),
            ("name", pa.string()),
            *ints,
            ("text_sha256", pa.string()),
            ("texts", pa.list_(pa.string())),
        ]
    )


def _record_schema():
    import pyarrow as pa

    types = {key: pa.int64() for key in _INTS} | {"seconds": pa.float64()}
    return pa.schema([(key, types.get(key, pa.string())) for key in _RECORD_FIELDS])
