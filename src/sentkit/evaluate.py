"""Run evaluation tasks on one encoder; write one JSON results file and a markdown table per run."""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from sentkit.atomic import atomic_write_json, atomic_write_text, check_writable_dir, find_non_finite, to_json
from sentkit.datasets.root import data_root as default_data_root
from sentkit.encoders.protocol import Encoder, checked_encode
from sentkit.errors import DataWarning, InvalidArgument, LanguageNotCovered
from sentkit.markdown import markdown_text
from sentkit.provenance import machine_info, package_versions, seed_everything, source_revision
from sentkit.stats import bootstrap
from sentkit.stats.items import write_sidecar
from sentkit.tasks import get_task, resolve_tasks
from sentkit.tasks.task import Task
from sentkit.tasks.user_tasks import read_user_tasks


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
            vectors = checked_encode(self.inner, missing, batch_size=batch_size, show_progress=show_progress)
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


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during `evaluate`: finished tasks are kept in `path` (marked incomplete); None if none finished."""

    def __init__(self, path: Path | None, finished: int) -> None:
        super().__init__(path, finished)
        self.path = path
        self.finished = finished


class TaskNotScored(KeyError):
    """`results["tasks"][name]` for a task that was skipped or failed: the KeyError says which and why."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class TaskRecords(dict):
    """`results["tasks"]`: task -> its record, scored tasks only. Looking up a task the run skipped or that
    failed raises TaskNotScored with the reason `results["skipped"]` or `results["errors"]` holds."""

    def __init__(self, skipped: dict, errors: dict) -> None:
        super().__init__()
        self.skipped, self.errors = skipped, errors

    def __missing__(self, name):
        if name in self.skipped:
            raise TaskNotScored(f"{name!r} was skipped: {self.skipped[name]} (see results['skipped'])")
        if name in self.errors:
            error = self.errors[name]
            raise TaskNotScored(
                f"{name!r} failed: {error['type']}: {error['message']} (see results['errors'])"
            )
        raise KeyError(name)


class NonFiniteScore(ValueError):
    """A task returned NaN or Infinity: recorded as that task's error, never written as a score."""


def check_positive_int(name: str, value: object) -> int:
    """`value` as an int >= 1, else InvalidArgument naming the option (bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgument(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_seed(value: object) -> int:
    """NumPy accepts seeds in [0, 2**32); anything else fails late, inside the first task."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**32:
        raise InvalidArgument(f"seed must be an integer from 0 to 2**32-1, got {value!r}")
    return int(value)


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
    task_options: dict | None = None,
    prepared: Mapping[str, Task] | None = None,
    resamples: int = bootstrap.RESAMPLES,
) -> dict:
    """Evaluate `encoder` on the tasks (names or suites); return the results and write them under `out`.

    `task_options` are settings only some tasks take, given to those (`{"kmeans": "faiss"}`: the
    clustering tasks; see tasks.get_task); they are recorded in the results' config.
    Every file-backed task (`sts:pairs.tsv`) is read before the first task runs, so a malformed file
    raises DataFormatError at once; `prepared` passes tasks already built (by `read_user_tasks`, or a
    caller's own variant of a set under its own, unregistered name).
    Each score gets a 95% percentile bootstrap interval over the task's items (`resamples` draws, seed
    `bootstrap.SEED`); the per-item values behind it go inline or, when large, to `<stem>.items.npz`.
    Each finished task is written at once (`"complete": false` until the last); a task that raises is
    recorded under `errors` and the rest still run; Ctrl-C keeps what finished (EvaluationInterrupted).
    """
    batch_size = check_positive_int("batch_size", batch_size)
    resamples = check_positive_int("resamples", resamples)
    seed = check_seed(seed)
    ready = dict(prepared or {})
    names = _task_names(tasks, ready)
    if not names:
        raise InvalidArgument(f"no tasks to run in {tasks!r}; `sentkit tasks` lists them")
    if data_root is not None and not Path(data_root).is_dir():
        raise InvalidArgument(f"data_root {data_root}: no such folder")
    if out is not None:
        check_writable_dir(out)  # before any task runs, not after the first one finishes
    ready.update(read_user_tasks([n for n in names if n not in ready], langs, batch_size))
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    skipped: dict[str, str] = {}
    errors: dict[str, dict] = {}
    results: dict = {
        "model": encoder.name,
        "complete": False,
        "tasks": TaskRecords(skipped, errors),
        "skipped": skipped,
        "errors": errors,
        "config": {
            "tasks": names,
            "langs": list(langs) if langs else None,
            "batch_size": batch_size,
            # paths as given, and absolute (the results file may be read from another folder)
            "data_root": str(data_root) if data_root else None,
            "data_root_absolute": str(Path(data_root).resolve() if data_root else default_data_root()),
            "out": str(out) if out is not None else None,
            "out_absolute": str(Path(out).resolve()) if out is not None else None,
            "task_options": dict(task_options or {}),
            **(extra_config or {}),
        },
        "seed": seed,
        "bootstrap": {
            "method": "percentile",
            "level": bootstrap.LEVEL,
            "resamples": resamples,
            "seed": bootstrap.SEED,
        },
        "versions": package_versions(),
        **source_revision(),
        "machine": machine_info(),
        # an export's runtime, its int8 method and check, and the int8 path chosen for this CPU (@int8)
        "encoder_runtime": getattr(encoder, "runtime_info", None),
        "started": started.isoformat(timespec="seconds"),
        "wall_s": 0.0,
    }
    stem = _free_stem(Path(out), results["model"], started) if out is not None else ""
    item_arrays: dict[str, np.ndarray] | None = {} if out is not None else None  # the sidecar's contents

    def save() -> None:
        results["wall_s"] = round(time.perf_counter() - t0, 3)
        if out is not None:
            write_results(results, out, started, stem=stem, item_arrays=item_arrays)

    timed = _CachingEncoder(encoder)
    bar = tqdm(names, desc="tasks", disable=not show_progress)
    name = ""
    try:
        for name in bar:
            bar.set_postfix_str(name)
            _run_task(
                name,
                timed,
                results,
                langs,
                batch_size,
                data_root,
                seed,
                show_progress,
                task_options,
                resamples,
                item_arrays,
                ready,
            )
            save()
    except KeyboardInterrupt as err:
        results["interrupted"] = name
        finished = len(results["tasks"]) + len(results["skipped"]) + len(results["errors"])
        if finished:
            save()
        raise EvaluationInterrupted(Path(results["path"]) if "path" in results else None, finished) from err
    finally:
        bar.close()
    results["complete"] = True
    save()
    return results


def _task_names(tasks: str | Sequence[str], ready: Mapping[str, Task]) -> list[str]:
    """`resolve_tasks`, except that a name `ready` holds is a task the caller built and is taken as is."""
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names: list[str] = []
    for item in (i.strip() for i in items if i.strip()):
        expanded = [item] if item in ready else resolve_tasks([item])
        names.extend(name for name in expanded if name not in names)  # an expansion holds no repeats
    return names


def _run_task(
    name: str,
    timed: _CachingEncoder,
    results: dict,
    langs: Sequence[str] | None,
    batch_size: int,
    data_root: str | Path | None,
    seed: int,
    show_progress: bool,
    task_options: dict | None = None,
    resamples: int = bootstrap.RESAMPLES,
    item_arrays: dict[str, np.ndarray] | None = None,
    ready: dict[str, Task] | None = None,
) -> None:
    """Run one task (`ready[name]` if built already) and record its scores (with intervals), its skip reason
    or its error in `results`.

    Arrays bound for the sidecar go to `item_arrays` once the task has succeeded (None: keep them inline).
    """
    seed_everything(seed)
    kwargs = {"batch_size": batch_size, "data_root": data_root, "options": task_options}
    if langs:
        kwargs["langs"] = list(langs)
    try:
        task = ready.pop(name) if ready and name in ready else get_task(name, **kwargs)
        timed.start_task()
        start = time.perf_counter()
        scores = task.evaluate(timed)
        record = _task_record(task, scores, time.perf_counter() - start, timed)
        pending: dict[str, np.ndarray] = {}  # sidecar arrays of this task, kept only if it succeeds
        if task.items is not None:
            store = None if item_arrays is None else _sidecar_store(len(item_arrays), pending)
            record = _with_intervals(record, task, scores, resamples, store)
    except LanguageNotCovered as err:
        if not langs:
            _record_error(results, name, err)
            return
        # a global --langs filter names languages this task lacks: recorded and said, not hidden
        results["skipped"][name] = str(err)
        tqdm.write(f"{name:>22s}  skipped: {err}", file=sys.stderr)
        return
    except Exception as err:  # recorded in the results; the other tasks still run
        _record_error(results, name, err)
        return
    results["tasks"][name] = record
    if item_arrays is not None:
        item_arrays.update(pending)
    for message in record.get("warnings", []):  # on stderr (`sentkit` prints one line each)
        warnings.warn(f"task {name}: {message}", DataWarning, stacklevel=2)
    if show_progress:
        cut = record["scores"].get("truncated_sentences")
        note = f", {int(cut)} truncated" if cut else ""
        tqdm.write(f"{name:>22s}  {record['main_score']:6.2f}  ({record['wall_s']:.1f}s{note})")


def _task_record(task: Task, scores: dict, wall: float, timed: _CachingEncoder) -> dict:
    """One task's entry in the results file; NaN or Infinity anywhere in it raises NonFiniteScore."""
    record = {
        "main_score": float(scores["main_score"]),
        "scores": {k: float(v) for k, v in scores.items()},
        "languages": list(task.languages),
        "wall_s": round(wall, 3),
        "sentences": timed.sentences,
        "sentences_requested": timed.requested,
        "sentences_per_s": round(timed.sentences / timed.seconds, 1) if timed.seconds > 0 else None,
        "meta": task.meta,
    }
    bad = find_non_finite(record, "")
    if bad is not None:
        raise NonFiniteScore(f"task {task.name!r} returned a non-finite value at {bad.lstrip('.')}")
    to_json(record)  # anything else the file could not hold fails here, as this task's error
    return record


def _with_intervals(
    record: dict, task: Task, scores: dict, resamples: int, store: Callable[[np.ndarray], str] | None
) -> dict:
    """`record` plus `main_score_ci` beside main_score, `ci` per score key and the per-item values, and
    `warnings` when the intervals do not measure the uncertainty (too few items: `bootstrap.interval_warnings`).

    The items must reproduce the task's own scores; a task whose items drifted from its metric fails here.
    """
    start = time.perf_counter()
    points = bootstrap.point_scores(task.items)
    for key in (k for k in scores if k in points):
        if not abs(points[key] - scores[key]) <= 1e-6 * max(1.0, abs(scores[key])):
            raise RuntimeError(
                f"task {task.name!r}: its per-item values give {key} = {points[key]!r}, not {scores[key]!r}"
            )
    intervals = bootstrap.confidence_intervals(task.items, resamples)
    items = task.items.to_record(store)
    out = {}
    for key, value in record.items():
        out[key] = value
        if key == "main_score" and "main_score" in intervals:
            out["main_score_ci"] = intervals["main_score"]
        if key == "scores":
            out["ci"] = {k: intervals[k] for k in scores if k in intervals}
    notes = bootstrap.interval_warnings(task.items, intervals)
    if notes:
        out["warnings"] = notes
    out["items"] = items
    out["bootstrap_s"] = round(time.perf_counter() - start, 3)
    to_json(out)  # inline values the file could not hold fail here, as this task's error
    return out


def _sidecar_store(first: int, pending: dict[str, np.ndarray]) -> Callable[[np.ndarray], str]:
    """A `TaskItems.to_record` store putting arrays in `pending` under sidecar keys a<first>, a<first+1>..."""

    def store(array: np.ndarray) -> str:
        key = f"a{first + len(pending)}"
        pending[key] = array
        return key

    return store


def _record_error(results: dict, name: str, err: BaseException) -> None:
    message = " ".join(str(err).split())
    results["errors"][name] = {"type": type(err).__name__, "message": message}
    tqdm.write(f"{name:>22s}  FAILED: {type(err).__name__}: {message}", file=sys.stderr)
    if os.environ.get("SENTKIT_DEBUG"):
        traceback.print_exception(err)


def _free_stem(out: Path, model: str, started: datetime) -> str:
    """`<model>__<time>`, with `-2`, `-3` ... when a run started in the same second already wrote there."""
    stem = f"{_slug(model)}__{started.strftime('%Y%m%dT%H%M%S')}"
    candidate, n = stem, 1
    while (out / f"{candidate}.json").exists() or (out / f"{candidate}.md").exists():
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


def write_results(
    results: dict,
    out: str | Path,
    started: datetime | None = None,
    stem: str | None = None,
    item_arrays: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write `<out>/<model>__<time>.json` and the matching `.md` table, each atomically.

    `item_arrays` (per-item values too large to inline) go first to `<stem>.items.npz`, which the JSON
    then names with its sha256 under `items_file`; the sidecar is rewritten only when arrays were added.
    """
    out = Path(out)
    if stem is None:
        stamp = (started or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S")
        stem = f"{_slug(results['model'])}__{stamp}"
    path = out / f"{stem}.json"
    if item_arrays:
        sidecar = out / f"{stem}.items.npz"
        known = results.get("items_file", {})
        if known.get("arrays") != len(item_arrays) or not sidecar.is_file():
            sha = write_sidecar(sidecar, item_arrays)
            results["items_file"] = {"path": sidecar.name, "sha256": sha, "arrays": len(item_arrays)}
    atomic_write_json(path, {k: v for k, v in results.items() if k != "path"})
    atomic_write_text(out / f"{stem}.md", results_table(results))
    results["path"] = str(path)
    return path


def results_table(results: dict) -> str:
    """A markdown table of main scores, timings and the per-language/per-dataset breakdown."""
    lines = [f"# {markdown_text(results['model'])}", ""]
    if not results.get("complete", True):
        where = results.get("interrupted")
        lines += [f"**Incomplete run**: {'interrupted during ' + where if where else 'still running'}.", ""]
    lines += ["| task | main score | 95% CI | wall s | sentences/s |", "|---|---:|---:|---:|---:|"]
    for name, r in results["tasks"].items():
        sps = r["sentences_per_s"] if r["sentences_per_s"] is not None else "-"
        ci = format_interval(r.get("main_score_ci")) or "-"
        lines.append(f"| {markdown_text(name)} | {r['main_score']:.2f} | {ci} | {r['wall_s']:.1f} | {sps} |")
    lines += [
        f"| {markdown_text(name)} | skipped: {markdown_text(why)} | | | |"
        for name, why in results.get("skipped", {}).items()
    ]
    lines += [
        f"| {markdown_text(name)} | error: {e['type']}: {markdown_text(e['message'])} | | | |"
        for name, e in results.get("errors", {}).items()
    ]
    lines += ["", f"total wall time: {results['wall_s']:.1f} s, seed {results['seed']}"]
    if "bootstrap" in results and any("main_score_ci" in r for r in results["tasks"].values()):
        b = results["bootstrap"]
        lines.append(
            f"95% CI: {b['method']} bootstrap over each task's test items, {b['resamples']} resamples, "
            f"seed {b['seed']}"
        )
    lines.append("")
    for name, r in results["tasks"].items():
        extra = {k: v for k, v in r["scores"].items() if k != "main_score"}
        if extra:
            ci = r.get("ci", {})
            cells = ", ".join(
                f"{markdown_text(k)} {v:.2f}" + (f" {format_interval(ci[k])}" if k in ci else "")
                for k, v in extra.items()
            )
            lines.append(f"- **{markdown_text(name)}**: {cells}")
    for name, r in results["tasks"].items():
        lines += [f"- **{markdown_text(name)}**: warning: {markdown_text(w)}" for w in r.get("warnings", [])]
    return "\n".join(lines) + "\n"


def format_interval(ci: Sequence[float] | None) -> str:
    """`[low, high]` with two decimals, as the scores are printed ('' when there is none)."""
    return "" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


class _CallableModule(types.ModuleType):
    """Importing this submodule rebinds the package attribute `sentkit.evaluate` from the function to the module:
    calling the module runs `evaluate`, so `from sentkit import evaluate; evaluate(...)` works either way."""

    def __call__(self, encoder, tasks="default", **kwargs):
        return self.evaluate(encoder, tasks, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
