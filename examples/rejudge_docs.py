"""Judge the method examples' results files in docs/results again with the seed-aware verdict and each
example's current claims (the paper's effects included), then write what the README and the method pages
quote: docs/results/verdicts.json, and the "Against the baseline" section of each docs/results/tables/*.md.

docs/results keeps no per-item values (the evaluations under each run's evals/ are not committed), so every
seed-aware record is rebuilt from the per-seed differences and the item-level CI the summary keeps, the
items' variance read off that CI's width (`seeds.rejudge`, source "summary"): an approximation of what the
example computes from the items, and labelled so in both outputs.

    python examples/rejudge_docs.py [--results docs/results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from seeds import Row, against_baseline_markdown, rejudge

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
APPROXIMATION = (
    "Approximation: the seed-aware columns (seeds + items, detectable, verdict) are rebuilt from the per-seed "
    "differences and the items' 95% CI, whose width gives the item-level variance, because the per-item "
    "values are not kept in docs/results. They are close to, not identical with, what the example computes "
    "from the items (`python examples/rejudge_docs.py`)."
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


def judge(path: Path) -> tuple[list[dict], list[dict]]:
    """(the rejudged rows, the file's claims with those rows and their per-seed differences per task)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    judged = rejudge(path, current_claims(data))
    claims = []
    for claim in data["summary"]["claims"]:
        tasks = {}
        for task, before in claim["tasks"].items():
            row = next(
                r
                for r in judged
                if (r["method"], r["baseline"], r["task"]) == (claim["method"], claim["baseline"], task)
            )
            tasks[task] = {**row, "paper": before["paper"], "per_seed": before["per_seed"]}
        claims.append({**claim, "tasks": tasks})
    return judged, claims


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("docs/results"))
    args = parser.parse_args(argv)
    record = {
        "about": "Seed-aware verdicts of the examples' results files (examples/rejudge_docs.py). "
        + APPROXIMATION,
        "files": {},
    }
    for name in FILES:
        path = args.results / name
        judged, claims = judge(path)
        record["files"][name] = judged
        rows = {key: Row(**row) for key, row in json.loads(path.read_text(encoding="utf-8"))["rows"].items()}
        table = args.results / "tables" / f"{path.stem}.md"
        rewrite_section(table, against_baseline_markdown(claims, rows, note=APPROXIMATION))
        print(f"{path}: {len(judged)} rows -> {table}")
    out = args.results / "verdicts.json"
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
