"""What every bench script reports the same way: sentences/s rows from repeated timings, provenance, output."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.provenance import machine_info, package_versions


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
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_result(out: str | Path, result: dict) -> dict:
    """Write `result` atomically to `out`, say where, and return it."""
    atomic_write_json(out, result)
    print(f"wrote {out}")
    return result
