"""docs/methods/simcse.md's "Measured runs" table says only what its files show: each row's start, end, delta and
wall time equal the results file the row links to, to the digits printed (the delta from unrounded scores)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "methods" / "simcse.md"
SCORES = re.compile(r"(\d+\.\d+) -> \**(\d+\.\d+)\**")
LINK = re.compile(r"\]\(((?:\.\./)?results/simcse/[\w.\-]+\.json)\)")


def measured_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the table under "## Measured runs"."""
    section = text.split("\n## Measured runs\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "|---" not in line]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def mismatches(row: list[str]) -> list[str]:
    """What in one row differs from its file (empty: nothing)."""
    _, scores, delta, wall, link = row
    data = json.loads((DOC.parent / LINK.search(link).group(1)).read_text(encoding="utf-8"))
    start, end = (float(v) for v in SCORES.search(scores).groups())
    wrong = []
    if start != round(data["start"]["main_score"], 2) or end != round(data["end"]["main_score"], 2):
        wrong.append(f"scores {start} -> {end}")
    if float(delta.strip("*")) != round(data["delta_main_score"], 2):
        wrong.append(f"delta {delta}")
    minutes, seconds = divmod(round(data["timings"]["total_s"]), 60)
    if wall != f"{minutes}:{seconds:02d}":
        wrong.append(f"wall {wall}")
    return wrong


def test_every_row_of_the_measured_runs_table_is_in_its_file():
    rows = measured_rows(DOC.read_text(encoding="utf-8"))
    assert len(rows) == 5
    wrong = {row[0]: mismatches(row) for row in rows}
    assert {run: what for run, what in wrong.items() if what} == {}


@pytest.mark.parametrize(
    ("cell", "value"), [(1, "84.56 -> **85.04** (kept step 5)"), (2, "**+0.48**"), (3, "12:39")]
)
def test_an_edited_number_is_caught(cell, value):
    row = measured_rows(DOC.read_text(encoding="utf-8"))[0]
    row[cell] = value
    assert mismatches(row)
