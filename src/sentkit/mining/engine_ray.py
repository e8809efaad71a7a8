"""The Ray engine of `sentkit mine`: each direction's searched side split into key parts, one per Ray worker.

For each direction the searched side's rows are split into W consecutive parts of near-equal size, and W
actors are started, each holding one part (key_part.KeyPart): a worker reads its own rows from the shard folder
(which must therefore be reachable from every node, as for `sentkit encode --address`), or receives them
through Ray's object store when the side was encoded in memory. An approximate index is trained once by the
driver and handed to every worker, which adds its own rows. The driver reads the query side one block at a
time, puts it in the object store once, and every worker searches it against its part; the driver merges
the W partial top-k lists in part order (exact: the lists of one process). INFLIGHT blocks are searched at
once, so the workers never wait for the driver to read the next one. No process holds a side's vectors:
a worker holds its part, the driver a few query blocks and the (n, k) neighbour lists.

A worker that dies (out of memory, killed, a lost node) is restarted by Ray, which reads its part again, and
its unfinished searches are retried, at most RETRIES times; beyond that the run stops with the finished
blocks kept in the work folder, and the same command resumes it. Workers ask Ray for the CPUs (and GPUs)
of corpus.engine_ray.ray_layout: `workers` as asked, else one per GPU where there are GPUs and the exact
search may use them, else one per node (as many as the smallest node's CPUs hold), threads one per CPU.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest

import numpy as np

from sentkit.corpus.engine_ray import (
    RETRIES,
    WorkerLost,
    init_ray,
    quiet,
    ray_layout,
    require_ray,
    user_error,
    wait_ready,
)
from sentkit.errors import InvalidArgument
from sentkit.mining.exact import merge_topk
from sentkit.mining.key_part import KeyPart, SearchPlan, half_available_memory

INFLIGHT = 2  # query blocks searched at once: one being searched while the next is read and sent


@dataclass(frozen=True)
class PartSource:
    """Where a worker finds its key part: rows of a shard folder (`folder`; `rows` the folder rows, else
    first..stop-1), or the unit rows themselves (`array`, a side encoded in memory)."""

    folder: str | None = None
    first: int = 0
    stop: int = 0
    rows: np.ndarray | None = None
    array: np.ndarray | None = None

    def open(self):
        """The part as a vector set."""
        from sentkit.mining.exact import UnitRows
        from sentkit.mining.row_subset import RowSubset
        from sentkit.mining.vectors import ShardVectors

        if self.array is not None:
            return UnitRows(self.array)
        vectors = ShardVectors(self.folder, verify=False)  # the driver verified the folder and its inputs
        rows = self.rows if self.rows is not None else np.arange(self.first, self.stop, dtype=np.int64)
        return RowSubset(vectors, rows)


def part_sources(keys, parts: int) -> list[tuple[int, PartSource]]:
    """(first row, source) of each of `parts` consecutive, near-equal parts of the vector set `keys`."""
    from sentkit.mining.row_subset import RowSubset
    from sentkit.mining.vectors import ShardVectors

    bounds = np.linspace(0, keys.n, parts + 1).round().astype(np.int64)
    out = []
    for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if isinstance(keys, ShardVectors):
            source = PartSource(folder=str(keys.folder), first=first, stop=stop)
        elif isinstance(keys, RowSubset) and isinstance(keys.vectors, ShardVectors):
            source = PartSource(folder=str(keys.vectors.folder), rows=keys.kept[first:stop].copy())
        else:
            source = PartSource(array=keys.take(np.arange(first, stop)))
        out.append((first, source))
    return out


def merged(results: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's top k over the parts' lists, merged in part order (ties keep the earlier part, so the
    lower row): (sims (b, k), rows (b, k))."""
    b = len(results[0][0])
    best_s = np.full((b, k), -np.inf, dtype=np.float32)
    best_i = np.full((b, k), -1, dtype=np.int64)
    for sims, rows in results:
        merge_topk(best_s, best_i, sims, rows)
    return best_s, best_i


class RayEngine:
    """Searches each direction on Ray workers, one key part each (see the module docstring)."""

    kind = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        device: str = "auto",
        on_block: Callable[[RayEngine, int], None] | None = None,
    ) -> None:
        self.ray = require_ray()
        self.address = address
        self.actors: list = []
        self.loads: list = []
        self.started_here = not self.ray.is_initialized()
        if not self.started_here and address:
            raise InvalidArgument("--address: Ray is already initialised in this process")
        if self.started_here:
            init_ray(self.ray, address)
        try:
            with quiet():
                nodes = [n for n in self.ray.nodes() if n.get("Alive")]
            node_cpus = [n["Resources"].get("CPU", 0.0) for n in nodes]
            gpus = sum(n["Resources"].get("GPU", 0.0) for n in nodes)
            # without --workers, one worker per node (as many as the smallest node's CPUs hold), each running
            # a thread per CPU: every key part re-scores its own candidates and the driver merges one list per
            # part, so fewer, larger parts do less of that repeated work than one part per CPU would
            threads = None if workers else max(1, int(min((c for c in node_cpus if c > 0), default=1)))
            self.layout = ray_layout(node_cpus, gpus, workers, threads, device)
        except BaseException:
            self.shutdown()
            raise
        self.on_block = on_block  # called with each finished block (tests kill a worker here)
        self.preassignable = False
        self.k = 0
        self.nodes: set[str] = set()
        self.peak_rss_mib: list[float] = []
        # the driver's seconds: query blocks (and lists chosen) into the object store, the parts' lists merged
        self.seconds = {"put_s": 0.0, "merge_s": 0.0}

    @property
    def workers(self) -> int:
        return self.layout.workers

    def open(self, keys, plan: SearchPlan, trained: np.ndarray | None) -> None:
        """Start one worker per key part of `keys`, each reading its part (and filling its index)."""
        ray = self.ray
        gpu = self.layout.gpus_per_worker > 0
        plan = dataclasses.replace(plan, exact_device="cuda" if gpu else "cpu")
        self.k = plan.k
        remote = ray.remote(KeyPartWorker).options(
            num_cpus=self.layout.cpus_per_worker,
            num_gpus=self.layout.gpus_per_worker or None,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )
        try:
            with quiet():
                shared = ray.put(trained) if trained is not None else None
                # what a worker loads its part from, as object refs inside a list: Ray hands them over
                # unresolved, the worker fetches them on its first call (again after a restart)
                self.loads = [
                    [ray.put(source), first, plan, shared]
                    for first, source in part_sources(keys, self.workers)
                ]
                self.actors = [remote.remote(self.layout.threads) for _ in self.loads]
            what = "mine: {ready} of {all} Ray key-part workers"
            refs = [actor.ready.remote(load) for actor, load in zip(self.actors, self.loads)]
            ready = wait_ready(ray, self.actors, self.layout, what=what, refs=refs)
            self.nodes |= {node for node, _ in ready}
            self.preassignable = all(can for _, can in ready)
        except Exception as err:
            self._stop_workers()
            raise user_error(err) from None

    def _all(self, method: str, *args) -> list:
        """`method(*args, its part's load)` on every worker, results in part order (a worker that died past
        its retries: WorkerLost; an error of ours inside a worker: raised as itself)."""
        with quiet():
            refs = [getattr(a, method).remote(*args, load) for a, load in zip(self.actors, self.loads)]
        return self._get(refs)

    def _get(self, refs: list) -> list:
        from ray.exceptions import RayActorError

        try:
            with quiet():
                return self.ray.get(refs)
        except RayActorError as err:
            raise WorkerLost(
                f"a Ray mining worker died {RETRIES + 1} times (out of memory? a lost node?): "
                f"{str(err).splitlines()[0]}; the finished blocks are kept, rerun the same command to resume"
            ) from None
        except Exception as err:
            raise user_error(err) from None

    def _put(self, value):
        start = time.perf_counter()
        with quiet():
            ref = self.ray.put(value)
        self.seconds["put_s"] += time.perf_counter() - start
        return ref

    def _merged(self, results: list) -> tuple[np.ndarray, np.ndarray]:
        start = time.perf_counter()
        out = merged(results, self.k)
        self.seconds["merge_s"] += time.perf_counter() - start
        return out

    def tuning_search(self, queries: np.ndarray, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
        return self._merged(self._all("tuning_search", self._put(queries), nprobe))

    def exact(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._merged(self._all("exact", self._put(queries)))

    def search_blocks(
        self, blocks: Iterable[tuple[int, np.ndarray]], nprobe: int | None
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(block id, sims, rows) of each block, in order: an IVF index's lists chosen once per query
        (`_shared_coarse`), else INFLIGHT blocks searched at once."""
        if self.preassignable and len(self.actors) > 1:
            yield from self._shared_coarse(blocks, nprobe)
            return
        pending: deque = deque()
        source = iter(blocks)

        def submit() -> bool:
            item = next(source, None)
            if item is None:
                return False
            block, queries = item
            ref = self._put(queries)
            with quiet():
                refs = [a.search.remote(ref, nprobe, load) for a, load in zip(self.actors, self.loads)]
                pending.append((block, refs))
            return True

        while len(pending) < INFLIGHT and submit():
            pass
        while pending:
            block, refs = pending.popleft()
            sims, rows = self._merged(self._get(refs))
            submit()
            yield block, sims, rows
            if self.on_block is not None:
                self.on_block(self, block)

    def _shared_coarse(
        self, blocks: Iterable[tuple[int, np.ndarray]], nprobe: int | None
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Two rounds per block: each worker ranks 1/W of its queries against the lists' centroids (all parts
        share one quantizer), then every worker searches the whole block in the lists so chosen. Ranking a
        query against every centroid on every part would repeat that work W times; here it is done once,
        spread over the workers. The next block's ranking is under way while a block is searched."""

        def rank(item):
            if item is None:
                return None
            block, queries = item
            bounds = np.linspace(0, len(queries), len(self.actors) + 1).round().astype(int)
            ref = self._put(queries)
            with quiet():
                refs = [
                    actor.coarse.remote(ref, int(lo), int(hi), nprobe, load)
                    for actor, load, lo, hi in zip(self.actors, self.loads, bounds[:-1], bounds[1:])
                ]
            return block, ref, refs

        source = iter(blocks)
        current = rank(next(source, None))
        while current is not None:
            block, ref, refs = current
            ranked = self._get(refs)
            assigned = (np.concatenate([r[0] for r in ranked]), np.concatenate([r[1] for r in ranked]))
            shared = self._put(assigned)
            with quiet():
                searches = [
                    a.search.remote(ref, nprobe, load, shared) for a, load in zip(self.actors, self.loads)
                ]
            current = rank(next(source, None))
            sims, rows = self._merged(self._get(searches))
            yield block, sims, rows
            if self.on_block is not None:
                self.on_block(self, block)

    def worker_pids(self) -> list[int]:
        """The process id of each worker (tests kill one)."""
        return self._all("pid")

    def close(self) -> list[dict]:
        """The workers' records (rows, seconds, peak memory), then the workers stopped."""
        records: list[dict] = []
        try:
            if self.actors:
                records = self._all("record")
                peaks = [r.get("peak_rss_mib", 0.0) for r in records]  # worker i's, over both directions
                self.peak_rss_mib = [
                    max(a, b) for a, b in zip_longest(self.peak_rss_mib, peaks, fillvalue=0.0)
                ]
        finally:
            self._stop_workers()
        return records

    def _stop_workers(self) -> None:
        """Stop this direction's workers now (their CPUs go back to the cluster for the next direction)."""
        with quiet():
            for actor in self.actors:
                self.ray.kill(actor)
        self.actors, self.loads = [], []

    def record(self) -> dict:
        return {
            "kind": self.kind,
            "address": self.address,
            "workers": self.workers,
            "key_parts": self.workers,
            "nodes": len(self.nodes),
            "cpus_per_worker": self.layout.cpus_per_worker,
            "gpus_per_worker": self.layout.gpus_per_worker,
            "threads_per_worker": self.layout.threads,
            "worker_peak_rss_mib": [round(p, 1) for p in self.peak_rss_mib],
            **{name: round(value, 2) for name, value in self.seconds.items()},
        }

    def shutdown(self) -> None:
        self._stop_workers()
        with quiet():
            if self.started_here and self.ray.is_initialized():
                self.ray.shutdown()


class KeyPartWorker:
    """A Ray actor holding one key part, loaded on its first call from the refs that call carries (so a
    worker Ray restarts loads its part again on the retried call)."""

    def __init__(self, threads: int) -> None:
        import faiss
        import torch

        torch.set_num_threads(threads)
        faiss.omp_set_num_threads(threads)
        self.part: KeyPart | None = None

    def _part(self, load: list) -> KeyPart:
        if self.part is None:
            import ray

            source, first, plan, trained = load
            source = ray.get(source)
            trained = ray.get(trained) if trained is not None else None
            # a worker is there to hold its part: its rows stay in memory up to half of what the node has
            self.part = KeyPart(source.open(), first, plan, trained, hold_bytes=half_available_memory())
        return self.part

    def ready(self, load: list) -> tuple[str, bool]:
        """(the node this worker runs on, whether its index takes lists chosen by another part)."""
        import ray

        part = self._part(load)
        return ray.get_runtime_context().get_node_id(), part.preassignable

    def coarse(self, queries: np.ndarray, first: int, stop: int, nprobe: int | None, load: list):
        return self._part(load).coarse(queries[first:stop], nprobe)

    def search(self, queries: np.ndarray, nprobe: int | None, load: list, assigned=None):
        return self._part(load).search(queries, nprobe, assigned)

    def tuning_search(self, queries: np.ndarray, nprobe: int, load: list):
        return self._part(load).tuning_search(queries, nprobe)

    def exact(self, queries: np.ndarray, load: list):
        return self._part(load).exact(queries)

    def pid(self, load: list) -> int:
        return os.getpid()

    def record(self, load: list) -> dict:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return self._part(load).record() | {"peak_rss_mib": round(peak, 1)}
