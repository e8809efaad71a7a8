"""`sentkit compare A.json B.json`: per task both runs scored, B - A with a paired bootstrap interval and
p-value over the same test items (sentkit.stats.bootstrap), from the per-item values `sentkit eval` keeps.

`sentkit compare --a A1.json A2.json ... --b B1.json B2.json ...`: runs of each side paired by training
seed, B - A over the seeds with an interval that counts the seeds as noise too (`compare_seeds`).

Two runs are compared only on identical items: a task whose data hash differs, or a per-item sidecar that
is missing or no longer the file the results were written with, stops the comparison with one line. So do
recorded scores their per-item values no longer give (an edited results file), and runs with no task both
hold per-item values of (nothing to compare).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from sentkit.atomic import atomic_write_json
from sentkit.errors import DataFormatError, InvalidArgument, MissingDataError
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


def _items_per_pair(
    paths: list[str | Path], tasks: Sequence[str] | None, resamples: int, no_pairs: str, scope: str
) -> tuple[list[dict], dict[str, list], dict[str, str]]:
    """Results files given as A, B, A, B, ...: the loaded runs, per task scored in every file the paired
    items of each (A, B) pair, and the tasks left out with the reason (no per-item values, ...)."""
    from sentkit.report import load_results

    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidArgument(f"resamples must be a positive integer, got {resamples!r}")
    if not paths:
        raise InvalidArgument(no_pairs)
    runs = load_results(paths)
    shared = [t for t in runs[0]["tasks"] if all(t in run["tasks"] for run in runs)]
    if tasks is not None:
        unknown = [t for t in tasks if t not in shared]
        if unknown:
            raise InvalidArgument(f"task(s) {', '.join(unknown)} not scored in every file of {scope}")
        shared = [t for t in shared if t in tasks]
    if not shared:
        raise InvalidArgument(f"the results files of {scope} share no scored task")
    per_pair, missing = [], {}
    for i in range(len(paths) // 2):
        items, gaps = _paired_items(runs[2 * i], runs[2 * i + 1], paths[2 * i], paths[2 * i + 1], shared)
        per_pair.append(items)
        missing.update({task: why for task, why in gaps.items() if task not in missing})
    per_task = {task: [pair[task] for pair in per_pair] for task in shared if task not in missing}
    return runs, per_task, missing


def _check_same_items(items: list, paths: list[str | Path], task: str, consequence: str) -> None:
    """Every pair's A scored the first pair's items (each B was checked against its A)."""
    first = items[0][0]
    for i, (ta, _) in enumerate(items[1:], start=1):
        if ta.data_sha256() != first.data_sha256():
            raise ItemsDiffer(
                paths[2 * i],
                None,
                f"task {task} was not scored on the same items as in {paths[0]} "
                f"({_difference(first, ta)}); {consequence}",
            )


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

    paths = [path for pair in pairs for path in pair]
    runs, per_task, missing = _items_per_pair(
        paths, tasks, resamples, "compare_pooled needs at least one (A, B) pair of results files", "the pairs"
    )
    compared = {}
    for task, items in per_task.items():
        first = items[0][0]
        _check_same_items(items, paths, task, "no pooled comparison exists")
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


def results_files(paths: Sequence[str | Path]) -> list[Path]:
    """The files as given; a folder stands for the results files directly in it (`*.json`, by name)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise MissingDataError(path / "*.json", "no results JSON in this folder")
            files.extend(found)
        else:
            files.append(path)
    return files


def training_seed(run: dict) -> int | None:
    """The training seed of the evaluated model: `config.train_seed` in the results file (`sentkit eval`
    and the examples record it), else the seed in the results.json of the sentkit training run whose model
    was evaluated (`config.model_absolute` is the run folder or its best/); None when neither says."""
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    if isinstance(config.get("train_seed"), int) and not isinstance(config["train_seed"], bool):
        return config["train_seed"]
    model = config.get("model_absolute")
    return run_seed(model) if isinstance(model, str) else None


def run_seed(model: str | Path) -> int | None:
    """The seed of the sentkit training run whose folder (or best/ inside it) is `model`, from the run's
    results.json; None when `model` is not such a folder."""
    for folder in (Path(model), Path(model).parent):
        record = folder / "results.json"
        if record.is_file():
            try:
                data = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(data, dict) and "objective" in data and isinstance(data.get("seed"), int):
                return data["seed"]
    return None


def _pair_by_seed(
    a_files: Sequence[Path], b_files: Sequence[Path], a_runs: list[dict], b_runs: list[dict]
) -> list[tuple[int | None, int, int]]:
    """(seed, index in A, index in B) per pair. A side of one file that records no training seed is an
    untrained start model, paired with every file of the other side; otherwise (docs/evaluation.md,
    "Comparing over training seeds") each side holds each seed once and both sides the same seeds, a
    single trained file included."""
    sides = (
        ("--a", a_files, [training_seed(r) for r in a_runs]),
        ("--b", b_files, [training_seed(r) for r in b_runs]),
    )
    by_side = {}
    for flag, files, seeds in sides:
        if len(files) == 1 and seeds[0] is None:
            continue  # the untrained start
        for path, seed in zip(files, seeds):
            if seed is None:
                raise InvalidArgument(
                    f"{path}: records no training seed (config.train_seed, or the results.json of the "
                    f"training run it evaluated), so {flag}'s runs cannot be paired by seed"
                )
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        if twice:
            where = ", ".join(str(p) for p, s in zip(files, seeds) if s == twice[0])
            raise InvalidArgument(f"{flag}: training seed {twice[0]} appears more than once ({where})")
        by_side[flag] = {s: i for i, s in enumerate(seeds)}
    if not by_side:  # two untrained models
        return [(None, 0, 0)]
    if len(by_side) == 1:
        flag, index = next(iter(by_side.items()))
        return [(s, 0, i) if flag == "--b" else (s, i, 0) for s, i in sorted(index.items())]
    only_a = sorted(set(by_side["--a"]) - set(by_side["--b"]))
    only_b = sorted(set(by_side["--b"]) - set(by_side["--a"]))
    if only_a or only_b:
        single = [flag for flag, files, _ in sides if len(files) == 1]
        why = ""
        if len(single) == 1:
            why = f" ({single[0]}'s one file records a training seed, so it is not an untrained start)"
        elif single:
            why = " (to compare two runs whatever their training seeds, give them as A.json B.json)"
        raise InvalidArgument(
            f"the training seeds do not pair: only in --a {only_a or '-'}, only in --b {only_b or '-'}{why}"
        )
    return [(s, i, by_side["--b"][s]) for s, i in sorted(by_side["--a"].items())]


def compare_seeds(
    a_paths: Sequence[str | Path],
    b_paths: Sequence[str | Path],
    tasks: Sequence[str] | None = None,
    resamples: int = bootstrap.RESAMPLES,
    seed: int = bootstrap.SEED,
    level: float = bootstrap.LEVEL,
) -> dict:
    """B - A over training seeds: runs of A and of B (files, or folders of results files) paired by their
    training seed, then `compare_seed_pairs`. Seeds that do not pair stop it with one line."""
    from sentkit.report import load_results

    if not a_paths or not b_paths:
        raise InvalidArgument("compare needs results files of A (--a) and of B (--b)")
    a_files, b_files = results_files(a_paths), results_files(b_paths)
    a_runs, b_runs = load_results(a_files), load_results(b_files)
    pairs = [(s, a_files[i], b_files[j]) for s, i, j in _pair_by_seed(a_files, b_files, a_runs, b_runs)]
    return compare_seed_pairs(pairs, tasks, resamples, seed, level)


def compare_seed_pairs(
    pairs: Sequence[tuple[int | str | None, str | Path, str | Path]],
    tasks: Sequence[str] | None = None,
    resamples: int = bootstrap.RESAMPLES,
    seed: int = bootstrap.SEED,
    level: float = bootstrap.LEVEL,
) -> dict:
    """(seed, A results, B results) per training seed, all on the same items: per task the mean over
    seeds of B - A with the per-seed differences, the item-level interval and the seed-aware interval,
    p-value and smallest detectable difference (`sentkit.stats.seeds.seed_record`). Items that differ stop
    it (ItemsDiffer), as in `compare_runs`."""
    from sentkit.stats.seeds import seed_aware_difference

    paths = [path for _, a, b in pairs for path in (a, b)]
    runs, per_task, missing = _items_per_pair(
        paths,
        tasks,
        resamples,
        "a comparison over seeds needs at least one (A, B) pair of results files",
        "--a and --b",
    )
    compared = {}
    for task, items in per_task.items():
        _check_same_items(items, paths, task, "no comparison over seeds exists")
        compared[task] = {
            "unit": items[0][0].unit,
            "scores": seed_aware_difference(items, resamples, seed, level),
        }
    return {
        "pairs": [
            {
                "seed": s,
                "a": {"path": str(a), "model": runs[2 * i]["model"]},
                "b": {"path": str(b), "model": runs[2 * i + 1]["model"]},
            }
            for i, (s, a, b) in enumerate(pairs)
        ],
        "bootstrap": {
            "method": "paired percentile over the items (item); seed-aware t interval (seeds and items)",
            "level": level,
            "resamples": resamples,
            "seed": seed,
            "seed_aware": "mean over seeds of B - A +- t * se, se^2 = var(per-seed B - A) / seeds + "
            "var over item draws of the mean B - A; Welch-Satterthwaite df (1 with two seeds); "
            "p from the same t",
            "detectable": "the difference this test finds with 80% power: "
            "half-width * (t_0.975 + t_0.8) / t_0.975",
        },
        "tasks": compared,
        "not_compared": missing,
    }


def seeds_comparison_text(result: dict) -> str:
    """One line per task: A and B (means over seeds), B - A per seed, the item-level and seed-aware 95%
    intervals of the mean B - A, the seed-aware p and the smallest detectable difference."""
    from sentkit.stats.seeds import format_p

    b = result["bootstrap"]
    pct = f"{100 * b['level']:g}%"
    pairs = result["pairs"]
    lines = [
        f"seed {p['seed'] if p['seed'] is not None else '-'}: A {p['a']['path']}  B {p['b']['path']}"
        for p in pairs
    ]
    lines += [
        f"A: {pairs[0]['a']['model']}  B: {pairs[0]['b']['model']}  ({len(pairs)} seed(s))",
        f"item CI: paired bootstrap over the items ({b['resamples']} resamples, seed {b['seed']}), the seeds "
        f"as fixed; seed CI and p: seeds and items (t interval); detectable: 80% power",
        "",
    ]
    rows = [("task", "A", "B", "B - A", "per seed", f"item {pct} CI", f"seed {pct} CI", "p", "detectable")]
    for task, entry in result["tasks"].items():
        main = entry["scores"]["main_score"]
        rows.append(
            (
                task,
                f"{main['a']:.2f}",
                f"{main['b']:.2f}",
                f"{main['delta']:+.2f}",
                " ".join(f"{d:+.2f}" for d in main["deltas"]),
                _signed_ci(main["item"]["ci"]),
                _signed_ci(main["ci"]),
                "-" if main["p_value"] is None else format_p(main["p_value"]),
                f"{main['detectable']:.2f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        )
    if len(pairs) < 2:
        lines.append(
            "one seed: no seed-aware interval; the item CI leaves out how much a new training run moves"
        )
    for task, why in result["not_compared"].items():
        lines.append(f"{task}: not compared, {why}")
    return "\n".join(lines) + "\n"


def _signed_ci(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "-"


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
