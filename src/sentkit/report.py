"""Side-by-side comparison of results files: a markdown table and PNG plots."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from sentkit.atomic import atomic_write_text, check_writable_dir
from sentkit.errors import DataFormatError, MissingDataError
from sentkit.markdown import markdown_text

_EXPECTED = "expected a results JSON file written by `sentkit eval`"


def load_results(paths: Sequence[str | Path]) -> list[dict]:
    """Read results files written by `sentkit eval`; a clear error for anything else."""
    runs = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            raise DataFormatError(p, None, f"is a folder; {_EXPECTED}, e.g. {p / '*.json'}")
        if not p.is_file():
            raise MissingDataError(p, _EXPECTED)
        try:
            data = json.loads(p.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
        except UnicodeDecodeError as err:
            raise DataFormatError(p, None, f"{_EXPECTED}; this is not UTF-8 text ({err.reason})") from None
        except json.JSONDecodeError as err:
            raise DataFormatError(p, err.lineno, f"{_EXPECTED} ({err.msg})") from None
        except _NonFiniteNumber as err:
            raise DataFormatError(p, None, f"holds {err}, which no score can be; not valid JSON") from None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("tasks"), dict)
            or not isinstance(data.get("model"), str)
        ):
            raise DataFormatError(p, 1, "expected a sentkit results JSON object with 'model' and 'tasks'")
        _check_scores(p, data["tasks"])
        data.setdefault("path", str(p))
        runs.append(data)
    return runs


def _check_scores(path: Path, tasks: dict) -> None:
    """Every number the report draws must be one: `tasks.<task>.main_score` and `tasks.<task>.scores.<key>`
    finite numbers (JSON's 1e999 reads as infinity), else one line naming the file and the key."""
    for task, result in tasks.items():
        if not isinstance(result, dict):
            raise DataFormatError(path, None, f"tasks.{task}: expected an object, got {_json_kind(result)}")
        scores = result.get("scores", {})
        if not isinstance(scores, dict):
            raise DataFormatError(
                path, None, f"tasks.{task}.scores: expected an object, got {_json_kind(scores)}"
            )
        keyed = [("main_score", result.get("main_score"))] + [(f"scores.{k}", v) for k, v in scores.items()]
        for key, value in keyed:
            is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not is_number or not math.isfinite(value):
                raise DataFormatError(
                    path, None, f"tasks.{task}.{key}: expected a finite number, got {json.dumps(value)[:40]}"
                )


def _json_kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), json.dumps(value)[:40])


class _NonFiniteNumber(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    # Python's json reads NaN/Infinity; older sentkit versions wrote a failed score that way
    raise _NonFiniteNumber(name)


def _labels(runs: list[dict]) -> list[str]:
    """Model names, made unique with the file stem when two runs share one."""
    names = [r["model"] for r in runs]
    labels = [n if names.count(n) == 1 else f"{n} ({Path(r['path']).stem})" for n, r in zip(names, runs)]
    # a run stopped early (Ctrl-C, still running) says so wherever its numbers appear
    return [f"{lab} (incomplete)" if r.get("complete") is False else lab for lab, r in zip(labels, runs)]


def comparison_table(runs: list[dict], breakdown: bool = True) -> str:
    """Markdown: one row per task (and per breakdown key), one column per run; a score the run has a
    bootstrap interval for is followed by it in brackets."""
    labels = _labels(runs)
    tasks: list[str] = []
    for r in runs:
        tasks.extend(t for t in r["tasks"] if t not in tasks)
    lines = ["| task | " + " | ".join(map(markdown_text, labels)) + " |", "|---|" + "---:|" * len(runs)]
    for task in tasks:
        cells = [
            _fmt(r["tasks"].get(task, {}).get("main_score"), r["tasks"].get(task, {}).get("main_score_ci"))
            for r in runs
        ]
        lines.append(f"| **{markdown_text(task)}** | " + " | ".join(cells) + " |")
        if not breakdown:
            continue
        keys: list[str] = []
        for r in runs:
            keys.extend(
                k for k in r["tasks"].get(task, {}).get("scores", {}) if k != "main_score" and k not in keys
            )
        for key in keys:
            cells = [
                _fmt(
                    r["tasks"].get(task, {}).get("scores", {}).get(key),
                    r["tasks"].get(task, {}).get("ci", {}).get(key),
                )
                for r in runs
            ]
            lines.append(f"| {markdown_text(task)} / {markdown_text(key)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


CI_NOTE = (
    "In brackets: 95% percentile bootstrap interval over the task's test items. Whether two runs differ is "
    "`sentkit compare A.json B.json` (paired over the same items), not whether their intervals overlap."
)


def _has_intervals(runs: Sequence[dict]) -> bool:
    return any("main_score_ci" in result for r in runs for result in r["tasks"].values())


def _fmt(value, ci: Sequence[float] | None = None) -> str:
    """A score with two decimals and, when the run has one, its 95% interval: `61.11 [57.46, 64.31]`."""
    if value is None:
        return "-"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def _plain(text: str) -> str:
    """A label matplotlib draws as written: `$` would start mathtext (and a stray one fails the plot)."""
    return text.replace("$", r"\$")


def plot_task_bars(runs: list[dict], path: Path) -> Path:
    """Grouped bars of each task's main score, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = _labels(runs)
    tasks: list[str] = []
    for r in runs:  # alignment-uniformity is a raw distance, not a percentage: it has its own scatter
        tasks.extend(t for t in r["tasks"] if t not in tasks and t != "alignment-uniformity")
    width = 0.8 / max(len(runs), 1)
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(tasks) + 2), 4.5))
    for i, (label, r) in enumerate(zip(labels, runs)):
        vals = [r["tasks"].get(t, {}).get("main_score", np.nan) for t in tasks]
        ax.bar(x + i * width - 0.4 + width / 2, vals, width, label=_plain(label))
    ax.set_xticks(x, [_plain(t) for t in tasks], rotation=30, ha="right")
    ax.set_ylabel("main score")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    _save_figure(fig, path)
    plt.close(fig)
    return path


def plot_alignment_uniformity(runs: list[dict], path: Path) -> Path | None:
    """Wang & Isola's plot: alignment (x) against uniformity (y), lower-left is better."""
    points = [
        (label, r["tasks"]["alignment-uniformity"]["scores"])
        for label, r in zip(_labels(runs), runs)
        if "alignment-uniformity" in r["tasks"]
    ]
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4.5))
    for label, s in points:
        ax.scatter(s["alignment"], s["uniformity"], s=60)
        ax.annotate(
            _plain(label),
            (s["alignment"], s["uniformity"]),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=8,
        )
    ax.set_xlabel("alignment (lower is better)")
    ax.set_ylabel("uniformity (lower is better)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save_figure(fig, path)
    plt.close(fig)
    return path


def _save_figure(fig, path: Path) -> None:
    import io

    from sentkit.atomic import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    atomic_write_bytes(path, buf.getvalue())


def write_report(paths: Sequence[str | Path], out: str | Path) -> dict[str, Path]:
    """Write report.md, report.html, tasks.png and (if measured) alignment_uniformity.png under `out`.

    `paths` may also name training run directories (curves in the HTML) and MTEB result files or folders."""
    from sentkit.report_html import split_report_inputs, write_html_report

    paths, run_dirs, mteb_runs = split_report_inputs(paths)
    runs = load_results(paths) + mteb_runs
    out = check_writable_dir(out)
    written = {"markdown": out / "report.md", "bars": plot_task_bars(runs, out / "tasks.png")}
    scatter = plot_alignment_uniformity(runs, out / "alignment_uniformity.png")
    images = "\n".join(f"![{p.stem}]({p.name})" for p in (written["bars"], scatter) if p is not None)
    atomic_write_text(
        written["markdown"],
        "# sentkit comparison\n\nFigures, training curves and provenance: [report.html](report.html)\n\n"
        + (CI_NOTE + "\n\n" if _has_intervals(runs) else "")
        + comparison_table(runs)
        + "\n"
        + images
        + "\n",
    )
    if scatter is not None:
        written["scatter"] = scatter
    written["html"] = write_html_report(runs, out / "report.html", run_dirs)
    return written
