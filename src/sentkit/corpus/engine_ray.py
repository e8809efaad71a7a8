"""The Ray engine: this process reads the inputs and hands each shard to a pool of encoder actors.

The driver runs the same `iter_work` as the in-process engine (so bad input stops with the same file:line
error, and finished shards are checked and skipped the same way) and submits each shard to the actor with the
fewest shards waiting, at most QUEUED_PER_ACTOR each: every actor has its next shard at hand, and the driver
holds the texts of only a few shards. An actor encodes its shard and writes the file itself
(`encode_and_write`, as in process), then returns its manifest record; the driver yields each record the
moment it arrives, so the manifest lists every shard as it lands. The output folder must therefore be
reachable from every node (a shared file system) when `address` names a cluster; only this process reads
the inputs.

When reading stops (a bad row, a changed input) the driver first collects the shards already handed out,
then raises: every shard before the bad row is kept. A Ctrl-C loses only the shards in flight.

Ray schedules actors by the CPUs they request: `ray_layout` gives each of W actors on C CPUs C/W of them
(whole CPUs where that is at least one, fractions below) and as many torch threads, so the actors run side
by side, no core idle and none oversubscribed. The reading is done by the driver, which requests nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from sentkit.corpus.cpu_limits import check_cluster_counts, usable_cpus
from sentkit.corpus.engine_local import EncodeJob, cast_encoder, place_encoder
from sentkit.corpus.shards import InputEnd, ShardWork, encode_and_write
from sentkit.errors import InvalidArgument, SentkitError

# shards handed to one actor at a time: one encoding, one waiting, so it never waits for the driver
QUEUED_PER_ACTOR = 2
# restarts of a dead actor and retries of its lost shard (Ray's default for max_task_retries with restarts is
# forever: a shard that kills its worker every time would hang the run)
RETRIES = 3
# seconds between the lines that say the actors are still waiting for Ray to place them
PLACE_NOTE_S = 30.0


class WorkerLost(SentkitError):
    """An encoder actor died more often than RETRIES (out of memory, killed, a lost node)."""


def require_ray():
    try:
        import ray
    except ImportError as err:
        raise SentkitError("--engine ray needs Ray: pip install 'sentkit[ray]'") from err
    return ray


@dataclass(frozen=True)
class RayLayout:
    """How many encoder actors run, what each asks Ray for, and its torch threads."""

    workers: int
    cpus_per_worker: float
    gpus_per_worker: float
    threads: int


def ray_layout(
    node_cpus: list[float],
    cluster_gpus: float,
    workers: int | None = None,
    threads: int | None = None,
    device: str = "auto",
) -> RayLayout:
    """Actors and their requests for a cluster whose nodes have `node_cpus` CPUs, `cluster_gpus` GPUs in all.

    Workers: as asked, else one per GPU when there are GPUs (and `device` allows them), else one per
    `threads` CPUs (one per CPU without `threads`). Each asks for C/W CPUs of the C in the cluster, whole
    when that is at least one (Ray takes no fraction above one), less where the nodes could not hold W such
    actors; each runs that many torch threads (at least one) unless `threads` says otherwise.
    """
    if device == "cuda" and cluster_gpus < 1:
        raise InvalidArgument("--device cuda: the Ray cluster has no GPU")
    if sum(node_cpus) <= 0:
        raise InvalidArgument("the Ray cluster has no CPU to run encoder workers on")
    check_cluster_counts(node_cpus, threads, workers)
    total = float(sum(node_cpus))
    use_gpus = cluster_gpus >= 1 and device != "cpu"
    if workers is None:
        workers = int(cluster_gpus) if use_gpus else max(1, int(total // (threads or 1)))
    cpus = _fitting_share(node_cpus, workers)
    gpus = 0.0
    if use_gpus:
        gpus = 1.0 if workers <= cluster_gpus else math.floor(100 * cluster_gpus / workers) / 100
    return RayLayout(workers, cpus, gpus, threads or max(1, int(cpus)))


def _fitting_share(node_cpus: list[float], workers: int) -> float:
    """The largest CPU request of at most total / workers that the nodes can hold `workers` times over:
    a whole number where it is one or more (Ray's rule), else a node's CPUs split k ways (to 1e-4, Ray's
    resolution). [2, 2] CPUs and 1 worker: 2, not 4 (no node has 4); [1, 1] and 3 workers: 0.5."""
    share = sum(node_cpus) / workers
    candidates = {float(c) for c in range(1, math.floor(share + 1e-9) + 1)}
    candidates |= {math.floor(1e4 * n / k) / 1e4 for n in node_cpus for k in range(1, workers + 1) if n < k}
    fitting = [
        c
        for c in candidates
        if 0 < c <= share + 1e-9 and sum(math.floor(n / c + 1e-9) for n in node_cpus) >= workers
    ]
    if not fitting:
        raise InvalidArgument(f"the Ray cluster's nodes ({node_cpus} CPUs) cannot hold {workers} workers")
    return max(fitting)


def run_ray(job: EncodeJob, info: dict) -> Iterator[dict | InputEnd]:
    """Encode every missing shard on a Ray pool of actors; yields shard records and input ends as they land."""
    ray = require_ray()
    started_here = not ray.is_initialized()
    if not started_here and job.address:
        raise InvalidArgument("--address: Ray is already initialised in this process")
    if started_here:
        init_ray(ray, job.address)
    actors: list = []
    try:
        with quiet():
            nodes = [n for n in ray.nodes() if n.get("Alive")]
            node_cpus = [n["Resources"].get("CPU", 0.0) for n in nodes]
            gpus = sum(n["Resources"].get("GPU", 0.0) for n in nodes)
        layout = ray_layout(node_cpus, gpus, job.workers, job.threads, job.device)
        info.update(asdict(layout), device="cuda" if layout.gpus_per_worker else "cpu")
        actors = _start_actors(ray, job, layout)
        where = wait_ready(ray, actors, layout)
        info["nodes"] = len(set(where))
        yield from _dispatch(ray, job, actors)
    except Exception as err:
        cause = user_error(err)
        if cause is err:
            raise
        raise cause from None
    finally:
        with quiet():
            # stopped now, not when their handles are collected: an exception's traceback holds them, and
            # their CPUs would stay taken from the next run in this Ray session
            for actor in actors:
                ray.kill(actor)
            if started_here:
                ray.shutdown()


def init_ray(ray, address: str | None) -> None:
    """Start a local Ray with this machine's CPUs, or join the cluster at `address`, quietly: the user's
    stderr gets sentkit's lines, and errors come back as exceptions (SENTKIT_DEBUG=1 keeps Ray's logs)."""
    options: dict = {"include_dashboard": False}
    if not os.environ.get("SENTKIT_DEBUG"):
        options |= {"log_to_driver": False, "logging_level": logging.ERROR}
    if address:
        options["address"] = address
    else:
        options["num_cpus"] = usable_cpus()
    with quiet():
        ray.init(**options)


@contextlib.contextmanager
def quiet():
    """Around calls into Ray: its Python warnings (deprecations, resource notes) are not the user's."""
    if os.environ.get("SENTKIT_DEBUG"):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _start_actors(ray, job: EncodeJob, layout: RayLayout) -> list:
    # the actors need no resume state: kept out of their constructor arguments, these stay small
    worker_job = dataclasses.replace(job, done={}, known_rows=[])
    remote = ray.remote(_ShardEncoder).options(
        num_cpus=layout.cpus_per_worker,
        num_gpus=layout.gpus_per_worker or None,
        max_restarts=RETRIES,
        max_task_retries=RETRIES,
    )
    with quiet():
        return [
            remote.remote(worker_job, layout.threads, layout.gpus_per_worker > 0)
            for _ in range(layout.workers)
        ]


def wait_ready(
    ray,
    actors: list,
    layout: RayLayout,
    note=None,
    every: float = PLACE_NOTE_S,
    what: str = "encode: {ready} of {all} Ray encoder workers",
    refs: list | None = None,
) -> list[str]:
    """The node ids of the actors once each has loaded its encoder. While some wait for Ray to place them
    (the CPUs or GPUs they ask for are taken, or the cluster is smaller than it was), a line on stderr every
    `every` seconds says how many have started and what the cluster has free: Ray itself waits silently.
    `refs`: the actors' ready calls where they take arguments (`what` names the workers in the line)."""
    note = note or _stderr
    refs = refs if refs is not None else [actor.ready.remote() for actor in actors]
    waited = 0.0
    while True:
        with quiet():
            ready, pending = ray.wait(refs, num_returns=len(refs), timeout=every)
        if not pending:
            with quiet():
                return ray.get(refs)
        waited += every
        with quiet():
            free = ray.available_resources()
        ask = f"{layout.cpus_per_worker:g} CPU"
        if layout.gpus_per_worker:
            ask += f" + {layout.gpus_per_worker:g} GPU"
        note(
            f"{what.format(ready=len(ready), all=len(refs))} started after {waited:g} s; each asks "
            f"for {ask}, the cluster has {free.get('CPU', 0):g} CPU and {free.get('GPU', 0):g} GPU free "
            "(another job holding them, or a node gone?); still waiting"
        )


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _dispatch(ray, job: EncodeJob, actors: list) -> Iterator[dict | InputEnd]:
    """Hand out the shards input by input, yield each record as it lands; on a read error, collect the
    shards handed out before it, then raise it."""
    waiting: dict = {}  # object ref -> index of the actor encoding it
    load = [0] * len(actors)

    def land(timeout: float | None) -> Iterator[dict]:
        with quiet():
            ready, _ = ray.wait(list(waiting), num_returns=1, timeout=timeout)
        for ref in ready:
            load[waiting.pop(ref)] -= 1
            yield _record(ray, ref)

    try:
        for index in range(len(job.inputs)):
            for item in job.work(index):
                if isinstance(item, InputEnd):
                    yield item
                    continue
                while len(waiting) >= QUEUED_PER_ACTOR * len(actors):
                    yield from land(None)
                actor = min(range(len(actors)), key=load.__getitem__)
                with quiet():
                    waiting[actors[actor].encode.remote(item)] = actor
                load[actor] += 1
                yield from land(0)  # what finished meanwhile, without waiting
    except Exception:
        while waiting:
            yield from land(None)
        raise
    while waiting:
        yield from land(None)


def _record(ray, ref) -> dict:
    from ray.exceptions import RayActorError

    try:
        with quiet():
            return ray.get(ref)
    except RayActorError as err:
        raise WorkerLost(
            f"a Ray encoder worker died {RETRIES + 1} times on one shard (out of memory? a lost node?): "
            f"{str(err).splitlines()[0]}; the finished shards are kept, rerun to encode the rest"
        ) from None


def user_error(err: BaseException) -> BaseException:
    """The exception our code raised inside a Ray actor, unwrapped from Ray's error wrappers (their text
    holds the remote traceback; the CLI prints the one-line original)."""
    from ray.exceptions import RayError, RayTaskError

    seen = err
    while isinstance(seen, RayError) or type(seen).__module__.startswith("ray."):
        cause = seen.cause if isinstance(seen, RayTaskError) else seen.__cause__
        if cause is None:
            return err
        seen = cause
    return seen


class _ShardEncoder:
    """A Ray actor: loads the encoder once, then encodes and writes each shard it is handed."""

    def __init__(self, job: EncodeJob, threads: int, gpu: bool) -> None:
        import torch

        from sentkit.encoders import load_encoder

        torch.set_num_threads(threads)
        self.job = job
        # an error in an actor's constructor reaches the driver only as text; kept, it is raised by the
        # first call, which returns it whole (a missing model: its one-line message)
        self.error: Exception | None = None
        try:
            device = "cuda" if gpu else "cpu"
            self.encoder = cast_encoder(
                place_encoder(load_encoder(job.model), device)[0], job.precision, device
            )
        except Exception as err:
            self.error = err

    def ready(self) -> str:
        """The id of the node this actor runs on, once its encoder is loaded."""
        import ray

        if self.error is not None:
            raise self.error
        return ray.get_runtime_context().get_node_id()

    def encode(self, work: ShardWork) -> dict:
        if self.error is not None:
            raise self.error
        if self.job.before_shard is not None:
            self.job.before_shard(work)
        source = self.job.inputs[work.input].path
        return encode_and_write(self.encoder, work, self.job.settings, self.job.folder, source)
