"""How many threads and workers a `sentkit encode` may ask for: no more than the CPUs that run them.

A torch thread or a Ray actor past the CPUs buys no speed, and far past them exhausts the system's thread
or process limit mid-run (docs/encoding.md, "Engines"). In process, and for the local
Ray cluster started without `--address`, the bound is the CPUs this process may run on (its affinity mask,
which containers and `taskset` narrow); on a cluster it is its nodes' CPUs (engine_ray.ray_layout).
"""

from __future__ import annotations

import os

from sentkit.errors import InvalidArgument


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def check_local_counts(threads: int | None, workers: int | None, address: str | None) -> None:
    """Without --address (the run, Ray's too, is on this machine): refuse (one line) --threads or --workers
    above this machine's CPUs (each worker runs at least one thread). With it, ray_layout checks them against
    the cluster's nodes."""
    if address is not None:
        return
    cpus = usable_cpus()
    if threads is not None and threads > cpus:
        raise InvalidArgument(
            f"--threads {threads}: this machine has {cpus} CPUs for sentkit; give --threads 1 to {cpus}"
        )
    if workers is not None and workers > cpus:
        raise InvalidArgument(
            f"--workers {workers}: Ray runs on this machine's {cpus} CPUs, one thread at least per worker; "
            f"give --workers 1 to {cpus} (or --address of a larger cluster)"
        )


def check_cluster_counts(node_cpus: list[float], threads: int | None, workers: int | None) -> None:
    """Refuse (one line) --threads above the CPUs of the cluster's largest node (a worker's threads share
    one node) and --workers above the cluster's CPUs."""
    largest, total = int(max(node_cpus, default=0)), int(sum(node_cpus))
    if threads is not None and threads > largest:
        raise InvalidArgument(
            f"--threads {threads}: the Ray cluster's largest node has {largest} CPUs; give --threads 1 to {largest}"
        )
    if workers is not None and workers > total:
        raise InvalidArgument(
            f"--workers {workers}: the Ray cluster has {total} CPUs, one thread at least per worker; "
            f"give --workers 1 to {total}"
        )
