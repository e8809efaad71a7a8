"""The method pages' tables of claims say what docs/results/verdicts.json says (docs/results.md, "Reading
the verdicts"): a verdict printed in a table is the pre-registered main claim's, marked "main claim", or is
labelled exploratory and given at its Holm-adjusted p-value; a *suggestive* says how often it fires with no
effect; every Holm p, such rate and seed-aware interval ("[lo, hi], p x") printed in such a table is one of
the results file's rows, to the digits printed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sentkit.stats.seeds import format_p

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "methods" / f"{name}.md" for name in ("emu", "ease", "jcse", "amr")]
VERDICTS = ROOT / "docs" / "results" / "verdicts.json"
MARK = re.compile(r"<!-- tests/test_method_pages.py checks this table against (\S+) -->")
WORD = re.compile(r"\b(reproduced|opposite|suggestive|underpowered|inconclusive)\b")
EXPLORATORY = re.compile(r"exploratory: \**(\w+)\**[^|]*?Holm p (<\s?0\.001|\d\.\d{3})")
FIRES = re.compile(r"fires (\d+)% of the time with no effect")
SEED_AWARE = re.compile(r"\[([+-]?\d+\.\d+), ([+-]?\d+\.\d+)\],? p (<\s?0\.001|\d\.\d{3})")


def tables(text: str) -> list[tuple[str | None, list[str]]]:
    """Each markdown table of a page: (the results file its marker names or None, its body rows)."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marked = MARK.search(above)
            body = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                body.append(row)
            found.append((marked.group(1) if marked else None, body))
    return found


def rate(cell: str) -> str | None:
    """The rate with no effect a cell prints for its *suggestive*, in percent."""
    found = FIRES.search(cell)
    return found.group(1) if found else None


def rate_of(row: dict) -> str | None:
    return (
        f"{100 * row['suggestive_no_effect_rate']['rate']:.0f}"
        if "suggestive_no_effect_rate" in row
        else None
    )


def problems(row: str, rows: list[dict]) -> list[str]:
    """What in one table row is not in the results file's rows (empty: nothing)."""
    wrong = []
    cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
    primary = next((r for r in rows if r["role"] == "primary"), None)
    for cell in cells:
        if not WORD.search(cell):
            continue
        if "exploratory:" in cell:
            for said, p in EXPLORATORY.findall(cell):
                p = p.replace(" ", "")
                matches = [
                    r
                    for r in rows
                    if "holm" in r and (r["holm"]["verdict"], format_p(r["holm"]["p"])) == (said, p)
                ]
                if not matches:
                    wrong.append(f"no exploratory row is {said} at Holm p {p}: {cell!r}")
                elif said == "suggestive" and not any(rate(cell) == rate_of(r) for r in matches):
                    wrong.append(f"a suggestive without its rate with no effect, or another one: {cell!r}")
            if not EXPLORATORY.search(cell):
                wrong.append(f"an exploratory verdict without its Holm p: {cell!r}")
        elif "main claim" in cell:
            said = WORD.search(cell).group(1)
            if primary is None or primary["verdict"] != said:
                wrong.append(f"the main claim is {primary and primary['verdict']}, printed {said}: {cell!r}")
            elif said == "suggestive" and rate(cell) != rate_of(primary):
                wrong.append(f"a suggestive without its rate with no effect, or another one: {cell!r}")
        else:
            wrong.append(f"a verdict neither the main claim's nor labelled exploratory: {cell!r}")
    for lo, hi, p in SEED_AWARE.findall(row):
        p = p.replace(" ", "")
        if not any(
            f"{r['seed_aware']['ci'][0]:+.2f}" == lo
            and f"{r['seed_aware']['ci'][1]:+.2f}" == hi
            and format_p(r["seed_aware"]["p_value"]) == p
            for r in rows
        ):
            wrong.append(f"no row has the seed-aware interval [{lo}, {hi}], p {p}")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_verdict_in_a_method_pages_tables_is_in_verdicts_json(page):
    files = json.loads(VERDICTS.read_text(encoding="utf-8"))["files"]
    checked, wrong = 0, {}
    for name, body in tables(page.read_text(encoding="utf-8")):
        if name is None:
            assert not any(WORD.search(row) for row in body), (
                f"{page.name}: a table of verdicts has no marker"
            )
            continue
        for row in body:
            checked += 1
            if found := problems(row, files[name]):
                wrong[row[:60]] = found
    assert checked > 0 and wrong == {}, json.dumps(wrong, indent=1, ensure_ascii=False)


def test_an_unlabelled_or_edited_verdict_is_caught():
    rows = json.loads(VERDICTS.read_text(encoding="utf-8"))["files"]["emu.json"]
    good = (
        "| x | +4.75 | [+1.79, +7.72], p 0.016 | exploratory: suggestive (Holm p 0.081; fires 20% of the time "
        "with no effect) |"
    )
    assert problems(good, rows) == []
    assert problems(good.replace("exploratory: suggestive", "reproduced"), rows)
    assert problems(good.replace("0.081", "0.080"), rows)
    assert problems(good.replace("+7.72", "+7.73"), rows)
    assert problems(good.replace("20%", "21%"), rows)
    assert problems("| main claim | **inconclusive** |", rows)
