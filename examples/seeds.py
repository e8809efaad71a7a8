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
seed, which is `sentkit compare` on the two results files (`compare_runs`); the item-level interval of
their mean over the seeds (every run resampled on the same test items: it treats the seeds as fixed); and
the seed-aware interval, p-value and smallest detectable difference (`sentkit compare --a ... --b ...`,
`sentkit.stats.seeds`: the spread over seeds and over items both count). The verdict
(`sentkit.stats.seeds.verdict`): reproduced when the seed-aware interval excludes 0 on the side the paper
reports and p < 0.05; opposite when it excludes 0 on the other side; suggestive when only the item-level
interval excludes 0 on the paper's side; underpowered when the smallest detectable difference exceeds the
paper's effect (`Claim.effect`, where the paper prints one); otherwise inconclusive. One seed is at most
suggestive.

`rejudge(results.json)` recomputes the verdict rows of a results file written earlier (`python
examples/seeds.py docs/results/emu.json` prints them).
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
# sentkit.stats.seeds.VERDICTS, named here so that importing this module does not load scipy
VERDICTS = (REPRODUCED, OPPOSITE, SUGGESTIVE, UNDERPOWERED, INCONCLUSIVE) = (
    "reproduced",
    "opposite",
    "suggestive",
    "underpowered",
    "inconclusive",
)
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
    effect: dict[str, float] = field(default_factory=dict)  # task (or "*") -> the paper's B - A in points


def paper_effect(claim: dict, task: str) -> float | None:
    """The paper's B - A on `task` for a claim (a `Claim` as a dict), when it prints one."""
    effects = claim.get("effect") or {}
    return effects.get(task, effects.get("*"))


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
            # the training seed, so that `sentkit compare --a ... --b ...` pairs these files by seed
            extra_config={"example_row": row, **({} if seed is None else {"train_seed": seed})},
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
    from sentkit.compare import compare_runs, compare_seed_pairs

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
        pairs = claim_pairs(scored, asdict(claim), rows, seeds, out)
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
        over_seeds = compare_seed_pairs(pairs, tasks=tasks)["tasks"]
        entry = {**asdict(claim), "seeds": [k for k, _, _ in pairs], "tasks": {}}
        for task in tasks:
            if task not in over_seeds:
                continue
            record = seed_free(over_seeds[task]["scores"]["main_score"], asdict(claim), rows)
            entry["tasks"][task] = {
                "paper": claim.paper.get(task, claim.paper.get("*", "")),
                "per_seed": {k: per_seed[k][task] for k in per_seed if task in per_seed[k]},
                **claim_row(entry, task, record),
            }
        compared.append(entry)
    return {"rows": table, "claims": compared}


def claim_pairs(
    scored: dict, claim: dict, rows: dict[str, Row], seeds: Sequence[int], out: Path
) -> list[tuple[str, Path, Path]]:
    """(seed key, baseline results, method results) for each seed both rows were scored at; a row scored
    once is the same file at every seed."""
    method, baseline = rows[claim["method"]], rows[claim["baseline"]]
    pairs = []
    for seed_key in [str(s) for s in seeds] if (method.seeded or baseline.seeded) else [ONCE]:
        a = scored.get(seed_key if baseline.seeded else ONCE, {}).get(claim["baseline"])
        b = scored.get(seed_key if method.seeded else ONCE, {}).get(claim["method"])
        if a and b:
            pairs.append((seed_key, out / a["results"], out / b["results"]))
    return pairs


def seed_free(record: dict, claim: dict, rows: dict[str, Row]) -> dict:
    """The record as is, or, when neither row is trained (both scored once: no seed changes them), with
    the items' interval as the whole story (`sentkit.stats.seeds.without_seed_noise`)."""
    from sentkit.stats.seeds import without_seed_noise

    if rows[claim["method"]].seeded or rows[claim["baseline"]].seeded:
        return record
    return without_seed_noise(record)


def claim_row(claim: dict, task: str, record: dict) -> dict:
    """A claim's row from a seed-aware record: `pooled` (the item-level interval of the mean over seeds),
    `seed_aware` (interval, p-value, smallest detectable difference, the seeds' spread), the verdict."""
    pooled = {
        "delta": record["delta"],
        "ci": record["item"]["ci"],
        "p_value": record["item"]["p_value"],
        "a": record["a"],
        "b": record["b"],
        "deltas": record["deltas"],
    }
    from sentkit.stats.seeds import verdict

    keys = ("ci", "p_value", "se", "df", "detectable", "seed_sd", "two_level_bootstrap")
    effect = paper_effect(claim, task)
    judged = verdict(record, claim["direction"], effect)
    return {
        "pooled": pooled,
        "seed_aware": {key: record.get(key) for key in keys},
        "effect": effect,
        "verdict": judged["verdict"],
        "why": judged["why"],
    }


def _difference(score: dict) -> dict:
    return {"delta": score["delta"], "ci": score["ci"], "p_value": score["p_value"]}


# ---- table.md ------------------------------------------------------------------------------------------
VERDICT_LEGEND = (
    f"Verdicts: **{REPRODUCED}** when the seeds + items 95% CI excludes 0 on the side the paper reports "
    f"and p < 0.05; **{OPPOSITE}** when it excludes 0 on the other side; **{SUGGESTIVE}** when only the "
    f"items' CI excludes 0 on the paper's side (these seeds, other test items); **{UNDERPOWERED}** when "
    f"the detectable difference exceeds the paper's effect; otherwise **{INCONCLUSIVE}**. One seed is at "
    "most suggestive. "
)
UNCORRECTED = (
    "One verdict per claim and task, without correction for the number of comparisons: read the claim the "
    "example names as its main one first."
)
CORRECTED = (
    "Exploratory rows: the verdict at the Holm-adjusted p-value over the table's exploratory rows "
    "(`sentkit.stats.multiplicity`), the uncorrected one after it."
)


def verdict_cells(row: dict) -> list[str]:
    """The items', the seed-aware, the detectable and the verdict cells of a claim's row."""
    p, s = row["pooled"], row["seed_aware"]
    from sentkit.stats.seeds import format_p

    seeds = "-" if s["ci"] is None else f"{_ci(s['ci'], True)} p {format_p(s['p_value'])}"
    detectable = "-" if s["detectable"] is None else f"{s['detectable']:.2f}"
    verdict = f"**{row['verdict']}** ({row['why']})"
    if "holm" in row:  # an exploratory row judged again at its multiplicity-adjusted p (rejudge_docs.py)
        h = row["holm"]
        verdict = (
            f"exploratory: **{h['verdict']}** ({h['why']}; Holm over {h['family']} rows; "
            f"uncorrected: {row['verdict']})"
        )
    if "suggestive_no_effect_rate" in row:
        verdict += f"; with no effect, suggestive fires {100 * row['suggestive_no_effect_rate']['rate']:.0f}% of the time at this row's spread"
    return [f"{p['delta']:+.2f} {_ci(p['ci'], True)}", seeds, detectable, verdict]


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
    lines += ["", against_baseline_markdown(summary["claims"], rows).rstrip("\n")]
    verdicts = [t["verdict"] for c in summary["claims"] for t in c["tasks"].values()]
    if changes and any(v != REPRODUCED for v in verdicts):
        lines += ["", "## What would change the result", "", changes]
    return "\n".join(lines) + "\n"


def against_baseline_markdown(claims: Sequence[dict], rows: dict[str, Row], note: str = "") -> str:
    """The "Against the baseline" section of table.md: each claim's rows (a summary's `claims`, or claims
    whose tasks hold `rejudge` rows and `per_seed`), then the verdicts' legend; `note` after the intro."""
    lines = [
        "## Against the baseline",
        "",
        "B - A = method minus baseline, on the same test items. Per seed: the paired bootstrap over the "
        "items (what `sentkit compare A.json B.json` prints for the two results files). Items: the mean "
        "over the seeds of B - A with its 95% CI over the test items, every seed resampled on the same "
        "items; it treats these seeds as fixed. Seeds + items: the 95% CI and p-value that also count how "
        "much another training seed moves B - A (`sentkit compare --a ... --b ...`), and the smallest "
        "difference this test detects with 80% power.",
    ]
    lines += ["", note] if note else []
    lines += [
        "",
        "| claim (paper) | method vs baseline | task | paper's cells | per seed: B - A [95% CI] p | "
        "items: B - A [95% CI] | seeds + items: [95% CI] p | detectable | verdict |",
        "|---|---|---|---|---|---|---|---:|---|",
    ]
    for claim in claims:
        pair = f"{rows[claim['method']].label} vs {rows[claim['baseline']].label}"
        for task, t in claim["tasks"].items():
            per_seed = "; ".join(
                f"{k}: {d['delta']:+.2f} {_ci(d['ci'], True)} p {d['p_value']:.3f}"
                for k, d in t["per_seed"].items()
            )
            lines.append(
                f"| {claim['says']} | {pair} | {task} | {t['paper'] or '-'} | {per_seed} | "
                + " | ".join(verdict_cells(t))
                + " |"
            )
    corrected = any("holm" in t for claim in claims for t in claim["tasks"].values())
    lines += ["", VERDICT_LEGEND + (CORRECTED if corrected else UNCORRECTED)]
    return "\n".join(lines) + "\n"


# ---- judging a results file again ----------------------------------------------------------------------
def rejudge(path: str | Path, claims: Sequence[Claim] = (), out: str | Path | None = None) -> list[dict]:
    """The verdict rows of an example's results.json, judged by today's verdict: from the per-item values
    when the evaluations it names are at hand (in `out`, by default the file's folder: the example's --out),
    else from the per-seed differences and the item-level CI its summary keeps
    (`sentkit.stats.seeds.record_from_summary`: the item variance read off the CI's width, close but not
    exact). `claims` (e.g. the example's own, current ones) give the paper's effects a file written before
    `Claim.effect` lacks. Each row: the claim and task, its verdict before and now, the new row's numbers
    (`claim_row`) and `source`: "items" or "summary"."""
    from sentkit.compare import compare_seed_pairs
    from sentkit.errors import MissingDataError
    from sentkit.stats.seeds import record_from_summary

    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    folder = Path(out) if out is not None else path.parent
    rows = {key: Row(**row) for key, row in data["rows"].items()}
    effects = {(c.method, c.baseline): c.effect for c in claims}
    judged = []
    for claim in data["summary"]["claims"]:
        key = (claim["method"], claim["baseline"])
        claim = {**claim, "effect": effects.get(key, claim.get("effect") or {})}
        pairs = claim_pairs(data["scored"], claim, rows, data["seeds"], folder)
        exact = {}
        if pairs and all(a.is_file() and b.is_file() for _, a, b in pairs):
            try:
                exact = compare_seed_pairs(pairs, tasks=list(claim["tasks"]))["tasks"]
            except MissingDataError:  # a per-item sidecar not kept
                exact = {}
        for task, before in claim["tasks"].items():
            if task in exact:
                record, source = exact[task]["scores"]["main_score"], "items"
            else:
                p = before["pooled"]
                record, source = record_from_summary(p["a"], p["b"], p["deltas"], p["ci"]), "summary"
            record = seed_free(record, claim, rows)
            judged.append(
                {
                    "says": claim["says"],
                    "method": claim["method"],
                    "baseline": claim["baseline"],
                    "task": task,
                    "before": before["verdict"],
                    **claim_row(claim, task, record),
                    "source": source,
                }
            )
    return judged


def rejudged_markdown(path: str | Path, judged: Sequence[dict]) -> str:
    """`rejudge`'s rows as a markdown table."""
    lines = [
        f"## {path}",
        "",
        "| claim | method vs baseline | task | per seed B - A | items: B - A [95% CI] | "
        "seeds + items: [95% CI] p | detectable | verdict | before | from |",
        "|---|---|---|---|---|---|---:|---|---|---|",
    ]
    for row in judged:
        deltas = " / ".join(f"{d:+.2f}" for d in row["pooled"]["deltas"])
        cells = " | ".join(verdict_cells(row))
        lines.append(
            f"| {row['says']} | {row['method']} vs {row['baseline']} | {row['task']} | {deltas} | {cells} | "
            f"{row['before']} | {row['source']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="judge examples' results.json files again (rejudge)")
    parser.add_argument("results", nargs="+", help="results.json files written by the examples")
    for given in parser.parse_args().results:
        print(rejudged_markdown(given, rejudge(given)))
