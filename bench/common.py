"""What every bench script reports the same way: sentences/s rows from repeated timings, stage timings with
the peak RSS, provenance, output; and how a script starts a copy of itself in a child process."""

from __future__ import annotations

import os
import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.provenance import machine_info, package_versions, source_revision

ROOT = Path(__file__).resolve().parents[1]  # the repository root, where `python -m bench.NAME` runs from


def child_pythonpath() -> dict[str, str]:
    """{"PYTHONPATH": ...} with the repository root first, for a child `python -m bench.NAME` started from
    any folder."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def speed_rows(seconds: dict[str, list[float]], cpu_seconds: dict[str, list[float]], n: int) -> dict:
    """{runner: best and median sentences/s over its repeats, with the raw wall and CPU seconds}."""
    return {
        name: {
            "best_sent_per_s": n / min(secs),
            "median_sent_per_s": n / statistics.median(secs),
            "seconds": secs,
            "cpu_seconds": cpu_seconds[name],
        }
        for name, secs in seconds.items()
    }


def provenance(**extra_versions: str) -> dict:
    """Package versions (plus any given), machine and local time: the fields every results JSON ends with."""
    return {
        "versions": {**package_versions(), **extra_versions},
        **source_revision(),
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_result(out: str | Path, result: dict) -> dict:
    """Write `result` atomically to `out`, say where, and return it."""
    atomic_write_json(out, result)
    print(f"wrote {out}")
    return result


class StageMeter:
    """Wall and CPU seconds and the peak RSS (sampled every 20 ms) of named stages."""

    def __init__(self) -> None:
        self.stages: dict[str, dict] = {}

    @contextmanager
    def stage(self, name: str):
        peak, running = [rss_mib()], [True]

        def sample():
            while running[0]:
                peak[0] = max(peak[0], rss_mib())
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            running[0] = False
            sampler.join()
            self.stages[name] = {
                "wall_s": round(time.perf_counter() - wall, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
                "peak_rss_mib": round(max(peak[0], rss_mib()), 1),
            }
            print(f"  {name:<16} {self.stages[name]}", flush=True)


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
