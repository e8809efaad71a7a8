"""Run evaluation tasks on one encoder; write one JSON results file and a markdown table per run."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from sentkit.atomic import atomic_write_json, atomic_write_text
from sentkit.encoders.protocol import Encoder
from sentkit.errors import LanguageNotCovered
from sentkit.provenance import machine_info, package_versions, seed_everything
from sentkit.tasks import get_task, resolve_tasks


class _CachingEncoder:
    """Encodes each distinct sentence once per run and times it, so each task reports its own throughput.

    Tasks of one run share sentences (MewsC-16 clustering and kNN read the same 65k; STS-B dev feeds both
    stsb-dev and alignment-uniformity); vectors are kept up to `max_cached` sentences, then only reused.
    """

    def __init__(self, inner: Encoder, max_cached: int = 500_000) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_cached = max_cached
        self.cache: dict[str, np.ndarray] = {}
        self.start_task()

    def start_task(self) -> None:
        self.sentences = 0  # encoded by the model for this task
        self.requested = 0  # asked for by the task (cache hits included)
        self.seconds = 0.0

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.requested += len(sentences)
        missing = list(dict.fromkeys(s for s in sentences if s not in self.cache))
        fresh: dict[str, np.ndarray] = {}
        if missing or not sentences:
            start = time.perf_counter()
            vectors = self.inner.encode(missing, batch_size=batch_size, show_progress=show_progress)
            self.seconds += time.perf_counter() - start
            self.sentences += len(missing)
            if not sentences:
                return vectors
            fresh = dict(zip(missing, vectors))
            if len(self.cache) + len(fresh) <= self.max_cached:
                self.cache.update(fresh)
        return np.stack([fresh[s] if s in fresh else self.cache[s] for s in sentences])  # (n, dim)

    def __getattr__(self, item: str):  # tasks may read .dim or similar
        return getattr(self.inner, item)


def evaluate(
    encoder: Encoder,
    tasks: str | Sequence[str] = "default",
    langs: Sequence[str] | None = None,
    out: str | Path | None = None,
    seed: int = 0,
    batch_size: int = 64,
    data_root: str | Path | None = None,
    show_progress: bool = True,
    extra_config: dict | None = None,
) -> dict:
    """Evaluate `encoder` on the tasks (names or suites); return the results and write them under `out`."""
    names = resolve_tasks(tasks)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    results: dict = {
        "model": encoder.name,
        "tasks": {},
        "skipped": {},
        "config": {
            "tasks": names,
            "langs": list(langs) if langs else None,
            "batch_size": batch_size,
            "data_root": str(data_root) if data_root else None,
            **(extra_config or {}),
        },
        "seed": seed,
        "versions": package_versions(),
        "machine": machine_info(),
        "started": started.isoformat(timespec="seconds"),
    }
    timed = _CachingEncoder(encoder)
    bar = tqdm(names, desc="tasks", disable=not show_progress)
    for name in bar:
        bar.set_postfix_str(name)
        seed_everything(seed)
        kwargs = {"batch_size": batch_size, "data_root": data_root}
        if langs:
            kwargs["langs"] = list(langs)
        try:
            task = get_task(name, **kwargs)
        except LanguageNotCovered as err:
            if not langs:
                raise
            # a global --langs filter names languages this task lacks: recorded, not hidden
            results["skipped"][name] = str(err)
            if show_progress:
                tqdm.write(f"{name:>22s}  skipped: {err}")
            continue
        timed.start_task()
        start = time.perf_counter()
        scores = task.evaluate(timed)
        wall = time.perf_counter() - start
        results["tasks"][name] = {
            "main_score": float(scores["main_score"]),
            "scores": {k: float(v) for k, v in scores.items()},
            "languages": list(task.languages),
            "wall_s": round(wall, 3),
            "sentences": timed.sentences,
            "sentences_requested": timed.requested,
            "sentences_per_s": round(timed.sentences / timed.seconds, 1) if timed.seconds > 0 else None,
            "meta": task.meta,
        }
        if show_progress:
            tqdm.write(f"{name:>22s}  {scores['main_score']:6.2f}  ({wall:.1f}s)")
    results["wall_s"] = round(time.perf_counter() - t0, 3)
    if out is not None:
        write_results(results, out, started)
    return results


def write_results(results: dict, out: str | Path, started: datetime | None = None) -> Path:
    """Write `<out>/<model>__<time>.json` and the matching `.md` table, each atomically."""
    out = Path(out)
    stamp = (started or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S")
    stem = f"{_slug(results['model'])}__{stamp}"
    path = out / f"{stem}.json"
    atomic_write_json(path, results)
    atomic_write_text(out / f"{stem}.md", results_table(results))
    results["path"] = str(path)
    return path


def results_table(results: dict) -> str:
    """A markdown table of main scores, timings and the per-language/per-dataset breakdown."""
    lines = [
        f"# {results['model']}",
        "",
        "| task | main score | wall s | sentences/s |",
        "|---|---:|---:|---:|",
    ]
    for name, r in results["tasks"].items():
        sps = r["sentences_per_s"] if r["sentences_per_s"] is not None else "-"
        lines.append(f"| {name} | {r['main_score']:.2f} | {r['wall_s']:.1f} | {sps} |")
    lines += [f"| {name} | skipped: {why} | | |" for name, why in results.get("skipped", {}).items()]
    lines += ["", f"total wall time: {results['wall_s']:.1f} s, seed {results['seed']}", ""]
    for name, r in results["tasks"].items():
        extra = {k: v for k, v in r["scores"].items() if k != "main_score"}
        if extra:
            cells = ", ".join(f"{k} {v:.2f}" for k, v in extra.items())
            lines.append(f"- **{name}**: {cells}")
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"
