"""One self-contained HTML report: summary table (runs x tasks), per-language heatmaps, the kNN query x
target matrix (Emu), alignment/uniformity on its own axes, training curves of run directories, and each
score linked to its provenance. Figures are inline SVG (report_svg.py), so the file needs nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

from sentkit.atomic import atomic_write_text
from sentkit.report_svg import heatmap_svg, line_chart_svg, scatter_svg

_NOT_A_LANGUAGE = {"main_score", "all", "seen"}


# ---- inputs -----------------------------------------------------------------------------------------------
def is_run_dir(path: str | Path) -> bool:
    """A training run directory (docs/training.md, "The run directory"): has metrics.jsonl or checkpoints."""
    path = Path(path)
    return path.is_dir() and ((path / "metrics.jsonl").is_file() or any(path.glob("checkpoint-*")))


def split_report_inputs(paths: Sequence[str | Path]) -> tuple[list[Path], list[Path], list[dict]]:
    """(sentkit results files, training run directories, runs read from MTEB result files or folders)."""
    from sentkit.mteb_results import looks_like_mteb, read_mteb_runs

    results, run_dirs, mteb = [], [], []
    for p in map(Path, paths):
        if is_run_dir(p):
            run_dirs.append(p)
        elif looks_like_mteb(p):
            mteb.append(p)
        else:
            results.append(p)
    return results, run_dirs, read_mteb_runs(mteb) if mteb else []


def run_labels(runs: Sequence[dict]) -> list[str]:
    """Model names, made unique with the file stem (or a counter) when two runs share one."""
    names = [r["model"] for r in runs]
    labels = []
    for i, (name, run) in enumerate(zip(names, runs)):
        if names.count(name) == 1:
            labels.append(name)
        else:
            labels.append(f"{name} ({Path(run['path']).stem})" if run.get("path") else f"{name} #{i + 1}")
    return [f"{lab} (incomplete)" if r.get("complete") is False else lab for lab, r in zip(labels, runs)]


def read_training_curves(run_dir: str | Path) -> dict:
    """Dev scores per step (metrics.jsonl) and loss terms per step (the newest checkpoint's trainer_state)."""
    from sentkit.datasets.lines import iter_jsonl

    run_dir = Path(run_dir)
    evals = (
        [row for _, row in iter_jsonl(run_dir / "metrics.jsonl")]
        if (run_dir / "metrics.jsonl").is_file()
        else []
    )
    logs: list[dict] = []
    states = sorted(
        (
            p
            for p in run_dir.glob("checkpoint-*/trainer_state.json")
            if p.parent.name.rsplit("-", 1)[-1].isdigit()
        ),
        key=lambda p: int(p.parent.name.rsplit("-", 1)[-1]),
    )
    state_path = states[-1] if states else None
    if state_path is not None:
        from sentkit.errors import DataFormatError

        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise DataFormatError(
                state_path, err.lineno, f"expected a trainer_state JSON object ({err.msg})"
            ) from None
        logs = [e for e in state.get("log_history", []) if isinstance(e, dict) and "step" in e]
    dev = {"main_score": [(r["step"], r["main_score"]) for r in evals if "main_score" in r and "step" in r]}
    losses: dict[str, list[tuple[float, float]]] = {}
    for entry in logs:
        for key, value in entry.items():
            if (key == "loss" or key.startswith("loss_")) and isinstance(value, (int, float)):
                losses.setdefault(key, []).append((entry["step"], float(value)))
    best = [r for r in evals if r.get("best")]
    return {
        "name": run_dir.name,
        "path": str(run_dir),
        "dev": dev,
        "losses": losses,
        "state_file": str(state_path) if state_path else None,
        "best_step": best[-1]["step"] if best else None,
    }


# ---- page sections ----------------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def task_label(task: str) -> str:
    """File-backed tasks shown as `family:file names` (the full paths are in the provenance rows)."""
    if ":" not in task or task.startswith("mteb:"):
        return task
    family, _, rest = task.partition(":")
    return family + ":" + "+".join(Path(p).name for p in rest.split("+"))


def _anchor(run_index: int, task: str) -> str:
    return f"prov-{run_index}-{_slug(task)}"


def _tasks(runs: Sequence[dict]) -> list[str]:
    names: list[str] = []
    for r in runs:
        names.extend(t for t in r["tasks"] if t not in names)
    return names


def _figure(svg: str, caption: str, kind: str) -> str:
    return f'<figure class="fig" data-kind="{kind}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'


def summary_table(runs: Sequence[dict], labels: Sequence[str]) -> str:
    tasks = _tasks(runs)
    head = "".join(f'<th title="{escape(t)}">{escape(task_label(t))}</th>' for t in tasks)
    body = []
    for i, (label, run) in enumerate(zip(labels, runs)):
        source = ' <span class="badge">MTEB</span>' if run.get("source") == "mteb" else ""
        cells = []
        for task in tasks:
            result = run["tasks"].get(task)
            if result is None:
                why = run.get("skipped", {}).get(task)
                cells.append(f'<td class="na" title="{escape(why or "not run")}">-</td>')
                continue
            unit = " (raw, higher is better)" if task == "alignment-uniformity" else ""
            cells.append(
                f'<td><a href="#{_anchor(i, task)}" title="provenance{escape(unit)}">'
                f"{result['main_score']:.2f}</a>{_interval(result.get('main_score_ci'))}</td>"
            )
        body.append(f"<tr><th>{escape(label)}{source}</th>{''.join(cells)}</tr>")
    return (
        '<table class="summary"><thead><tr><th>run</th>'
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )


def _interval(ci) -> str:
    """A score's 95% bootstrap interval under it (nothing for runs without one, e.g. MTEB files)."""
    if not ci:
        return ""
    return f'<br><span class="ci" title="95% bootstrap interval over the test items">[{ci[0]:.2f}, {ci[1]:.2f}]</span>'


def _language_columns(runs: Sequence[dict], task: str) -> list[str]:
    """Breakdown keys that are the task's languages or pairs (`ja(dev)` counts as ja)."""
    cols: list[str] = []
    for r in runs:
        result = r["tasks"].get(task)
        if not result:
            continue
        langs = set(result.get("languages", []))
        for key in result.get("scores", {}):
            if key in _NOT_A_LANGUAGE or "->" in key or key in cols:
                continue
            if key in langs or key.split("(")[0] in langs:
                cols.append(key)
    return cols


def _pair_matrix(scores: dict) -> tuple[list[str], list[str]] | None:
    """(query languages, target languages) of an Emu-style `A->B` matrix: one that scores some language
    against itself (leave-one-out); Tatoeba's `deu->eng` / `eng->deu` never does. Other keys are ignored."""
    pairs = [k.split("->") for k in scores if "->" in k]
    if not any(a == b for a, b in pairs):
        return None
    sources = list(dict.fromkeys(a for a, _ in pairs))
    targets = list(dict.fromkeys(b for _, b in pairs))
    return sources, targets


def heatmap_section(runs: Sequence[dict], labels: Sequence[str]) -> str:
    figures = []
    for task in _tasks(runs):
        cols = _language_columns(runs, task)
        if len(cols) >= 2:
            rows = [(lab, r) for lab, r in zip(labels, runs) if task in r["tasks"]]
            values = [[r["tasks"][task]["scores"].get(c) for c in cols] for _, r in rows]
            title = f"{task_label(task)}: score per language / pair"
            svg = heatmap_svg([lab for lab, _ in rows], cols, values, title)
            caption = f"{task_label(task)}: one cell per language or language pair (percent)"
            figures.append(_figure(svg, caption, "heatmap"))
        for label, run in zip(labels, runs):
            result = run["tasks"].get(task)
            matrix = _pair_matrix(result["scores"]) if result else None
            if matrix is None:
                continue
            sources, targets = matrix
            values = [[result["scores"].get(f"{a}->{b}") for b in targets] for a in sources]
            svg = heatmap_svg(
                sources,
                targets,
                values,
                f"{task_label(task)} - {label}",
                row_title="query language",
                col_title="target language",
            )
            caption = f"{task_label(task)} ({label}): query x target 1-NN accuracy, percent (Emu)"
            figures.append(_figure(svg, caption, "knn-matrix"))
    if not figures:
        return "<p>No multilingual breakdowns in these runs.</p>"
    return "".join(figures)


def alignment_section(runs: Sequence[dict], labels: Sequence[str]) -> str:
    points = [
        (
            label,
            r["tasks"]["alignment-uniformity"]["scores"]["alignment"],
            r["tasks"]["alignment-uniformity"]["scores"]["uniformity"],
        )
        for label, r in zip(labels, runs)
        if "alignment" in r["tasks"].get("alignment-uniformity", {}).get("scores", {})
    ]
    if not points:
        return "<p>No run measured alignment-uniformity.</p>"
    svg = scatter_svg(
        points, "alignment vs uniformity", "alignment (lower is better)", "uniformity (lower is better)"
    )
    return _figure(
        svg, "Wang & Isola (2020): raw losses on STS-B dev, lower-left is better; not percentages", "scatter"
    )


def curves_section(curves: Sequence[dict]) -> str:
    if not curves:
        return "<p>No run directories given (pass them to <code>sentkit report</code> beside the results files).</p>"
    parts = []
    for c in curves:
        parts.append(f"<h3>{escape(c['name'])}</h3><p class='path'>{escape(c['path'])}</p>")
        if c["dev"]["main_score"]:
            best = f"; best step {c['best_step']}" if c["best_step"] is not None else ""
            svg = line_chart_svg(c["dev"], f"{c['name']}: dev score", "step", "dev main score")
            parts.append(_figure(svg, f"dev score per evaluation (metrics.jsonl){best}", "curve"))
        if c["losses"]:
            svg = line_chart_svg(c["losses"], f"{c['name']}: loss terms", "step", "loss")
            parts.append(
                _figure(svg, f"loss and its named terms per logging step ({c['state_file']})", "curve")
            )
        if not c["dev"]["main_score"] and not c["losses"]:
            parts.append("<p>No evaluations or logged losses yet.</p>")
    return "".join(parts)


def _hashes(meta, found: list[dict]) -> list[dict]:
    """Every {path/sha256/rows}-like record anywhere in a task's meta."""
    if isinstance(meta, dict):
        if "sha256" in meta:
            found.append(meta)
        else:
            for value in meta.values():
                _hashes(value, found)
    elif isinstance(meta, list):
        for value in meta:
            _hashes(value, found)
    return found


def _or_dash(value) -> object:
    return "-" if value is None else value


def provenance_section(runs: Sequence[dict], labels: Sequence[str]) -> str:
    parts = []
    for i, (label, run) in enumerate(zip(labels, runs)):
        versions = ", ".join(f"{k} {v}" for k, v in run.get("versions", {}).items())
        boot = run.get("bootstrap") or {}
        intervals = (
            f"<br>intervals: {escape(str(boot.get('method')))} bootstrap, {escape(str(boot.get('resamples')))} "
            f"resamples, seed {escape(str(boot.get('seed')))}"
            if boot
            else ""
        )
        parts.append(
            f'<h3 id="run-{i}">{escape(label)}</h3><p class="path">results file: {escape(str(run.get("path", "-")))}'
            f"; seed {escape(str(_or_dash(run.get('seed'))))}; started {escape(str(run.get('started', '-')))}"
            f"<br>versions: {escape(versions or '-')}{intervals}</p>"
        )
        rows = []
        for task, result in run["tasks"].items():
            files = _hashes(result.get("meta", {}), [])
            data = (
                "<br>".join(
                    f"{escape(str(f.get('path', '')))} <code>sha256 {escape(str(f['sha256']))}</code>"
                    + (f" ({f['rows']} rows)" if "rows" in f else "")
                    for f in files
                )
                or "built-in benchmark files (see MANIFEST.md)"
            )
            meta = escape(json.dumps(result.get("meta", {}), sort_keys=True, default=str)[:2000])
            items = result.get("items", {}).get("data_sha256")
            if items:
                data += f"<br>items ({escape(str(result['items'].get('unit', '')))}): <code>sha256 {escape(str(items))}</code>"
            rows.append(
                f'<tr id="{_anchor(i, task)}"><td>{escape(task)}</td>'
                f"<td>{result['main_score']:.2f}{_interval(result.get('main_score_ci'))}</td>"
                f"<td>{data}</td><td>{escape(str(_or_dash(run.get('seed'))))}</td>"
                f"<td><details><summary>meta</summary><pre>{meta}</pre></details></td></tr>"
            )
        parts.append(
            '<table class="prov"><thead><tr><th>task</th><th>main</th><th>data files</th><th>seed</th><th>details</th>'
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        )
    return "".join(parts)


_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}
table.summary td{text-align:right}.ci{font-size:11px;color:#666}td.na{color:#999;text-align:center}a{color:#1f5fa8;text-decoration:none}
figure.fig{display:inline-block;margin:8px 16px 16px 0;vertical-align:top}figcaption{font-size:12px;color:#555}
.badge{background:#eee;border-radius:3px;padding:0 4px;font-size:11px}.path{font-size:12px;color:#555}
pre{white-space:pre-wrap;max-width:700px;font-size:11px}:target{background:#fff3b0}
"""

# After layout, every figure whose SVG has a non-empty box is marked data-rendered="yes"; a headless
# browser test reads the marks from the dumped DOM.
_SCRIPT = """
window.addEventListener('load', function () {
  var figs = document.querySelectorAll('figure.fig'), ok = 0;
  figs.forEach(function (f) {
    var svg = f.querySelector('svg'), box = svg && svg.getBBox();
    if (box && box.width > 0 && box.height > 0 && svg.getBoundingClientRect().width > 0) {
      f.setAttribute('data-rendered', 'yes'); ok++;
    }
  });
  document.body.setAttribute('data-figures', figs.length + '/' + ok);
});
"""


def html_report(runs: Sequence[dict], curves: Sequence[dict] = ()) -> str:
    """The whole page as one string (inline CSS, SVG and a few lines of script; no external resources)."""
    labels = run_labels(runs)
    sections = [
        ("Summary", "summary", summary_table(runs, labels) if runs else "<p>No results files given.</p>"),
        ("Languages and pairs", "heatmaps", heatmap_section(runs, labels)),
        ("Alignment and uniformity", "alignment", alignment_section(runs, labels)),
        ("Training curves", "curves", curves_section(curves)),
        ("Provenance", "provenance", provenance_section(runs, labels)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{title}</h2>{html}</section>' for title, sid, html in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>sentkit report</title>'
        f"<style>{_STYLE}</style></head><body><h1>sentkit report</h1>"
        "<p>Scores are percent except alignment-uniformity (raw). Click a score for its data files, seed and versions. "
        "Under a score: its 95% percentile bootstrap interval over the task's test items "
        "(<code>sentkit compare A.json B.json</code> tests a difference between two runs).</p>"
        f"{body}<script>{_SCRIPT}</script></body></html>\n"
    )


def write_html_report(runs: Sequence[dict], path: str | Path, run_dirs: Sequence[str | Path] = ()) -> Path:
    """Write `report.html` atomically; `run_dirs` add training curves."""
    curves = [read_training_curves(d) for d in run_dirs]
    atomic_write_text(Path(path), html_report(runs, curves))
    return Path(path)
