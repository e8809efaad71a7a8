"""Judge the method examples' results files in docs/results again with the seed-aware verdict and each
example's current claims (the paper's effects included), correct the secondary verdicts for multiplicity,
then write what docs/results.md and the method pages quote: docs/results/verdicts.json, and the "Against
the baseline" section of each docs/results/tables/*.md and docs/results/confirm/*.md.

Where a results file has a per-item folder (ITEMS: the same command run again, whose every score equals
the file's to the last digit, with its evaluations committed; docs/results.md, "Recomputing the
verdicts"), its seed-aware records are computed from those per-item values (`seeds.rejudge`, source
"items"), after checking that the scores agree. The other development runs' files (FILES) keep no per-item
values, so their records are rebuilt from the per-seed differences and the item-level CI the summary
keeps, the items' variance read off that CI's width (source "summary"): an approximation of what the
example computes from the items, and labelled so in both outputs. The confirmation runs' files (CONFIRM)
keep the records their example computed from the per-item values when it ran (source "items"); they are
taken as they are (tests/test_results_page.py recomputes them from their per-item folders).

Multiplicity (docs/results.md, "Reading the verdicts"): in each file, the comparison a method's
pre-registered main claim names (PRIMARY, docs/preregistration.md) keeps its verdict; every other claim and
task of the file is exploratory, and its verdict is taken again at its Holm-adjusted p-value over all of
them (`sentkit.stats.multiplicity.holm`). The rate at which *suggestive* fires with no effect is computed
for the docs' table and for each row that says it (`sentkit.stats.null_rate`).

    python examples/rejudge_docs.py [--results docs/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from seeds import SUGGESTIVE, Row, against_baseline_markdown, rejudge

FILES = (
    "emu.json",
    "ease.json",
    "ease_entity_tau_0.05.json",
    "ease_300_steps.json",
    "jcse_minilm.json",
    "jcse_e5.json",
    "jcse_e5_lr1e-5.json",
    "amr_retrofit.json",
)
CONFIRM = (
    "confirm/emu.json",
    "confirm/ease.json",
    "confirm/jcse.json",
    "confirm/amr.json",
    "confirm/emu_50_54.json",
    "confirm/ease_50_54.json",
)
# a results file -> the results.json of its per-item folder: the same command run again with the recorded
# host's kernels (capped to them where the host differs: docs/seeds.md#repeating-a-run-to-the-last-digit),
# every score the same
ITEMS = {
    "jcse_minilm.json": "jcse_minilm_items/results.json",
    "amr_retrofit.json": "amr_retrofit_items/results.json",
    "jcse_e5_lr1e-5.json": "jcse_e5_lr1e-5_items/results.json",
    "confirm/jcse.json": "confirm/jcse_items/results.json",
    "confirm/amr.json": "confirm/amr_items/results.json",
}
# (method, baseline, task) of the pre-registered main claim, in the files that hold it (Emu's and EASE's
# confirmations compare on held-out items, in confirm/*_holdout/, so their example files hold none)
PRIMARY = {
    "emu.json": ("emu", "emu-no-ld", "knn-marc-category-body-500"),
    "ease.json": ("ease", "simcse-unsup", "mewsc16-100"),
    "jcse_minilm.json": ("minilm-en/stage1", "minilm-en/unsup", "jacsts"),
    "amr_retrofit.json": ("muse-m/concat_norm", "muse-m/s", "sts17"),
    "confirm/jcse.json": ("minilm-en/stage1", "minilm-en/unsup", "jacsts"),
    "confirm/amr.json": ("muse-m/concat_norm", "muse-m/s", "sts17"),
}
# the ten-seed extension (added after the pre-registered five-seed runs): name -> (comparison, the paper's
# effect); its claims are exploratory, Holm-adjusted over this table
TEN_SEEDS = {
    "emu": ("confirm/emu_ten_seeds.json", 1.05),
    "ease": ("confirm/ease_ten_seeds.json", 1.9),
}
# the docs' table of how often *suggestive* fires with no effect: seeds x seed-to-item variance ratios
NULL_SEEDS = (3, 5)
NULL_RATIOS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
APPROXIMATION = (
    "Approximation: the seed-aware columns (seeds + items, detectable, verdict) are rebuilt from the per-seed "
    "differences and the items' 95% CI, whose width gives the item-level variance, because the per-item "
    "values are not kept in docs/results. They are close to, not identical with, what the example computes "
    "from the items (`python examples/rejudge_docs.py`)."
)
FROM_ITEMS = (
    "The seed-aware columns are computed from the per-item values in docs/results/{folder}/: the same "
    "command run again, every score equal to this run's to the last digit."
)
MULTIPLICITY = (
    "Exploratory rows: every row but the pre-registered main claim's (docs/preregistration.md) is judged "
    "again at its Holm-adjusted p-value over all the exploratory rows of this table (Holm 1979: the chance "
    "of any false *reproduced* or *opposite* among them is at most 5%); the uncorrected verdict follows in "
    "brackets."
)


def current_claims(data: dict) -> list:
    """The claims the example that wrote `data` declares today, for its settings (the paper's effects)."""
    from types import SimpleNamespace

    example = data["example"]
    if example == "train_emu":
        from train_emu import CLAIMS

        return list(CLAIMS)
    if example == "train_ease":
        from train_ease import claims

        return claims(SimpleNamespace(**data["settings"]))
    if example == "amr_retrofit":
        from amr_retrofit import declare

        models = list(dict.fromkeys(key.split("/")[0] for key in data["rows"] if "/" in key))
        return declare(models, data["settings"].get("control_model", ""))[1]
    return []  # train_jcse: the paper prints no effect, the file's claims are today's


def same_scores(path: Path, again: Path) -> None:
    """Refuse a per-item folder whose run scored any model, seed or task differently from `path`."""
    recorded = json.loads(path.read_text(encoding="utf-8"))["scored"]
    rerun = json.loads(again.read_text(encoding="utf-8"))["scored"]
    for seed, rows in recorded.items():
        for row, entry in rows.items():
            scores = rerun.get(seed, {}).get(row, {}).get("scores")
            if scores != entry["scores"]:
                raise SystemExit(f"{again}: {row} at seed {seed} does not score what {path} records")


def judge(path: Path, items: Path | None = None) -> tuple[list[dict], list[dict]]:
    """(the rejudged rows, the file's claims as its summary holds them); from the per-item values of
    `items` (a rerun's results.json with the same scores) when given."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if items is not None:
        same_scores(path, items)
    judged = rejudge(items or path, current_claims(data))
    directions = {(c["method"], c["baseline"]): c["direction"] for c in data["summary"]["claims"]}
    for row in judged:
        row["direction"] = directions[(row["method"], row["baseline"])]
    return judged, data["summary"]["claims"]


def stored(path: Path) -> tuple[list[dict], list[dict]]:
    """A confirmation run's rows as its example computed them from the per-item values (module doc)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    judged = [
        {
            "says": claim["says"],
            "method": claim["method"],
            "baseline": claim["baseline"],
            "task": task,
            "before": row["verdict"],
            **{key: row[key] for key in ("pooled", "seed_aware", "effect", "verdict", "why")},
            "source": "items",
            "direction": claim["direction"],
        }
        for claim in data["summary"]["claims"]
        for task, row in claim["tasks"].items()
    ]
    return judged, data["summary"]["claims"]


def with_rows(claims: list[dict], judged: list[dict]) -> list[dict]:
    """The file's claims, each task's entry replaced by its judged row (paper cells and per-seed kept)."""
    out = []
    for claim in claims:
        tasks = {}
        for task, before in claim["tasks"].items():
            row = next(
                r
                for r in judged
                if (r["method"], r["baseline"], r["task"]) == (claim["method"], claim["baseline"], task)
            )
            tasks[task] = {**row, "paper": before["paper"], "per_seed": before["per_seed"]}
        out.append({**claim, "tasks": tasks})
    return out


def correct(judged: list[dict], primary: tuple[str, str, str] | None) -> None:
    """Mark each row primary or exploratory; give the exploratory ones their Holm-adjusted p-value and the
    verdict at it (`holm`), and every *suggestive* row the rate at which that fires with no effect."""
    from sentkit.stats.multiplicity import holm

    exploratory = [r for r in judged if (r["method"], r["baseline"], r["task"]) != primary]
    adjusted = holm([r["seed_aware"]["p_value"] for r in exploratory])
    for row in judged:
        row["role"] = "primary" if (row["method"], row["baseline"], row["task"]) == primary else "exploratory"
    for row, p in zip(exploratory, adjusted):
        row["holm"] = {"p": p, "family": len(exploratory), **holm_verdict(row, p)}
    for row in judged:
        said = row["holm"]["verdict"] if "holm" in row else row["verdict"]
        if said == SUGGESTIVE:
            row["suggestive_no_effect_rate"] = no_effect_rate(row)


def holm_verdict(row: dict, p: float | None) -> dict:
    """The verdict of a row whose seed-aware p-value is replaced by its adjusted one `p`: an adjusted p at
    or above alpha counts as a seed-aware interval that holds 0 (the items' interval and the detectable
    difference then decide, as in `seeds.verdict`)."""
    from sentkit.stats.bootstrap import LEVEL
    from sentkit.stats.seeds import alpha_of, verdict

    s = row["seed_aware"]
    rejected = p is not None and p < alpha_of(LEVEL)
    record = {
        "ci": s["ci"] if rejected else None,
        "item": {"ci": row["pooled"]["ci"]},
        "p_value": p,
        "detectable": s["detectable"],
        "level": LEVEL,
        "seeds": len(row["pooled"]["deltas"]),
    }
    judged = verdict(record, row["direction"], row["effect"])
    why = judged["why"].replace("seed-aware p", "Holm p").replace("excludes 0, p", "excludes 0, Holm p")
    return {"verdict": judged["verdict"], "why": why.replace("other side, p", "other side, Holm p")}


def no_effect_rate(row: dict) -> dict:
    """How often *suggestive* fires with no effect at this row's own seed-to-item variance ratio."""
    from sentkit.stats.null_rate import suggestive_rate

    s, k = row["seed_aware"], len(row["pooled"]["deltas"])
    seed_part = s["seed_sd"] ** 2 / k
    item_part = max(s["se"] ** 2 - seed_part, 0.0)
    ratio = seed_part / item_part if item_part > 0 else float("inf")
    return {"ratio": ratio, "seeds": k, "rate": suggestive_rate(min(ratio, 1e6), k)}


def ten_seeds(results: Path) -> dict:
    """The ten-seed comparisons (TEN_SEEDS) as exploratory rows, Holm-adjusted over the table's claims."""
    from sentkit.stats.multiplicity import holm
    from sentkit.stats.seeds import verdict

    rows = {}
    for name, (file, effect) in TEN_SEEDS.items():
        stored = json.loads((results / file).read_text(encoding="utf-8"))
        ((task, entry),) = stored["tasks"].items()
        record = entry["scores"]["main_score"]
        judged = verdict(record, +1, effect)
        rows[name] = {
            "file": file,
            "task": task,
            "pooled": {"ci": record["item"]["ci"], "deltas": record["deltas"], "delta": record["delta"]},
            "seed_aware": {key: record[key] for key in ("ci", "p_value", "detectable")},
            "direction": 1,
            "effect": effect,
            "verdict": judged["verdict"],
            "why": judged["why"],
        }
    for row, p in zip(rows.values(), holm([r["seed_aware"]["p_value"] for r in rows.values()])):
        row["holm"] = {"p": p, "family": len(rows), **holm_verdict(row, p)}
    return rows


def approximation_check(results: Path, judged: dict[str, list[dict]]) -> dict:
    """How far the summary approximation (APPROXIMATION) lands from the per-item values, on every file that
    has both (ITEMS), whose rows `judged` holds as `main` judged them from those values: each row's
    seed-aware CI ends, p-value and detectable difference, the largest absolute gap of each (the detectable
    difference's also relative to its exact value), and the rows whose verdict differs."""
    gaps = {"ci_end": 0.0, "p_value": 0.0, "detectable": 0.0, "detectable_relative": 0.0}
    differ, rows = [], 0
    for name, folder in ITEMS.items():
        path = results / name
        claims = current_claims(json.loads(path.read_text(encoding="utf-8")))
        exact = {(r["method"], r["baseline"], r["task"]): r for r in judged[name]}
        for row in rejudge(path, claims):
            key = (row["method"], row["baseline"], row["task"])
            truth, rows = exact[key], rows + 1
            if (row["source"], truth["source"]) != ("summary", "items"):
                raise SystemExit(f"{name}: {key} is not judged from the summary and from {folder}'s items")
            a, b = row["seed_aware"], truth["seed_aware"]
            gaps["ci_end"] = max(gaps["ci_end"], *(abs(x - y) for x, y in zip(a["ci"], b["ci"])))
            gaps["p_value"] = max(gaps["p_value"], abs(a["p_value"] - b["p_value"]))
            gap = abs(a["detectable"] - b["detectable"])
            gaps["detectable"] = max(gaps["detectable"], gap)
            if b["detectable"] > 0:
                gaps["detectable_relative"] = max(gaps["detectable_relative"], gap / b["detectable"])
            if row["verdict"] != truth["verdict"]:
                differ.append(
                    {"file": name, "row": list(key), "summary": row["verdict"], "items": truth["verdict"]}
                )
    return {"files": list(ITEMS), "rows": rows, "largest_gap": gaps, "verdicts_differ": differ}


def rewrite_section(table: Path, section: str) -> None:
    """Replace the "## Against the baseline" section of a table.md (up to the next "## " heading)."""
    text = table.read_text(encoding="utf-8")
    start = text.index("## Against the baseline")
    end = text.find("\n## ", start + 1)
    end = len(text) if end < 0 else end + 1
    table.write_text(
        text[:start] + section + ("\n" if end < len(text) else "") + text[end:], encoding="utf-8"
    )


def main(argv=None) -> None:
    from sentkit.stats.multiplicity import METHOD
    from sentkit.stats.null_rate import rate_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    args = parser.parse_args(argv)
    record = {
        "about": "Seed-aware verdicts of the examples' results files (examples/rejudge_docs.py). Files "
        "outside confirm/ without a per-item folder (source summary): " + APPROXIMATION + " " + MULTIPLICITY,
        "multiplicity": METHOD,
        "files": {},
    }
    for name in (*FILES, *CONFIRM):
        path = args.results / name
        items = args.results / ITEMS[name] if name in ITEMS else None
        if name in CONFIRM:
            if items is not None:
                same_scores(path, items)
            judged, summary_claims = stored(path)
        else:
            judged, summary_claims = judge(path, items)
        correct(judged, PRIMARY.get(name))
        claims = with_rows(summary_claims, judged)
        record["files"][name] = judged
        rows = {key: Row(**row) for key, row in json.loads(path.read_text(encoding="utf-8"))["rows"].items()}
        table = path.with_suffix(".md") if name in CONFIRM else args.results / "tables" / f"{path.stem}.md"
        if name in CONFIRM:
            note = MULTIPLICITY
        elif items is not None:
            note = f"{FROM_ITEMS.format(folder=Path(ITEMS[name]).parent)}\n\n{MULTIPLICITY}"
        else:
            note = f"{APPROXIMATION}\n\n{MULTIPLICITY}"
        rewrite_section(table, against_baseline_markdown(claims, rows, note=note))
        print(f"{path}: {len(judged)} rows -> {table}")
    record["ten_seeds"] = ten_seeds(args.results)
    record["suggestive_no_effect"] = rate_table(NULL_RATIOS, NULL_SEEDS)
    record["approximation_check"] = approximation_check(args.results, record["files"])
    out = args.results / "verdicts.json"
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
