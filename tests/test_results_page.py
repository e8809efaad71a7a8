"""Every number of docs/results.md comes from a file in docs/results: each table is parsed, and the numbers
of each row (all columns but the paper's and the link), in reading order, must equal the values listed for
that row below, to the digits printed; each verdict must be the one its file gives (the Holm-adjusted one
for an exploratory row), and the confirmations are recomputed from the committed per-item values where the
repository holds them.

Keeping it up: a row of a table is one entry of ROWS (development runs) or SPEED, in the same order, whose
`numbers` name where each printed number comes from (a file in docs/results and the path inside it, or a
small computation on them). Editing a number on the page, or a results file, without the other makes this
test fail.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
RESULTS = ROOT / "docs" / "results"
# the first cell (the method's name) is the row's key; the paper's cells are quoted from the paper; the
# last column is a link
UNCHECKED = ("paper", "write-up")
EXPLORATORY = "exploratory:"  # the verdict of an exploratory row: the one at its Holm-adjusted p
STAGE = re.compile(r"\bstage \d( \+ \d)?")  # JCSE's "stage 1", "stage 1 + 2": names, not numbers
# a number that stands alone: not part of a name (e5-small-m, STS17, MewsC-16, 1-NN, fp32), optionally
# "<" (a p-value below it), a sign, a thousands comma; "x" (a ratio) may follow
NUMBER = re.compile(
    r"(?<![\w.\-/])(<?[+\-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|<?[+\-]?\d+(?:\.\d+)?)(?=x?(?![\w\-]))"
)


@cache
def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Value:
    """A number from a results file: `file` and a readable `where`, computed by `get` from the file's JSON."""

    file: str
    where: str
    get: Callable[[dict], float]

    def __call__(self) -> float:
        return float(self.get(load(self.file)))


def at(file: str, *path) -> Value:
    def get(data):
        for key in path:
            data = data[key]
        return data

    return Value(file, "/".join(map(str, path)), get)


def calc(file: str, where: str, get: Callable[[dict], float]) -> Value:
    return Value(file, where, get)


def row_stat(file: str, row: str, task: str, stat: str = "mean") -> Value:
    return at(file, "summary", "rows", row, task, stat)


def verdict_row(file: str, method: str, baseline: str, task: str) -> dict:
    rows = load("verdicts.json")["files"][file]
    return next(r for r in rows if (r["method"], r["baseline"], r["task"]) == (method, baseline, task))


def judged(file: str, method: str, baseline: str, task: str, *path) -> Value:
    """A field of the seed-aware verdict row in verdicts.json, e.g. ("seed_aware", "ci", 0)."""

    def get(_):
        value = verdict_row(file, method, baseline, task)
        for key in path:
            value = value[key]
        return value

    return Value("verdicts.json", f"{file}: {method} vs {baseline}, {task}: {'/'.join(map(str, path))}", get)


def holm_p(file: str, method: str, baseline: str, task: str) -> Value:
    """The Holm-adjusted p-value of an exploratory row (rejudge_docs.py)."""
    return judged(file, method, baseline, task, "holm", "p")


def no_effect_rate(file: str, method: str, baseline: str, task: str) -> Value:
    """How often *suggestive* fires with no effect at the row's spread, in percent."""
    row = judged(file, method, baseline, task, "suggestive_no_effect_rate", "rate")
    return calc("verdicts.json", row.where, lambda d: 100 * row())


def claim(file: str, method: str, baseline: str, task: str) -> list[Value]:
    """items delta [ci], seeds + items [ci] p, detectable: the cells of a claim's row, in the table's order."""
    j = lambda *path: judged(file, method, baseline, task, *path)  # noqa: E731
    return [
        j("pooled", "delta"),
        j("pooled", "ci", 0),
        j("pooled", "ci", 1),
        j("seed_aware", "ci", 0),
        j("seed_aware", "ci", 1),
        j("seed_aware", "p_value"),
        j("seed_aware", "detectable"),
    ]


def n_seeds(file: str) -> Value:
    return calc(file, "number of seeds", lambda d: len(d["seeds"]))


def unsup_minus_start(seed: str) -> Value:
    file = "jcse_minilm.json"
    rows = ("summary", "rows")
    return calc(
        file,
        f"unsup - direct at seed {seed}",
        lambda d: (
            d[rows[0]][rows[1]]["minilm-en/unsup"]["jacsts"]["seeds"][seed]["main_score"]
            - d[rows[0]][rows[1]]["minilm-en/direct"]["jacsts"]["seeds"]["once"]["main_score"]
        ),
    )


def kept_start(file: str, row: str, start: str) -> Value:
    """How many seeds of `row` score exactly the start (dev selection kept step 0)."""

    def get(d):
        rows = d["summary"]["rows"]
        once = rows[start]["jacsts"]["seeds"]["once"]["main_score"]
        return sum(s["main_score"] == once for s in rows[row]["jacsts"]["seeds"].values())

    return calc(file, f"seeds where {row} equals {start}", get)


def trained_seed(file: str) -> Value:
    """The one seed at which unsupervised SimCSE moved from the start."""

    def get(d):
        rows = d["summary"]["rows"]
        once = rows["minilm-en/direct"]["jacsts"]["seeds"]["once"]["main_score"]
        (seed,) = [
            k for k, s in rows["minilm-en/unsup"]["jacsts"]["seeds"].items() if s["main_score"] != once
        ]
        return int(seed)

    return calc(file, "the seed where SimCSE trained", get)


def make_run_deltas(pick) -> Value:
    """min / max over the percent tasks of make run's int8 - fp32 (alignment-uniformity is not in percent)."""

    def get(_):
        a, b = load("make_run_e5_int8.json")["tasks"], load("make_run_e5_fp32.json")["tasks"]
        return pick(a[t]["main_score"] - b[t]["main_score"] for t in a if t != "alignment-uniformity")

    return calc("make_run_e5_int8.json", "int8 - fp32 per task (make_run_e5_fp32.json)", get)


INT8_SPEED = "int8_speed_openvino_avx2.json"  # every sentence-transformers CPU backend in the same run


INT8_SPEED_AMX = "int8_speed_amx_2core_performance_preset.json"  # 2 idle AMX cores, every backend


def int8(model: str, *path, file: str = INT8_SPEED) -> Value:
    return at(file, "models", model, *path)


def int8_stsb_change(model: str, file: str = INT8_SPEED, runner: str = "sentkit int8") -> Value:
    def get(d):
        quality = d["models"][model]["quality"]
        return quality[runner]["stsb"] - quality["sentkit torch fp32"]["stsb"]

    return calc(file, f"{model} STS-B {runner} - fp32", get)


def fastest_anchor_median(model: str, file: str) -> Value:
    """The median rate of the anchor backend fastest by median."""

    def get(d):
        m = d["models"][model]
        return m["timings"][m["fastest_anchor"]["median"]]["median_sent_per_s"]

    return calc(file, f"{model} fastest anchor's median sent/s", get)


def int8_amx_row(model: str) -> Row:
    """The AMX host's `@int8` path (OpenVINO int8): median rates, median and best ratios, STS-B change."""
    file, runner = INT8_SPEED_AMX, "sentkit openvino-int8"
    return Row(
        "int8 (`@int8`)",
        [
            fastest_anchor_median(model, file),
            int8(model, "timings", runner, "median_sent_per_s", file=file),
            int8(model, "median_speed_vs_fastest_anchor", runner, file=file),
            int8(model, "speed_vs_fastest_anchor", runner, file=file),
            int8_stsb_change(model, file, runner),
        ],
    )


@dataclass(frozen=True)
class Row:
    method: str  # the first cell, as printed
    numbers: list[Value]
    verdict: tuple[str, str, str, str] | None = None  # (file, method, baseline, task) in verdicts.json
    extra: dict = field(default_factory=dict)


EMU, EASE, JM, JE, AMR = "emu.json", "ease.json", "jcse_minilm.json", "jcse_e5.json", "amr_retrofit.json"
BODY, TITLES = "knn-marc-category-body-500", "knn-marc-category-500"
MAIN_EMU = (EMU, "emu", "emu-no-ld", BODY)
JCSE_MAIN = (JM, "minilm-en/stage1", "minilm-en/unsup", "jacsts")
ROWS = [
    Row(
        "unsup. SimCSE",
        [
            at(JM, "extra", "unsup_data", "sentences"),
            at(JM, "settings", "unsup_steps"),
            n_seeds(JM),
            row_stat(JM, "minilm-en/direct", "jacsts"),
            row_stat(JM, "minilm-en/unsup", "jacsts"),
            row_stat(JM, "minilm-en/unsup", "jacsts", "sd"),
            unsup_minus_start("42"),
            unsup_minus_start("43"),
            unsup_minus_start("44"),
            kept_start(JM, "minilm-en/unsup", "minilm-en/direct"),
            n_seeds(JM),
        ],
    ),
    Row(
        "unsup. SimCSE",
        [
            n_seeds(JE),
            row_stat(JE, "e5-small-m/direct", "jacsts"),
            row_stat(JE, "e5-small-m/unsup", "jacsts"),
            calc(
                JE,
                "unsup - direct, largest at any seed",
                lambda d: max(
                    abs(s["main_score"] - d["summary"]["rows"]["e5-small-m/direct"]["jacsts"]["mean"])
                    for s in d["summary"]["rows"]["e5-small-m/unsup"]["jacsts"]["seeds"].values()
                ),
            ),
        ],
    ),
    Row(
        "EASE (main claim)",
        [
            at(EASE, "settings", "max_steps"),
            n_seeds(EASE),
            at(EASE, "settings", "mewsc_rows"),
            row_stat(EASE, "simcse-unsup", "mewsc16-100"),
            row_stat(EASE, "ease", "mewsc16-100"),
            *claim(EASE, "ease", "simcse-unsup", "mewsc16-100"),
        ],
        verdict=(EASE, "ease", "simcse-unsup", "mewsc16-100"),
    ),
    Row(
        "Emu (main claim)",
        [
            at(EMU, "settings", "max_steps"),
            n_seeds(EMU),
            calc(
                EMU,
                "language pairs",
                lambda d: len(d["summary"]["rows"]["base"][BODY]["seeds"]["once"]["chance"]),
            ),
            at(EMU, "summary", "rows", "base", BODY, "seeds", "once", "chance_mean"),
            row_stat(EMU, "emu-no-ld", BODY),
            row_stat(EMU, "emu", BODY),
            row_stat(EMU, "emu", BODY, "sd"),
            *claim(*MAIN_EMU),
        ],
        verdict=MAIN_EMU,
    ),
    Row(
        "Emu, titles only",
        [
            row_stat(EMU, "emu-no-ld", TITLES),
            row_stat(EMU, "emu", TITLES),
            row_stat(EMU, "emu", TITLES, "sd"),
            *claim(EMU, "emu", "emu-no-ld", TITLES),
            holm_p(EMU, "emu", "emu-no-ld", TITLES),
        ],
        verdict=(EMU, "emu", "emu-no-ld", TITLES),
    ),
    Row(
        "Emu",
        [
            row_stat(EMU, "base", BODY),
            row_stat(EMU, "emu", BODY),
            *claim(EMU, "emu", "base", BODY),
            holm_p(EMU, "emu", "base", BODY),
            no_effect_rate(EMU, "emu", "base", BODY),
        ],
        verdict=(EMU, "emu", "base", BODY),
    ),
    Row(
        "JCSE stage 1 (main claim)",
        [
            n_seeds(JM),
            row_stat(JM, "minilm-en/unsup", "jacsts"),
            kept_start(JM, "minilm-en/unsup", "minilm-en/direct"),
            n_seeds(JM),
            row_stat(JM, "minilm-en/stage1", "jacsts"),
            row_stat(JM, "minilm-en/stage1", "jacsts", "sd"),
            *claim(*JCSE_MAIN)[:3],
            trained_seed(JM),
            at(JM, "summary", "claims", 0, "tasks", "jacsts", "per_seed", "43", "delta"),
            at(JM, "summary", "claims", 0, "tasks", "jacsts", "per_seed", "43", "ci", 0),
            at(JM, "summary", "claims", 0, "tasks", "jacsts", "per_seed", "43", "ci", 1),
            *claim(*JCSE_MAIN)[3:],
            no_effect_rate(*JCSE_MAIN),
        ],
        verdict=JCSE_MAIN,
    ),
    Row(
        "JCSE stage 1",
        [
            row_stat(JM, "minilm-en/direct", "jacsts"),
            row_stat(JM, "minilm-en/stage1", "jacsts"),
            *claim(JM, "minilm-en/stage1", "minilm-en/direct", "jacsts"),
            holm_p(JM, "minilm-en/stage1", "minilm-en/direct", "jacsts"),
        ],
        verdict=(JM, "minilm-en/stage1", "minilm-en/direct", "jacsts"),
    ),
    Row(
        "JCSE stage 2 over stage 1",
        [
            row_stat(JM, "minilm-en/stage1", "jacsts"),
            row_stat(JM, "minilm-en/stage1+2", "jacsts"),
            row_stat(JM, "minilm-en/stage1+2", "jacsts", "sd"),
            *claim(JM, "minilm-en/stage1+2", "minilm-en/stage1", "jacsts"),
            holm_p(JM, "minilm-en/stage1+2", "minilm-en/stage1", "jacsts"),
        ],
        verdict=(JM, "minilm-en/stage1+2", "minilm-en/stage1", "jacsts"),
    ),
    Row(
        "JCSE stage 1 over SimCSE",
        [
            n_seeds(JE),
            row_stat(JE, "e5-small-m/unsup", "jacsts"),
            row_stat(JE, "e5-small-m/stage1", "jacsts"),
            *claim(JE, "e5-small-m/stage1", "e5-small-m/unsup", "jacsts"),
            holm_p(JE, "e5-small-m/stage1", "e5-small-m/unsup", "jacsts"),
        ],
        verdict=(JE, "e5-small-m/stage1", "e5-small-m/unsup", "jacsts"),
    ),
    Row(
        "AMR retrofitting (main claim)",
        [
            n_seeds(AMR),
            row_stat(AMR, "muse-m/s", "sts17"),
            row_stat(AMR, "muse-m/concat_norm", "sts17"),
            row_stat(AMR, "muse-m/concat_norm", "sts17", "sd"),
            *claim(AMR, "muse-m/concat_norm", "muse-m/s", "sts17"),
        ],
        verdict=(AMR, "muse-m/concat_norm", "muse-m/s", "sts17"),
    ),
    Row(
        "AMR retrofitting",
        [
            row_stat(AMR, "e5-small-m/s", "stsb"),
            row_stat(AMR, "e5-small-m/concat_norm", "stsb"),
            row_stat(AMR, "e5-small-m/concat_norm", "stsb", "sd"),
            *claim(AMR, "e5-small-m/concat_norm", "e5-small-m/s", "stsb")[:3],
            *claim(AMR, "e5-small-m/weighted", "e5-small-m/s", "stsb")[:3],
            *claim(AMR, "e5-small-m/concat_norm", "e5-small-m/s", "stsb")[3:6],
            *claim(AMR, "e5-small-m/weighted", "e5-small-m/s", "stsb")[3:6],
            *claim(AMR, "e5-small-m/concat_norm", "e5-small-m/s", "stsb")[6:],
            holm_p(AMR, "e5-small-m/concat_norm", "e5-small-m/s", "stsb"),
            holm_p(AMR, "e5-small-m/weighted", "e5-small-m/s", "stsb"),
        ],
        verdict=(AMR, "e5-small-m/concat_norm", "e5-small-m/s", "stsb"),
    ),
]
SPEED = [
    Row(
        "int8 ONNX",
        [
            at(INT8_SPEED, "sentences"),
            int8("e5-small-m", "timings", "st onnx-int8", "median_sent_per_s"),
            int8("e5-small-m", "timings", "sentkit int8", "median_sent_per_s"),
            int8("e5-small-m", "median_speed_vs_fastest_anchor", "sentkit int8"),
            int8_stsb_change("e5-small-m"),
        ],
    ),
    Row(
        "int8 ONNX",
        [
            int8("minilm-en", "timings", "st onnx-int8", "median_sent_per_s"),
            int8("minilm-en", "timings", "sentkit int8", "median_sent_per_s"),
            int8("minilm-en", "median_speed_vs_fastest_anchor", "sentkit int8"),
            int8_stsb_change("minilm-en"),
        ],
    ),
    int8_amx_row("e5-small-m"),
    int8_amx_row("minilm-en"),
    Row(
        "int8 ONNX",
        [
            at("make_run_e5_fp32.json", "wall_s"),
            at("make_run_e5_int8.json", "wall_s"),
            calc(
                "make_run_e5_int8.json",
                "fp32 wall_s / int8 wall_s",
                lambda d: load("make_run_e5_fp32.json")["wall_s"] / d["wall_s"],
            ),
            make_run_deltas(max),
            make_run_deltas(min),
        ],
    ),
    Row(
        "fp32 encoding",
        [
            at("encode_speed.json", "sentences"),
            at("encode_speed.json", "results", "sentence-transformers", "median_sent_per_s"),
            at("encode_speed.json", "results", "sentkit", "median_sent_per_s"),
            at("encode_speed.json", "ratio_median"),
        ],
    ),
]


def first_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(header cells, body rows' cells) of the first table in `text` (its lines up to the first other line)."""
    lines = text[text.index("\n|") + 1 :].split("\n")
    lines = lines[: next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return cells[0], cells[2:]


def section_table(text: str, heading: str) -> tuple[list[str], list[list[str]]]:
    """(header cells, body rows' cells) of the first table under the page's heading `heading` ("## ...")."""
    return first_table(text.split(f"\n{heading}\n", 1)[1])


TABLES = {"## Development runs": ROWS, "## Speed": SPEED}  # heading -> its rows, in order


def numbers_of(cells: list[str], header: list[str]) -> list[str]:
    checked = [
        STAGE.sub("stage", c) for i, (c, name) in enumerate(zip(cells, header)) if i and name not in UNCHECKED
    ]
    return [m.group(1) for cell in checked for m in NUMBER.finditer(cell)]


def agrees(printed: str, value: float) -> bool:
    """`printed` is `value` to the digits it shows ("<0.001": any value below 0.001)."""
    if printed.startswith("<"):
        return value < float(printed[1:])
    digits = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed.replace(",", "")) - value) <= 0.5 * 10.0**-digits + 1e-9


def mismatches(cells: list[str], header: list[str], row: Row) -> list[str]:
    printed = numbers_of(cells, header)
    problems = []
    if len(printed) != len(row.numbers):
        problems.append(f"{len(printed)} numbers printed {printed}, {len(row.numbers)} sources listed")
    for text, source in zip(printed, row.numbers):
        value = source()
        if not agrees(text, value):
            problems.append(f"{text} printed, {value!r} in {source.file} ({source.where})")
    if row.verdict:
        cell = cells[header.index("verdict")]
        judged = verdict_row(*row.verdict)
        exploratory = judged["role"] == "exploratory"
        if cell.startswith(EXPLORATORY) != exploratory:
            problems.append(f"{cell!r}: the row is {judged['role']} in verdicts.json")
        verdict = cell.removeprefix(EXPLORATORY).strip("* ").split()[0].strip("*:;")
        expected = judged["holm"]["verdict"] if exploratory else judged["verdict"]
        if verdict != expected:
            problems.append(f"verdict {verdict!r} printed, {expected!r} in verdicts.json")
    return problems


@pytest.mark.parametrize("heading", list(TABLES))
def test_every_number_of_the_development_and_speed_tables_is_in_its_file(heading):
    rows = TABLES[heading]
    header, body = section_table(PAGE.read_text(encoding="utf-8"), heading)
    assert "write-up" in header and ("verdict" in header) == (heading == "## Development runs"), header
    assert [cells[0] for cells in body] == [row.method for row in rows], "a row was added, removed or moved"
    problems = {
        f"{cells[0]} | {cells[1]}": found
        for cells, row in zip(body, rows)
        if (found := mismatches(cells, header, row))
    }
    assert not problems, json.dumps(problems, indent=1)


def test_only_the_pre_registered_claims_are_primary():
    """Every row of a development file but the pre-registered main claim's is exploratory, with a
    Holm-adjusted p at least its own and the family's size; the main claims are the confirmations'."""
    files = load("verdicts.json")["files"]
    primary = {
        f: [(r["method"], r["baseline"], r["task"]) for r in rows if r["role"] == "primary"]
        for f, rows in files.items()
    }
    assert primary["emu.json"] == [MAIN_EMU[1:]] and primary["jcse_minilm.json"] == [JCSE_MAIN[1:]]
    assert primary["confirm/jcse.json"] == [JCSE_MAIN[1:]] and primary["jcse_e5.json"] == []
    for rows in files.values():
        exploratory = [r for r in rows if r["role"] == "exploratory"]
        for r in exploratory:
            assert r["holm"]["family"] == len(exploratory)
            assert r["holm"]["p"] >= r["seed_aware"]["p_value"] - 1e-12


def test_the_suggestive_no_effect_table_is_in_verdicts_json():
    text = PAGE.read_text(encoding="utf-8").split("## Reading the verdicts", 1)[1]
    header, rows = first_table(text)
    table = load("verdicts.json")["suggestive_no_effect"]
    assert [float(NUMBER.search(h).group(1)) for h in header[1:]] == table["ratios"]
    assert [r[0] for r in rows] == list(table["rates"])
    for cells in rows:
        for printed, rate in zip(cells[1:], table["rates"][cells[0]], strict=True):
            assert agrees(printed.rstrip("%"), 100 * rate), (cells[0], printed, rate)


@pytest.mark.parametrize(
    "old,new",
    [
        ("| 17.82 ± 1.39 | +0.92 [+0.59, +1.27]", "| 17.82 ± 1.39 | +0.93 [+0.59, +1.27]"),  # a number edited
        (
            "[-0.96, +4.33] p 0.130 | 3.43 | - | suggestive",
            "[-0.96, +4.33] p 0.130 | 3.43 | - | **reproduced**",
        ),
        ("p 0.016 | 3.83 | 0.081 | exploratory: suggestive", "p 0.016 | 3.83 | 0.081 | **reproduced**"),
        ("| 0.33 | 0.229 |", "| 0.33 | 0.115 |"),  # the uncorrected p where the Holm p belongs
        ("30 steps, 3 seeds | MewsC-16", "30 steps, 5 seeds | MewsC-16"),
        ("1.37x (STS-B -0.005)", "1.37x (STS-B -0.01)"),  # a difference of rounded numbers
    ],
)
def test_an_edited_number_or_verdict_is_caught(old, new):
    text = PAGE.read_text(encoding="utf-8")
    assert old in text
    edited = text.replace(old, new, 1)
    assert any(
        mismatches(cells, header, row)
        for heading, rows in TABLES.items()
        for header, body in [section_table(edited, heading)]
        for cells, row in zip(body, rows)
    )


def test_number_pattern_skips_names_and_reads_signs_ratios_and_thresholds():
    text = (
        "e5-small-m STS17 MewsC-16 1-NN fp32 int8 (100/lang) 1,423 -0.11 [+1.08, +2.24] p <0.001 1.51x 5.12"
    )
    assert [m.group(1) for m in NUMBER.finditer(text)] == [
        "100",
        "1,423",
        "-0.11",
        "+1.08",
        "+2.24",
        "<0.001",
        "1.51",
        "5.12",
    ]


def test_verdicts_json_is_what_rejudge_docs_computes(monkeypatch, tmp_path):
    """docs/results/verdicts.json and the tables' "Against the baseline" sections are generated
    (examples/rejudge_docs.py), never edited by hand: regenerating them from the results files changes
    nothing."""
    import shutil

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import rejudge_docs

    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy, ignore=shutil.ignore_patterns("*.png"))
    rejudge_docs.main(["--results", str(copy)])
    assert json.loads((copy / "verdicts.json").read_text(encoding="utf-8")) == load("verdicts.json")
    tables = [RESULTS / "tables" / f"{Path(name).stem}.md" for name in rejudge_docs.FILES]
    tables += [(RESULTS / name).with_suffix(".md") for name in rejudge_docs.CONFIRM]
    assert set(tables) >= set((RESULTS / "tables").glob("*.md"))
    for table in tables:
        assert (copy / table.relative_to(RESULTS)).read_text(encoding="utf-8") == table.read_text(
            encoding="utf-8"
        )


# ---- the pre-registered confirmations' table ---------------------------------------------------------------
def reviews(task: dict, items) -> int:
    return task["sentences"]  # each review is a query once, whatever the pairs


def clustered(task: dict, items) -> int:
    return sum(len(v) for v in items.values())  # one row per sentence, per language


def held_out(folder: str, a: str, b: str, task: str, effect: float, count) -> tuple[list[float], str]:
    """(items, seeds, B - A, CI low, CI high, p, detectable; the verdict) from the comparison that
    `sentkit compare` recomputes from the committed per-model results files (equal to the stored one)."""
    import numpy as np

    from sentkit.compare import compare_seeds
    from sentkit.stats.seeds import verdict

    root = RESULTS / "confirm" / folder
    fresh = compare_seeds([root / a], [root / b])
    stored = json.loads((root / "compare.json").read_text(encoding="utf-8"))
    record = stored["tasks"][task]["scores"]["main_score"]
    assert fresh["tasks"][task]["scores"]["main_score"]["ci"] == record["ci"]
    first = sorted((root / b).glob("*.json"))[0]
    record_b = json.loads(first.read_text(encoding="utf-8"))["tasks"][task]
    items = count(record_b, np.load(first.with_suffix(".items.npz")))
    numbers = [
        items,
        record["seeds"],
        record["delta"],
        *record["ci"],
        record["p_value"],
        record["detectable"],
    ]
    return numbers, verdict(record, +1, effect)["verdict"]


def example_claim(file: str, method: str, baseline: str, task: str) -> tuple[list[float], str]:
    """(seeds, B - A, CI low, CI high, p, detectable; the verdict) of a claim in an example's results file,
    which computed them from the per-item values of its own evaluations."""
    data = load(f"confirm/{file}")
    claim = next(c for c in data["summary"]["claims"] if (c["method"], c["baseline"]) == (method, baseline))
    record = claim["tasks"][task]
    seeds = record["seed_aware"]
    numbers = [
        len(data["seeds"]),
        record["pooled"]["delta"],
        *seeds["ci"],
        seeds["p_value"],
        seeds["detectable"],
    ]
    return numbers, record["verdict"]


CONFIRMATIONS = {  # the first word of a row -> its numbers, in reading order, and its verdict
    "Emu": lambda: held_out(
        "emu_holdout", "emu-no-ld", "emu", "knn-marc-category-body-holdout", 1.05, reviews
    ),
    "EASE": lambda: held_out("ease_holdout", "simcse-unsup", "ease", "mewsc16-holdout", 1.9, clustered),
    "JCSE": lambda: example_claim("jcse.json", "minilm-en/stage1", "minilm-en/unsup", "jacsts"),
    "AMR": lambda: example_claim("amr.json", "muse-m/concat_norm", "muse-m/s", "sts17"),
}


def test_every_number_of_the_confirmations_table_is_in_its_file():
    header, rows = first_table(
        PAGE.read_text(encoding="utf-8").split("\n## Pre-registered confirmations\n")[1]
    )
    assert [r[0].split(":")[0].split()[0] for r in rows] == list(CONFIRMATIONS)
    for cells in rows:
        values, expected = CONFIRMATIONS[cells[0].split(":")[0].split()[0]]()
        checked = [c for c, name in zip(cells, header) if name not in ("confirmation", "paper", "ran on")]
        printed = [m.group(1) for cell in checked for m in NUMBER.finditer(cell)]
        assert len(printed) == len(values), (cells[0], printed)
        for text, value in zip(printed, values):
            assert agrees(text, value), (cells[0], text, value)
        assert cells[header.index("verdict")].strip("* ").split()[0].strip("*:;") == expected


TEN_SEEDS = {  # the first word of a row -> (stored comparison, folder pairs, baseline, method, task, effect)
    "Emu": (
        "emu_ten_seeds.json",
        ("emu_holdout", "emu_holdout_50_54"),
        "emu-no-ld",
        "emu",
        "knn-marc-category-body-holdout",
        1.05,
    ),
    "EASE": (
        "ease_ten_seeds.json",
        ("ease_holdout", "ease_holdout_50_54"),
        "simcse-unsup",
        "ease",
        "mewsc16-holdout",
        1.9,
    ),
}


def test_the_ten_seed_table_is_the_comparison_of_both_seed_sets():
    """Seeds 45-49 and 50-54 pooled: recomputed from the per-model files of both folders, equal to the
    stored comparison, and every number and verdict of the page's ten-seed table taken from it."""
    from sentkit.compare import compare_seeds
    from sentkit.stats.seeds import verdict

    header, rows = section_table(
        PAGE.read_text(encoding="utf-8"), "## Ten seeds: an extension added after the confirmations"
    )
    assert [r[0].split(":")[0].split()[0] for r in rows] == list(TEN_SEEDS)
    for cells in rows:
        stored, folders, a, b, task, effect = TEN_SEEDS[cells[0].split(":")[0].split()[0]]
        roots = [RESULTS / "confirm" / f for f in folders]
        fresh = compare_seeds([r / a for r in roots], [r / b for r in roots])
        record = load(f"confirm/{stored}")["tasks"][task]["scores"]["main_score"]
        # equal up to float rounding: numpy's sums round differently with the CPU's vector width
        assert fresh["tasks"][task]["scores"]["main_score"]["ci"] == pytest.approx(
            record["ci"], rel=1e-9, abs=1e-12
        )
        assert record["seeds"] == 10 and len(set(p["seed"] for p in fresh["pairs"])) == 10
        judged = load("verdicts.json")["ten_seeds"][cells[0].split(":")[0].split()[0].lower()]
        assert judged["file"] == f"confirm/{stored}" and judged["seed_aware"]["ci"] == record["ci"]
        values = [
            record["seeds"],
            record["delta"],
            *record["ci"],
            record["p_value"],
            record["detectable"],
            judged["holm"]["p"],
        ]
        checked = [c for c, name in zip(cells, header) if name not in (header[0], "ran on")]
        printed = [m.group(1) for cell in checked for m in NUMBER.finditer(cell)]
        assert len(printed) == len(values), (cells[0], printed)
        for text, value in zip(printed, values):
            assert agrees(text, value), (cells[0], text, value)
        assert verdict(record, +1, effect)["verdict"] == judged["verdict"]
        cell = cells[header.index("verdict")]
        assert cell.startswith(EXPLORATORY), cell  # added after the pre-registered runs
        assert (
            cell.removeprefix(EXPLORATORY).strip("* ").split()[0].strip("*:;,") == judged["holm"]["verdict"]
        )


# ---- held-out items that repeat development text -----------------------------------------------------------
def test_the_overlap_counts_and_sensitivity_table_are_overlap_json():
    page = PAGE.read_text(encoding="utf-8")
    overlap = load("confirm/overlap.json")
    mewsc, marc = overlap["mewsc16_holdout_in_mewsc16_100"], overlap["marc_holdout_in_emu_dev_sets"]
    sampled = overlap["marc_holdout_in_emu_training_rows"]
    assert f"**MewsC-16**: {mewsc['total']} of the {mewsc['of']:,} held-out" in page
    assert f"{mewsc['per_language']['ca']} of them Catalan" in page
    assert f"**MARC**: {marc['total']} of the {marc['of']:,} held-out reviews" in page
    assert (
        f"{sampled['total']} of them (Chinese)" in page and sampled["total"] == sampled["per_language"]["zh"]
    )
    header, rows = first_table(page.split("### Held-out items that repeat development text", 1)[1])
    assert [(r[0], r[1]) for r in rows] == [("Emu", "5"), ("Emu", "10"), ("EASE", "5"), ("EASE", "10")]
    for cells in rows:
        seeds = "five seeds (45-49)" if cells[1] == "5" else "ten seeds (45-54)"
        entry = overlap["sensitivity"][cells[0].lower()][seeds]
        kept = entry["without the overlap"]
        assert kept["items"] == entry["all items"]["items"] - (marc if cells[0] == "Emu" else mewsc)["total"]
        values = [len(entry["seeds"]), kept["items"], kept["delta"], *kept["ci"], kept["p_value"]]
        printed = [m.group(1) for cell in cells[1:-1] for m in NUMBER.finditer(cell)]
        assert len(printed) == len(values) + 1, (cells, printed)  # + detectable
        for text, value in zip(printed, [*values, kept["detectable"]]):
            assert agrees(text, value), (cells, text, value)
        assert cells[-1].strip("* ") == kept["verdict"]
        # with every item, the comparison is the pre-registered one the tables above print
        stored = load(
            f"confirm/{cells[0].lower()}_{'holdout/compare' if cells[1] == '5' else 'ten_seeds'}.json"
        )
        record = next(iter(stored["tasks"].values()))["scores"]["main_score"]
        assert entry["all items"]["ci"] == pytest.approx(record["ci"], rel=1e-9, abs=1e-12)


def test_overlap_json_is_what_holdout_overlap_computes(data_root, monkeypatch, tmp_path):
    """The overlap is counted on the real files, and the comparisons without it recomputed from the
    committed per-item values: the same record as docs/results/confirm/overlap.json."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    monkeypatch.chdir(ROOT)
    import holdout_overlap

    out = tmp_path / "overlap.json"
    holdout_overlap.main(["--results", "docs/results", "--out", str(out), "--data-root", str(data_root)])
    fresh, stored = json.loads(out.read_text(encoding="utf-8")), load("confirm/overlap.json")
    for key in (
        "mewsc16_holdout_in_mewsc16_100",
        "marc_holdout_in_emu_dev_sets",
        "marc_holdout_in_emu_training_rows",
    ):
        assert fresh[key] == stored[key]
    for name, seeds in stored["sensitivity"].items():
        for label, entry in seeds.items():
            for part in ("all items", "without the overlap"):
                got, want = fresh["sensitivity"][name][label][part], entry[part]
                assert got["items"] == want["items"] and got["verdict"] == want["verdict"]
                assert got["ci"] == pytest.approx(want["ci"], rel=1e-9, abs=1e-12)


def rejudge_docs():
    """examples/rejudge_docs.py as a module (it imports examples/seeds.py beside it)."""
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        return importlib.import_module("rejudge_docs")
    finally:
        sys.path.remove(str(ROOT / "examples"))


def per_item_folders() -> dict[str, str]:
    """A results file -> the results.json of its per-item folder (rejudge_docs.ITEMS)."""
    return rejudge_docs().ITEMS


def test_every_confirmation_recomputes_from_the_repository():
    """Emu's and EASE's held-out runs keep every per-item sidecar beside their results; JCSE's and AMR's
    files have a per-item folder whose run scored every model, seed and task as the file records, and
    every evaluation it names is there with its per-item values."""
    for folder in ("emu_holdout", "ease_holdout", "emu_holdout_50_54", "ease_holdout_50_54"):
        files = sorted((RESULTS / "confirm" / folder).glob("*/*.json"))
        assert len(files) == 10 and all(f.with_suffix(".items.npz").is_file() for f in files)
    items = per_item_folders()
    # the kernels each rerun ran (capped to the recorded AVX2 host's, or the AVX-512 ones of the host
    # the development run used: docs/seeds.md)
    kernels = {
        "confirm/jcse.json": "AVX2",
        "confirm/amr.json": "AVX2",
        "jcse_minilm.json": "AVX512",
        "amr_retrofit.json": "AVX512",
        "jcse_e5_lr1e-5.json": "AVX512",
    }
    assert set(items) == set(kernels)
    for name in kernels:
        rerun = RESULTS / items[name]
        data = json.loads(rerun.read_text(encoding="utf-8"))
        assert set(data["scored"]) == set(load(name)["scored"]) and data["seeds"] == load(name)["seeds"]
        for rows in data["scored"].values():
            for entry in rows.values():
                evaluation = rerun.parent / entry["results"]
                record = json.loads(evaluation.read_text(encoding="utf-8"))
                assert record["machine"]["torch_cpu_capability"] == kernels[name], evaluation
                sidecar = evaluation.parent / record["items_file"]["path"]
                assert hashlib.sha256(sidecar.read_bytes()).hexdigest() == record["items_file"]["sha256"]
    assert "cannot be recomputed" not in PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["confirm/jcse.json", "confirm/amr.json"])
def test_a_confirmations_per_item_folder_recomputes_every_claim_it_records(name):
    """The example's seed-aware records, computed from the per-item values it had when it ran, are what
    the committed per-item values give again: every claim and task, the primary one included."""
    module = rejudge_docs()  # its `rejudge` is examples/seeds.py's
    rerun = RESULTS / module.ITEMS[name]
    module.same_scores(RESULTS / name, rerun)
    fresh = {(r["method"], r["baseline"], r["task"]): r for r in module.rejudge(rerun)}
    claims = load(name)["summary"]["claims"]
    assert len(fresh) == sum(len(c["tasks"]) for c in claims) > 0
    for claim in claims:
        for task, row in claim["tasks"].items():
            got = fresh[(claim["method"], claim["baseline"], task)]
            assert got["source"] == "items" and got["verdict"] == row["verdict"]
            for part in ("pooled", "seed_aware"):
                for key in ("delta", "ci", "p_value", "detectable", "deltas"):
                    if key in row[part]:
                        assert got[part][key] == pytest.approx(row[part][key], rel=1e-9, abs=1e-12), (
                            task,
                            key,
                        )


def test_the_approximations_distance_from_the_per_item_values_is_what_verdicts_json_measures():
    """The development-run paragraph's bound on the summary approximation: the largest gaps over every
    file that has per-item values (rounded up to the digits printed), and no verdict differs."""
    import math

    check = load("verdicts.json")["approximation_check"]
    gap = check["largest_gap"]
    assert set(check["files"]) == set(per_item_folders()) and check["verdicts_differ"] == []

    def up(value: float, digits: int) -> str:
        return f"{math.ceil(value * 10**digits) / 10**digits:.{digits}f}"

    text = (
        f"On the {check['rows']} rows of the five runs that have both, the approximation's seed-aware CI ends "
        f"lie within {up(gap['ci_end'], 2)} points of the per-item ones, its p-values within "
        f"{up(gap['p_value'], 3)} and its detectable differences within {up(100 * gap['detectable_relative'], 1)}%, "
        "and no verdict differs"
    )
    assert len(check["files"]) == 5 and text in " ".join(PAGE.read_text(encoding="utf-8").split())


def test_the_lab_note_on_the_gpu_runs_quotes_their_files():
    """Why the GPU development runs keep the approximation: their environment, and the start model's score
    there against the CPU's, as the files record them."""
    note = " ".join((ROOT / "docs" / "lab" / "evaluation.md").read_text(encoding="utf-8").split())
    for name in ("emu.json", "ease.json", "jcse_e5.json"):
        data = load(name)
        assert data["machine"]["cuda"] == "NVIDIA H200" and f"`{name}`" in note
        assert (data["versions"]["torch"], data["versions"]["transformers"]) == ("2.11.0", "5.17.0")
    gpu, cpu = (
        load(name)["scored"]["once"]["e5-small-m/direct"]["scores"]
        for name in ("jcse_e5.json", "jcse_e5_lr1e-5.json")
    )
    assert load("jcse_e5_lr1e-5.json")["machine"]["cuda"] is None
    assert gpu["qabot"]["main_score"] == cpu["qabot"]["main_score"]
    assert (
        f"e5-small-m scores JAC-STS {gpu['jacsts']['main_score']!r} in `jcse_e5.json` and "
        f"{cpu['jacsts']['main_score']!r} in `jcse_e5_lr1e-5.json` (CPU), QAbot {gpu['qabot']['main_score']!r} in both"
    ) in note


def test_a_per_item_folder_that_scored_differently_is_refused(tmp_path):
    same_scores = rejudge_docs().same_scores
    rerun = json.loads((RESULTS / per_item_folders()["confirm/jcse.json"]).read_text(encoding="utf-8"))
    score = rerun["scored"]["47"]["minilm-en/stage1"]["scores"]["jacsts"]
    score["main_score"] += 1e-9  # a last digit
    edited = tmp_path / "results.json"
    edited.write_text(json.dumps(rerun), encoding="utf-8")
    with pytest.raises(SystemExit, match="minilm-en/stage1 at seed 47 does not score what"):
        same_scores(RESULTS / "confirm/jcse.json", edited)


def test_an_exploratory_row_is_judged_at_its_holm_p(monkeypatch):
    """A reproduced row whose Holm p reaches alpha falls back to the items' CI (suggestive) or, without it,
    to inconclusive; one still below alpha stays reproduced (or opposite on the other side)."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from rejudge_docs import holm_verdict

    row = {
        "pooled": {"ci": [0.2, 1.8], "deltas": [0.9, 1.1, 1.0]},
        "seed_aware": {"ci": [0.1, 1.9], "p_value": 0.02, "detectable": 1.3},
        "direction": 1,
        "effect": None,
    }
    assert holm_verdict(row, 0.04)["verdict"] == "reproduced"
    assert holm_verdict(row, 0.08) == {
        "verdict": "suggestive",
        "why": "only the item-level CI excludes 0; Holm p 0.080",
    }
    assert (
        holm_verdict({**row, "pooled": {**row["pooled"], "ci": [-0.1, 1.8]}}, 0.08)["verdict"]
        == "inconclusive"
    )
    assert holm_verdict({**row, "direction": -1}, 0.04)["verdict"] == "opposite"
    assert holm_verdict({**row, "direction": -1}, 0.06)["verdict"] == "inconclusive"


def test_the_qabot_sentence_is_the_exploratory_row_of_jcse_confirmation():
    row = verdict_row("confirm/jcse.json", "minilm-en/stage1", "minilm-en/unsup", "qabot")
    seeds, holm = row["seed_aware"], row["holm"]
    text = (
        f"gives {row['pooled']['delta']:+.2f} [{seeds['ci'][0]:+.2f}, {seeds['ci'][1]:+.2f}] "
        f"(p {seeds['p_value']:.3f}): Holm p {holm['p']:.3f} over its file's {holm['family']} exploratory rows, "
        f"so\n*exploratory: {holm['verdict']}* (at its spread, suggestive fires "
        f"{100 * row['suggestive_no_effect_rate']['rate']:.0f}% of the time with no effect)"
    )
    assert text in PAGE.read_text(encoding="utf-8")


KNN_BODY = "knn-marc-category-body-holdout"


def held_out_sides(folder: str, a: str, b: str, task: str) -> tuple[list[Path], list[Path], dict]:
    """A held-out confirmation's two model folders and the comparison its compare.json stores."""
    root = Path("docs/results/confirm") / folder
    return (
        [root / a],
        [root / b],
        load(f"confirm/{folder}/compare.json")["tasks"][task]["scores"]["main_score"],
    )


def per_item_sides(name: str, a: str, b: str, task: str) -> tuple[list[Path], list[Path], dict]:
    """An example's per-item folder, one evaluation folder per seed and side (a row scored once is the
    untrained start of every pair), and the main claim's record in the example's results file."""
    evals = Path("docs/results") / Path(per_item_folders()[name]).parent / "evals"
    a_side, b_side = (sorted({evals / side.format(s) for s in load(name)["seeds"]}) for side in (a, b))
    row = next(c for c in load(name)["summary"]["claims"] if "(main claim)" in c["says"])["tasks"][task]
    record = {**row["pooled"], **{k: row["seed_aware"][k] for k in ("ci", "p_value", "detectable")}}
    return a_side, b_side, record


@pytest.mark.parametrize(
    "sides,task",
    [
        (lambda: held_out_sides("emu_holdout", "emu-no-ld", "emu", KNN_BODY), KNN_BODY),
        (
            lambda: held_out_sides("ease_holdout", "simcse-unsup", "ease", "mewsc16-holdout"),
            "mewsc16-holdout",
        ),
        (
            lambda: per_item_sides(
                "confirm/jcse.json", "seed{}/minilm-en_unsup", "seed{}/minilm-en_stage1", "jacsts"
            ),
            "jacsts",
        ),
        (
            lambda: per_item_sides("confirm/amr.json", "once/muse-m_s", "seed{}/muse-m_concat_norm", "sts17"),
            "sts17",
        ),
    ],
    ids=["emu", "ease", "jcse", "amr"],
)
def test_sentkit_compare_recomputes_each_confirmation_from_the_repository(sides, task, tmp_path, monkeypatch):
    """The page's commands, as a user runs them from a clone: the comparison is the stored one."""
    from sentkit.cli import main

    monkeypatch.chdir(ROOT)
    a, b, stored = sides()
    out = tmp_path / "compare.json"
    assert main(["compare", "--a", *map(str, a), "--b", *map(str, b), "--out", str(out)]) == 0
    fresh = json.loads(out.read_text(encoding="utf-8"))["tasks"][task]["scores"]["main_score"]
    assert fresh["seeds"] == 5
    for key in ("delta", "ci", "p_value", "detectable", "deltas"):
        assert fresh[key] == pytest.approx(stored[key], rel=1e-9, abs=1e-12), key
