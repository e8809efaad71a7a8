"""docs/results-index.md lists every file under docs/results once, and nothing in the docs points at a
results file that is not there.

A row of the index names a results file by a link (`[x.json](results/x.json)`); a link to a folder
(`results/confirm/emu_holdout/`) stands for every file under it, for a run whose per-seed files belong
together. A file covered by no row, or by two, fails; so does a link or a `docs/results/...` path in
README.md or any page of docs/ that names a file the folder does not hold.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_docs import DOCS, README, ROOT, link_targets, shown, split_fences

RESULTS = DOCS / "results"
INDEX = DOCS / "results-index.md"
# a results path written out in prose or code (`docs/results/confirm/emu.json`, `docs/results/confirm/`), not
# as a link: a file name with its extension or a folder with its slash (`docs/results/NAME` is a placeholder);
# `git show 738b94c:docs/results/x.json` names a file the tree no longer holds, on purpose
RESULTS_PATH = re.compile(r"(?<![:\w/])docs/results/(?:[\w.-]+/)*(?:[\w-][\w.-]*\.\w+\b|(?<=/))")


def results_files(results: Path) -> list[Path]:
    return sorted(p for p in results.rglob("*") if p.is_file())


def index_entries(index: Path, results: Path) -> list[Path]:
    """The files and folders under `results` that the index page links, in the order they appear (a link to
    the results folder itself is a way in, not an entry)."""
    entries = []
    for _, target in link_targets(index):
        path = (index.parent / target.partition("#")[0]).resolve()
        if results.resolve() in path.parents:
            entries.append(path)
    return entries


def coverage_problems(results: Path, index: Path) -> list[str]:
    """One message per results file that no index entry covers or that two entries cover."""
    entries = index_entries(index, results)
    problems = []
    for file in results_files(results):
        covering = [e for e in entries if e == file.resolve() or e in file.resolve().parents]
        name = file.relative_to(results)
        if not covering:
            problems.append(
                f"{name}: no row of {shown(index)} lists it (index it with what it backs, or git rm it)"
            )
        elif len(covering) > 1:
            problems.append(f"{name}: listed {len(covering)} times in {shown(index)}")
    return problems


def missing_references(pages: list[Path], results: Path, root: Path) -> list[str]:
    """One message per link or written-out docs/results/ path of `pages` that names no file or folder."""
    problems = []
    for page in pages:
        for number, target in link_targets(page):
            path = (page.parent / target.partition("#")[0]).resolve()
            if results.resolve() in path.parents and not path.exists():
                problems.append(f"{shown(page)}:{number}: links {target}, which docs/results does not hold")
        prose, blocks = split_fences(page.read_text(encoding="utf-8"))
        texts = [line for _, line in prose] + [body for _, body in blocks]
        for text in texts:
            for written in RESULTS_PATH.findall(text):
                if not (root / written).exists():
                    problems.append(f"{shown(page)}: names {written}, which does not exist")
    return problems


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


# ---- the repository --------------------------------------------------------------------------------------
def test_every_results_file_is_listed_once_in_the_index():
    assert INDEX.is_file()
    assert coverage_problems(RESULTS, INDEX) == []


def test_no_page_names_a_results_file_that_is_missing():
    assert missing_references(doc_pages(), RESULTS, ROOT) == []


# ---- the checks themselves -------------------------------------------------------------------------------
def test_an_unlisted_a_twice_listed_and_a_missing_file_are_each_reported(tmp_path):
    results = tmp_path / "docs" / "results"
    (results / "run").mkdir(parents=True)
    for name in ("a.json", "b.json", "c.json", "run/seed1.json", "run/seed2.json"):
        (results / name).write_text("{}")
    index = tmp_path / "docs" / "results-index.md"
    index.write_text(
        "Every file under [results/](results/).\n\n| file | backs | page |\n|---|---|---|\n"
        "| [a.json](results/a.json) | a claim | [p](p.md) |\n"
        "| [run/](results/run/) | seeds | [p](p.md) |\n"
        "| [run/seed1.json](results/run/seed1.json) | again | [p](p.md) |\n"
        "| [c.json](results/c.json) | c | [p](p.md) |\n",
        encoding="utf-8",
    )
    assert coverage_problems(results, index) == [
        "b.json: no row of " + str(index) + " lists it (index it with what it backs, or git rm it)",
        "run/seed1.json: listed 2 times in " + str(index),
    ]
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](results/a.json) [gone](results/gone.json)\n\n```bash\ncat docs/results/also_gone.json\n```\n"
        "Read `docs/results/c.json` or `docs/results/run/`; `docs/results/NAME` is a placeholder.\n"
        "Removed: `git show 738b94c:docs/results/old.json`.\n",
        encoding="utf-8",
    )
    problems = missing_references([page], results, tmp_path)
    assert len(problems) == 2, problems
    assert "results/gone.json" in problems[0] and "docs/results/also_gone.json" in problems[1]
