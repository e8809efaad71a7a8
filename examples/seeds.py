"""Training examples over several seeds: a resumable results file, a full sentkit evaluation of every trained
model, and each method set against its baseline with paired bootstrap intervals, the paper's cells beside.

An example declares its rows (`Row`: the start model, scored once; each trained model, once per seed) and
the paper's claims (`Claim`: a method against its baseline, the direction the paper reports, the table
cells it prints). Then:

- `SeedRuns(out, ...)` opens `<out>/results.json`, refusing one written with other settings, so that the
  seeds of one file are comparable; `runs.done(row, seed)` says what it holds already, so a rerun trains
  only what is missing (runs can span sessions);
- `runs.score(row, seed, model, tasks)` evaluates the model with `sentkit.evaluate.evaluate` into
  `<out>/evals/<seed>/<row>/` (the full results JSON: scores, 95% bootstrap CIs and the per-item values a
  paired comparison needs), records the row and rewrites results.json atomically;
- `runs.finish()` adds the summary of every seed the file holds to results.json, writes `<out>/table.md`
  and prints it.

Summary, per row and task: the mean, sample standard deviation and min..max of the main score over the
seeds, and each seed's score with its 95% CI. Per claim and task: B - A (method minus baseline) for each
seed, which is `sentkit compare` on the two results files (`compare_runs`), and pooled over the seeds
(`compare_pooled`): the mean over seeds of B - A, every run resampled on the same test items, so its
interval covers the choice of test items for these seeds; the spread over seeds is in the per-seed values.
Verdict: reproduced when the pooled interval excludes 0 on the side the paper reports and every seed's
difference has that sign; the opposite direction when it excludes 0 on the other side (seeds agreeing);
otherwise inconclusive.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

FULL_SEEDS = "42,43,44"
QUICK_SEEDS = "42"
ONCE = "once"  # the key of rows that are not trained (the start model): scored once, the same for every seed
REPRODUCED = "reproduced"
OPPOSITE = "not reproduced: the opposite direction"
INCONCLUSIVE_CI = "inconclusive: the 95% CI includes 0"
INCONCLUSIVE_SEEDS = "inconclusive: the seeds disagree in sign"
# settings that do not change what a seed's rows measure: they may differ between sessions of one results file
NOT_SETTINGS = frozenset(
    {"seeds", "threads", "out", "eval_batch_size", "data_root", "no_plot", "keep_checkpoints"}
)


def parse_seeds(text: str) -> list[int]:
    """'42,43,44' -> [42, 43, 44]: distinct integers from 0 to 2**32 - 1 (argparse type)."""
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds) or any(not 0 <= s < 2**32 for s in seeds):
        raise argparse.ArgumentTypeError(f"expected distinct seeds from 0 to 2**32-1, got {text!r}")
    return seeds


def add_seed_args(parser: argparse.ArgumentParser) -> None:
    """--seeds, and --keep-checkpoints (else a scored run's resumable checkpoints are deleted)."""
    parser.add_argument(
        "--seeds",
        type=parse_seeds,
        default=None,
        help=f"training seeds, comma-separated (default {FULL_SEEDS}; {QUICK_SEEDS} with --quick); "
        "seeds already complete in <out>/results.json are skipped",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep each finished run's checkpoint-* folders (optimizer state, about twice the model); "
        "by default they are deleted once the run is scored, best/ stays",
    )


def model_label(model: str) -> str:
    """A short name for a model: a packaged short name as is, a folder by its last part."""
    return Path(model).name if ("/" in model or Path(model).exists()) else model


def train_log(run_dir: str | Path) -> list[dict]:
    """Every logged step's loss terms and their chance values (`loss_*`, `chance_*`), from the run's last
    checkpoint; empty when the run kept none."""
    states = sorted(Path(run_dir).glob("checkpoint-*/trainer_state.json"))
    if not states:
        return []
    history = json.loads(states[-1].read_text(encoding="utf-8"))["log_history"]
    return [
        {k: v for k, v in h.items() if k == "step" or k.startswith(("loss", "chance"))}
        for h in history
        if "loss" in h
    ]


def drop_checkpoints(run_dir: str | Path) -> None:
    """Delete a finished run's resumable checkpoints (the optimizer state is most of a run's disk: three
    seeds of five e5-small rows would hold about 25 GB); its best/, results and logs stay."""
    run_dir = Path(run_dir)
    if not (run_dir / "results.json").is_file():
        raise ValueError(f"{run_dir}: not a finished run (no results.json); its checkpoints are kept")
    for checkpoint in sorted(run_dir.glob("checkpoint-*")):
        shutil.rmtree(checkpoint)


def seeds_of(args: argparse.Namespace, quick: bool) -> list[int]:
    """The seeds given, else the full or the quick default."""
    return args.seeds if args.seeds else parse_seeds(QUICK_SEEDS if quick else FULL_SEEDS)


@dataclass(frozen=True)
class Row:
    """One model of the comparison; `seeded=False`: not trained, scored once (the start model)."""

    key: str
    label: str
    seeded: bool = True


@dataclass(frozen=True)
class Claim:
    """The paper finds `method` above `baseline` (direction +1) or below it (-1) on `tasks` (empty: every
    task both rows scored); `paper` maps a task (or "*", any task) to the cells it prints, table cited."""

    method: str
    baseline: str
    says: str
    paper: dict[str, str] = field(default_factory=dict)
    tasks: tuple[str, ...] = ()
    direction: int = 1


def verdict(direction: int, ci: Sequence[float] | None, deltas: Sequence[float]) -> str:
    """Whether the pooled difference reproduces the direction the paper reports (see module doc)."""
    if not ci or ci[0] <= 0 <= ci[1]:
        return INCONCLUSIVE_CI
    sign = 1 if ci[0] > 0 else -1
    if any(d * sign <= 0 for d in deltas):
        return INCONCLUSIVE_SEEDS
    return REPRODUCED if sign == direction else OPPOSITE


def _plain(value):
    """JSON's view of a value (paths and other objects as strings), to compare settings across sessions."""
    return json.loads(json.dumps(value, default=str))


def settings_of(args: argparse.Namespace, ignore: Sequence[str] = ()) -> dict:
    """The flags that define what a row measures (all but NOT_SETTINGS and `ignore`, e.g. row selectors)."""
    return _plain({k: v for k, v in vars(args).items() if k not in NOT_SETTINGS and k not in ignore})


def _slug(text: str) -> str:
    return re.sub(r"[^\w.+-]+", "_", text).strip("_") or "row"


class SeedRuns:
    """The results file of one example: rows scored once or per seed, rewritten atomically after each row."""

    def __init__(
        self,
        out: str | Path,
        *,
        example: str,
        question: str,
        settings: dict,
        rows: Sequence[Row],
        claims: Sequence[Claim] = (),
        notes: Sequence[str] = (),
        changes: str = "",
    ) -> None:
        self.out = Path(out)
        self.path = self.out / "results.json"
        self.rows = {row.key: row for row in rows}
        self.claims = list(claims)
        self.notes = list(notes)
        self.changes = changes
        settings = _plain(settings)
        self.data: dict = {}
        if self.path.is_file():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))
            before = self.data.get("settings")
            if before != settings:
                raise SystemExit(f"{self.path}: {_settings_difference(before, settings)}")
        self.data.update(
            example=example,
            question=question,
            settings=settings,
            rows={key: asdict(row) for key, row in self.rows.items()},
            claims=[asdict(claim) for claim in self.claims],
        )
        self.data.setdefault("scored", {})  # seed key ("once", "42", ...) -> row -> entry
        self.data.setdefault("extra", {})

    # ---- what is there -------------------------------------------------------------------------------
    def _key(self, row: str, seed: int | None) -> str:
        return str(seed) if self.rows[row].seeded else ONCE

    def entry(self, row: str, seed: int | None) -> dict | None:
        """The recorded row (None if it is not there, or its results file is gone)."""
        entry = self.data["scored"].get(self._key(row, seed), {}).get(row)
        if entry is None or not (self.out / entry["results"]).is_file():
            return None
        return entry

    def done(self, row: str, seed: int | None = None) -> bool:
        return self.entry(row, seed) is not None

    def pending(self, seeds: Sequence[int], rows: Sequence[str]) -> list[int]:
        """The seeds for which one of the seeded `rows` is not recorded yet (the others are skipped)."""
        seeded = [r for r in rows if self.rows[r].seeded]
        return [seed for seed in seeds if any(not self.done(r, seed) for r in seeded)]

    # ---- recording -----------------------------------------------------------------------------------
    def note(self, key: str, value) -> None:
        """Example-specific facts (data built, settings of a stage), kept under `extra` and saved."""
        self.data["extra"][key] = _plain(value)
        self.save()

    def score(
        self,
        row: str,
        seed: int | None,
        model,
        tasks: Callable[[], list],
        *,
        data_root: str | None = None,
        train: dict | None = None,
    ) -> dict:
        """Evaluate `model` (a name or folder, or an encoder) on fresh `tasks()` with sentkit's evaluation
        and record it as `row` at `seed` (None for a row scored once)."""
        from sentkit.corpus.engine_local import place_encoder
        from sentkit.encoders import load_encoder
        from sentkit.evaluate import evaluate

        key = self._key(row, seed)
        folder = self.out / "evals" / (key if key == ONCE else f"seed{key}") / _slug(row)
        prepared = {task.name: task for task in tasks()}
        clock = time.perf_counter()
        encoder = load_encoder(str(model)) if isinstance(model, (str, Path)) else model
        encoder, _ = place_encoder(encoder, "auto")  # a GPU when torch sees one, else as loaded
        results = evaluate(
            encoder,
            list(prepared),
            out=folder,
            prepared=prepared,
            data_root=data_root or None,
            show_progress=False,
        )
        if results["errors"]:
            name, error = next(iter(results["errors"].items()))
            raise RuntimeError(
                f"{row} (seed {key}): task {name} failed: {error['message']} ({results['path']})"
            )
        entry = {
            "label": self.rows[row].label,
            "model": str(model) if isinstance(model, (str, Path)) else getattr(model, "name", None),
            "results": str(Path(results["path"]).relative_to(self.out)),
            "scores": {name: _score(task) for name, task in results["tasks"].items()},
            "eval_s": round(time.perf_counter() - clock, 1),
            "train": _plain(train or {}),
        }
        self.data["scored"].setdefault(key, {})[row] = entry
        self.save()
        cells = ", ".join(
            f"{name} {s['main_score']:.2f}"
            + (f" (chance {s['chance_mean']:.2f})" if "chance_mean" in s else "")
            for name, s in entry["scores"].items()
        )
        print(f"  {self.rows[row].label} (seed {key}): {cells} ({entry['eval_s']} s)", flush=True)
        return entry

    def save(self) -> None:
        from sentkit.atomic import atomic_write_json

        atomic_write_json(self.path, self.data)

    # ---- summary -------------------------------------------------------------------------------------
    def finish(self, more: Callable[[dict], str] | None = None) -> dict:
        """Summarise every seed the file holds (this session's and earlier ones'), write results.json and
        table.md (plus `more(results)`, an example's own tables), print the table."""
        from sentkit.atomic import atomic_write_text
        from sentkit.provenance import machine_info, package_versions

        self.data["seeds"] = sorted(int(key) for key in self.data["scored"] if key != ONCE)
        self.data["summary"] = summarize(self.data, self.rows, self.claims, self.out, self.data["seeds"])
        self.data.update(versions=package_versions(), machine=machine_info())
        self.save()
        text = table_markdown(self.data, self.rows, self.notes, self.changes)
        text += more(self.data) if more else ""
        atomic_write_text(self.out / "table.md", text)
        print(text)
        return self.data


def _score(task: dict) -> dict:
    """A task's main score and its CI, every other score, and (kNN tasks) the chance levels, from its entry
    in a results file."""
    out = {"main_score": task["main_score"], "ci": task.get("main_score_ci"), "all": task["scores"]}
    meta = task.get("meta", {})
    out.update({key: meta[key] for key in ("chance_mean", "chance") if key in meta})
    return out


def _settings_difference(before: dict | None, now: dict) -> str:
    if not isinstance(before, dict):
        return "not a results file of this example (no settings); pass another --out"
    keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    shown = ", ".join(f"{k} {before.get(k)!r} there, {now.get(k)!r} now" for k in keys[:4])
    return f"written with other settings ({shown}); rerun with the same flags or pass another --out"


def _seed_keys(data: dict, row: Row, seeds: Sequence[int]) -> list[str]:
    keys = [str(s) for s in seeds] if row.seeded else [ONCE]
    return [k for k in keys if row.key in data["scored"].get(k, {})]


def summarize(
    data: dict, rows: dict[str, Row], claims: Sequence[Claim], out: Path, seeds: Sequence[int]
) -> dict:
    """Per row and task the spread over seeds; per claim and task the paired differences (module doc)."""
    from sentkit.compare import compare_pooled, compare_runs

    scored = data["scored"]
    table: dict[str, dict] = {}
    for key, row in rows.items():
        per_task: dict[str, dict] = {}
        for seed_key in _seed_keys(data, row, seeds):
            for task, score in scored[seed_key][key]["scores"].items():
                per_task.setdefault(task, {"seeds": {}})["seeds"][seed_key] = score
        for entry in per_task.values():
            values = [s["main_score"] for s in entry["seeds"].values()]
            entry.update(
                n=len(values),
                mean=statistics.fmean(values),
                sd=statistics.stdev(values) if len(values) > 1 else None,
                min=min(values),
                max=max(values),
            )
        if per_task:
            table[key] = per_task

    compared = []
    for claim in claims:
        if claim.method not in table or claim.baseline not in table:
            continue
        method, baseline = rows[claim.method], rows[claim.baseline]
        pairs = []  # (seed key, baseline results, method results)
        for seed_key in [str(s) for s in seeds] if (method.seeded or baseline.seeded) else [ONCE]:
            a = scored.get(seed_key if baseline.seeded else ONCE, {}).get(claim.baseline)
            b = scored.get(seed_key if method.seeded else ONCE, {}).get(claim.method)
            if a and b:
                pairs.append((seed_key, out / a["results"], out / b["results"]))
        shared = [t for t in table[claim.method] if t in table[claim.baseline]]
        tasks = [t for t in (claim.tasks or shared) if t in shared]
        if not pairs or not tasks:
            continue
        per_seed = {}
        for seed_key, a, b in pairs:
            result = compare_runs(a, b, tasks=tasks)
            per_seed[seed_key] = {
                t: _difference(e["scores"]["main_score"]) for t, e in result["tasks"].items()
            }
        pooled = compare_pooled([(a, b) for _, a, b in pairs], tasks=tasks)["tasks"]
        entry = {**asdict(claim), "seeds": [k for k, _, _ in pairs], "tasks": {}}
        for task in tasks:
            if task not in pooled:
                continue
            main = pooled[task]["scores"]["main_score"]
            entry["tasks"][task] = {
                "paper": claim.paper.get(task, claim.paper.get("*", "")),
                "per_seed": {k: per_seed[k][task] for k in per_seed if task in per_seed[k]},
                "pooled": {**_difference(main), "a": main["a"], "b": main["b"], "deltas": main["deltas"]},
                "verdict": verdict(claim.direction, main["ci"], main["deltas"]),
            }
        compared.append(entry)
    return {"rows": table, "claims": compared}


def _difference(score: dict) -> dict:
    return {"delta": score["delta"], "ci": score["ci"], "p_value": score["p_value"]}


# ---- table.md ------------------------------------------------------------------------------------------
def _ci(ci: Sequence[float] | None, signed: bool = False) -> str:
    if not ci:
        return "[-]"
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"[{f.format(ci[0])}, {f.format(ci[1])}]"


def table_markdown(data: dict, rows: dict[str, Row], notes: Sequence[str], changes: str) -> str:
    """The summary as markdown: scores per row, then each claim with the paper's cells and a verdict."""
    summary = data["summary"]
    seeds = ", ".join(map(str, data["seeds"])) or "none yet"
    lines = [
        f"# {data['example']}",
        "",
        data["question"],
        "",
        f"Seeds: {seeds}. Scores in percent. Per row: the mean, sample standard deviation and min..max over "
        "the seeds, and each seed's score with its 95% bootstrap CI over the test items; rows scored "
        "`once` are not trained and do not depend on the seed.",
    ]
    lines += ["", *[f"- {note}" for note in notes]] if notes else []
    lines += [
        "",
        "## Scores",
        "",
        "| row | task | n | mean | sd | min..max | per seed: score [95% CI] |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for key, per_task in summary["rows"].items():
        for task, s in per_task.items():
            chance = next((v["chance_mean"] for v in s["seeds"].values() if "chance_mean" in v), None)
            name = task + (f" (chance {chance:.2f})" if chance is not None else "")
            cells = "; ".join(f"{k}: {v['main_score']:.2f} {_ci(v['ci'])}" for k, v in s["seeds"].items())
            sd = "-" if s["sd"] is None else f"{s['sd']:.2f}"
            spread = "-" if s["n"] < 2 else f"{s['min']:.2f}..{s['max']:.2f}"
            lines.append(
                f"| {rows[key].label} | {name} | {s['n']} | {s['mean']:.2f} | {sd} | {spread} | {cells} |"
            )
    lines += [
        "",
        "## Against the baseline",
        "",
        "B - A = method minus baseline, on the same test items. Per seed: the paired bootstrap over the "
        "items (what `sentkit compare A.json B.json` prints for the two results files). Pooled: the mean "
        "over the seeds of B - A, each of the 1000 resamples drawing the same items for every seed; its "
        "95% CI covers the choice of test items for these seeds, the spread over seeds shows in the "
        "per-seed values. p: two-sided bootstrap p-value.",
        "",
        "| claim (paper) | method vs baseline | task | paper's cells | per seed: B - A [95% CI] p | "
        "pooled B - A [95% CI] p | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for claim in summary["claims"]:
        pair = f"{rows[claim['method']].label} vs {rows[claim['baseline']].label}"
        for task, t in claim["tasks"].items():
            per_seed = "; ".join(
                f"{k}: {d['delta']:+.2f} {_ci(d['ci'], True)} p {d['p_value']:.3f}"
                for k, d in t["per_seed"].items()
            )
            p = t["pooled"]
            pooled = f"{p['delta']:+.2f} {_ci(p['ci'], True)} p {p['p_value']:.3f}"
            lines.append(
                f"| {claim['says']} | {pair} | {task} | {t['paper'] or '-'} | {per_seed} | {pooled} | "
                f"**{t['verdict']}** |"
            )
    verdicts = [t["verdict"] for c in summary["claims"] for t in c["tasks"].values()]
    lines += [
        "",
        f"Verdicts: **{REPRODUCED}** when the pooled 95% CI excludes 0 on the side the paper reports and "
        f"every seed's difference has that sign; **{OPPOSITE}** when it excludes 0 on the other side (every "
        f"seed agreeing); otherwise **inconclusive** (the CI includes 0, or the seeds disagree in sign). "
        "One verdict per claim and task, without correction for the number of comparisons: read the "
        "claim the example names as its main one first.",
    ]
    if changes and any(v != REPRODUCED for v in verdicts):
        lines += ["", "## What would change the result", "", changes]
    return "\n".join(lines) + "\n"
