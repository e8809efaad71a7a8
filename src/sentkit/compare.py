"""`sentkit compare A.json B.json`: per task both runs scored, B - A with a paired bootstrap interval and
p-value over the same test items (sentkit.stats.bootstrap), from the per-item values `sentkit eval` keeps.

Two runs are compared only on identical items: a task whose data hash differs, or a per-item sidecar that
is missing or no longer the file the results were written with, stops the comparison with one line. So do
recorded scores their per-item values no longer give (an edited results file), and runs with no task both
hold per-item values of (nothing to compare).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.errors import DataFormatError, InvalidArgument
from sentkit.stats import bootstrap
from sentkit.stats.items import TaskItems, read_sidecar


class ItemsDiffer(DataFormatError):
    """The two runs did not score the same items, so no paired comparison exists."""


def _run_items(run: dict, tasks: Sequence[str]) -> dict[str, TaskItems]:
    """Task -> its per-item values, the sidecar checked against the sha256 the results file records."""
    path = Path(run["path"])
    needs_sidecar = any(
        "sidecar" in entry
        for task in tasks
        for group in run["tasks"][task].get("items", {}).get("groups", {}).values()
        for entry in group.get("arrays", {}).values()
    )
    sidecar = None
    if needs_sidecar:
        ref = run.get("items_file")
        if not isinstance(ref, dict) or "path" not in ref or "sha256" not in ref:
            raise DataFormatError(path, None, "names per-item values in a sidecar but no items_file entry")
        sidecar = read_sidecar(path.parent / ref["path"], ref["sha256"], path)
    items = {
        task: TaskItems.from_record(run["tasks"][task]["items"], sidecar, f"{path}: tasks.{task}.items")
        for task in tasks
        if "items" in run["tasks"][task]
    }
    for task, task_items in items.items():
        _check_recorded_scores(path, task, run["tasks"][task], task_items)
    return items


def _check_recorded_scores(path: Path, task: str, record: dict, items: TaskItems) -> None:
    """The scores a results file records must be the ones its per-item values give (as `evaluate` checked
    when it wrote them): an edited main_score is refused, not silently replaced by the recomputed one."""
    points = bootstrap.point_scores(items)
    recorded = [("main_score", "main_score", record.get("main_score"))]
    recorded += [(f"scores.{key}", key, value) for key, value in (record.get("scores") or {}).items()]
    for where, key, value in recorded:
        if key not in points:
            continue
        try:
            close = abs(float(value) - points[key]) <= 1e-6 * max(1.0, abs(points[key]))
        except (TypeError, ValueError):
            close = False
        if not close:
            raise DataFormatError(
                path,
                None,
                f"tasks.{task}.{where} is {value!r} but its per-item values give {points[key]:.6g} "
                "(edited by hand?); compare needs the scores as sentkit eval wrote them",
            )


def compare_runs(
    a_path: str | Path,
    b_path: str | Path,
    tasks: Sequence[str] | None = None,
    resamples: int = bootstrap.RESAMPLES,
    seed: int = bootstrap.SEED,
    level: float = bootstrap.LEVEL,
) -> dict:
    """B - A per task both runs scored (or `tasks`), paired over their shared items; see module doc."""
    from sentkit.report import load_results

    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidArgument(f"resamples must be a positive integer, got {resamples!r}")
    a, b = load_results([a_path, b_path])
    shared = [t for t in a["tasks"] if t in b["tasks"]]
    if tasks is not None:
        unknown = [t for t in tasks if t not in shared]
        if unknown:
            raise InvalidArgument(f"task(s) {', '.join(unknown)} not scored in both {a_path} and {b_path}")
        shared = [t for t in shared if t in tasks]
    if not shared:
        raise InvalidArgument(f"{a_path} and {b_path} share no scored task")
    compared, missing = _paired_items(a, b, a_path, b_path, shared)
    compared = {
        task: {"unit": ta.unit, "scores": bootstrap.paired_difference(ta, tb, resamples, seed, level)}
        for task, (ta, tb) in compared.items()
    }
    return {
        "a": {"path": str(a_path), "model": a["model"]},
        "b": {"path": str(b_path), "model": b["model"]},
        "bootstrap": {
            "method": "paired percentile",
            "level": level,
            "resamples": resamples,
            "seed": seed,
            "p_value": "two-sided; share of replicate differences at least as far from the observed one as it is from 0",
        },
        "tasks": compared,
        "not_compared": missing,
    }


def compare_pooled(
    pairs: Sequence[tuple[str | Path, str | Path]],
    tasks: Sequence[str] | None = None,
    resamples: int = bootstrap.RESAMPLES,
    seed: int = bootstrap.SEED,
    level: float = bootstrap.LEVEL,
) -> dict:
    """Several (A, B) results-file pairs on the same items, e.g. a baseline and a method trained with the
    same seed, one pair per seed: per task every file scored, the mean over pairs of B - A with a paired
    bootstrap interval and p-value (`bootstrap.pooled_difference`; one pair gives `compare_runs`' numbers).
    Every file must hold the same items for a task, else ItemsDiffer, as in `compare_runs`."""
    from sentkit.report import load_results

    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidArgument(f"resamples must be a positive integer, got {resamples!r}")
    if not pairs:
        raise InvalidArgument("compare_pooled needs at least one (A, B) pair of results files")
    paths = [path for pair in pairs for path in pair]
    runs = load_results(paths)
    shared = [t for t in runs[0]["tasks"] if all(t in run["tasks"] for run in runs)]
    if tasks is not None:
        unknown = [t for t in tasks if t not in shared]
        if unknown:
            raise InvalidArgument(f"task(s) {', '.join(unknown)} not scored in every file of the pairs")
        shared = [t for t in shared if t in tasks]
    if not shared:
        raise InvalidArgument("the results files share no scored task")
    per_pair, missing = [], {}
    for i in range(len(pairs)):
        items, gaps = _paired_items(runs[2 * i], runs[2 * i + 1], paths[2 * i], paths[2 * i + 1], shared)
        per_pair.append(items)
        missing.update({task: why for task, why in gaps.items() if task not in missing})
    compared = {}
    for task in shared:
        if task in missing:
            continue
        items = [pair[task] for pair in per_pair]
        first = items[0][0]
        for i, (ta, _) in enumerate(items[1:], start=1):  # each B was checked against its A
            if ta.data_sha256() != first.data_sha256():
                raise ItemsDiffer(
                    paths[2 * i],
                    None,
                    f"task {task} was not scored on the same items as in {paths[0]} "
                    f"({_difference(first, ta)}); no pooled comparison exists",
                )
        compared[task] = {
            "unit": first.unit,
            "scores": bootstrap.pooled_difference(items, resamples, seed, level),
        }
    return {
        "pairs": [
            {
                "a": {"path": str(a), "model": runs[2 * i]["model"]},
                "b": {"path": str(b), "model": runs[2 * i + 1]["model"]},
            }
            for i, (a, b) in enumerate(pairs)
        ],
        "bootstrap": {
            "method": "paired percentile, pooled over pairs",
            "level": level,
            "resamples": resamples,
            "seed": seed,
            "pooling": "the mean over pairs of B - A; every run resampled on the same item draws",
            "p_value": "two-sided; share of replicate differences at least as far from the observed one as it is from 0",
        },
        "tasks": compared,
        "not_compared": missing,
    }


def _paired_items(
    a: dict, b: dict, a_path: str | Path, b_path: str | Path, shared: Sequence[str]
) -> tuple[dict[str, tuple[TaskItems, TaskItems]], dict[str, str]]:
    """Task -> (A's items, B's items) for each shared task both hold per-item values of, checked to be the
    same items (else ItemsDiffer); and task -> why it is not compared, for the others."""
    items_a, items_b = _run_items(a, shared), _run_items(b, shared)
    _require_some_items(shared, {a_path: items_a, b_path: items_b})
    compared, missing = {}, {}
    for task in shared:
        if task not in items_a or task not in items_b:
            which = " and ".join(
                str(p) for p, items in ((a_path, items_a), (b_path, items_b)) if task not in items
            )
            missing[task] = f"no per-item values in {which} (written by an older sentkit)"
            continue
        ta, tb = items_a[task], items_b[task]
        if ta.data_sha256() != tb.data_sha256():
            raise ItemsDiffer(
                b_path,
                None,
                f"task {task} was not scored on the same items as in {a_path} ({_difference(ta, tb)}); "
                "no paired comparison exists (leave the task out with --tasks)",
            )
        compared[task] = (ta, tb)
    return compared, missing


def _require_some_items(shared: Sequence[str], items: dict[str | Path, dict[str, TaskItems]]) -> None:
    """At least one shared task with per-item values in every file, else one line naming the files that
    lack them (an empty table would look like a comparison that found nothing)."""
    if any(all(task in run for run in items.values()) for task in shared):
        return
    lacking = [str(path) for path, run in items.items() if not any(task in run for task in shared)]
    what = "the shared task" if len(shared) == 1 else f"any of the {len(shared)} shared tasks"
    raise DataFormatError(
        " and ".join(lacking or map(str, items)),
        None,
        (f"no per-item values for {what}" if lacking else "no shared task has per-item values in both")
        + " (written by an older sentkit), so nothing can be compared; evaluate the model again with "
        "`sentkit eval` to get them",
    )


def _difference(a: TaskItems, b: TaskItems) -> str:
    """What differs between two runs' items, in a few words."""
    if set(a.groups) != set(b.groups):
        only_a, only_b = sorted(set(a.groups) - set(b.groups)), sorted(set(b.groups) - set(a.groups))
        return f"breakdown keys only in A: {only_a or '-'}, only in B: {only_b or '-'}"
    for key, group in a.groups.items():
        other = b.groups[key]
        if group.n != other.n:
            return f"{key}: {group.n} items against {other.n}"
        if group.ids_sha256 != other.ids_sha256:
            return f"{key}: item hash {group.ids_sha256[:12]} against {other.ids_sha256[:12]}"
        if (group.statistic, group.stratum) != (other.statistic, other.stratum):
            return f"{key}: scored as {group.statistic} against {other.statistic}"
    return "their training data or settings differ"


def comparison_text(result: dict) -> str:
    """A plain table: one line per task with A, B, B - A, its interval and p-value."""
    b = result["bootstrap"]
    pct = f"{100 * b['level']:g}%"
    lines = [
        f"A: {result['a']['model']} ({result['a']['path']})",
        f"B: {result['b']['model']} ({result['b']['path']})",
        f"paired bootstrap over each task's items: {b['resamples']} resamples, seed {b['seed']}; "
        f"{pct} percentile interval of B - A; two-sided p",
        "",
    ]
    rows = [("task", "A", "B", "B - A", f"{pct} CI", "p")]
    for task, entry in result["tasks"].items():
        main = entry["scores"]["main_score"]
        ci = main["ci"]
        rows.append(
            (
                task,
                f"{main['a']:.2f}",
                f"{main['b']:.2f}",
                f"{main['delta']:+.2f}",
                f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "-",
                f"{main['p_value']:.3f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        )
    for task, why in result["not_compared"].items():
        lines.append(f"{task}: not compared, {why}")
    return "\n".join(lines) + "\n"


def write_comparison(result: dict, path: str | Path) -> Path:
    atomic_write_json(path, result)
    return Path(path)
