"""examples/amr_retrofit.py: the paper's cells are the ones its text prints, they land beside the right rows,
and the seeded run (tiny models, a stub parser) records every row per seed with paired comparisons that
match `sentkit compare`; a second run trains nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def examples(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import amr_paper
    import amr_retrofit

    return amr_paper, amr_retrofit


def read_table(text: str, number: int) -> dict[tuple[str, str], float]:
    """(row, column) -> value of Table `number` in the paper's extraction; a variant row is "<model> #k",
    a "seen/all" cell gives "<column> seen" and "<column> all"."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(f"Table {number}:"))
    start = max(i for i in range(end) if lines[i].startswith("Model #"))
    header = [word for word in lines[start].split()[2:] if not word.startswith("(")]
    cells, model = {}, ""
    for line in lines[start + 1 : end]:
        words = line.split()
        if words[0] == "seen/all":
            continue
        if not words[0][0].isdigit():
            model, words = words[0], words[1:]
        row = model
        if re.fullmatch(r"[1-5]", words[0]):
            row, words = f"{model} #{words[0]}", words[1:]
        values = [word for word in words if not word.startswith("(")]  # the Delta column
        assert len(values) == len(header), f"Table {number}, {row}: {values} against {header}"
        for column, value in zip(header, values):
            if "/" in value:
                seen, every = value.split("/")
                cells[(row, f"{column} seen")], cells[(row, f"{column} all")] = float(seen), float(every)
            else:
                cells[(row, column)] = float(value)
    return cells


def test_paper_cells_are_what_the_paper_prints(examples, data_root):
    amr_paper, _ = examples
    paper = data_root.parent / "papers" / "mse-amr.txt"
    if not paper.is_file():
        pytest.skip(f"the paper's text is not at {paper}")
    text = paper.read_text(encoding="utf-8")
    tables = {n: read_table(text, n) for n in range(2, 10)}
    for cell in amr_paper.PAPER_CELLS:
        printed = tables[int(cell.table.split()[1])][(cell.row, cell.column)]
        assert cell.value == printed, cell
    # the extraction kept whole rows: mUSE and mUSE++ #5's averages are the mean of their three pairs
    for row in ("mUSE", "mUSE++ #5"):
        pairs = [tables[2][(row, column)] for column in ("EN-EN", "ES-ES", "AR-AR")]
        assert sum(pairs) / 3 == pytest.approx(tables[2][(row, "Avg.")], abs=0.01)
    assert (
        amr_paper.retrofit_claim_text("sts17", "muse-m")
        == "Table 2, EN-EN: mUSE 86.39 -> mUSE++ #5 88.74 (+2.35)"
    )
    assert amr_paper.retrofit_claim_text("stsb", "muse-m").startswith("not in the paper")
    assert "no mUSE++ row" in amr_paper.retrofit_claim_text("xnli", "muse-m")
    assert amr_paper.paper_value("muse-m", False, "marc", "ja(dev)").value == 42.02
    assert amr_paper.paper_value("e5-small-m", True, "sts17", "en-en") is None


def test_beside_the_paper_puts_each_cell_by_its_row(examples):
    amr_paper, amr_retrofit = examples

    def scores(**per_seed):
        return {
            "seeds": {k: {"main_score": v, "all": {"main_score": v, "en-en": v}} for k, v in per_seed.items()}
        }

    data = {
        "summary": {
            "rows": {
                "muse-m/s": {"sts17": scores(once=85.0)},
                "muse-m/concat_norm": {"sts17": scores(**{"42": 86.0, "43": 87.0})},
            }
        },
        "scored": {},
        "extra": {"paper": amr_paper.paper_record()},
    }
    (line,) = amr_retrofit.beside_ours(data, ["muse-m"])
    assert (line["s"], line["concat_norm"], line["concat_norm_n"], line["weighted"]) == (85.0, 86.5, 2, None)
    assert line["paper_text_only"] == {"table": "Table 2", "row": "mUSE", "column": "EN-EN", "value": 86.39}
    assert line["paper_retrofitted"]["value"] == 88.74
    rows = {r.key: r for r in amr_retrofit.declare(["muse-m"], "minilm-en")[0]}
    table = amr_retrofit.beside_markdown(data, ["muse-m"], rows)
    assert "| sts17 | en-en | 85.00 | 86.39 (Table 2) | 86.50 | +1.50 | 88.74 (Table 2) | - | - |" in table


@pytest.mark.slow  # STS-B dev, STS17 en-en and a 30-row QAM sample with tiny models over two seeds: ~1 min
def test_amr_example_seeds_paired_rows_and_resume(tmp_path, data_root, monkeypatch, examples):
    penman = pytest.importorskip("penman")
    _, amr_retrofit = examples
    from seeds import INCONCLUSIVE

    from conftest import make_tiny_encoder
    from sentkit.amr import parse as parse_module
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.compare import compare_runs
    from sentkit.encoders.retrofit import RetrofitEncoder
    from sentkit.tasks import get_task

    class StubParser:  # the word count as a graph: fast, and not the text's own tokens
        def __init__(self, lang="en"):
            pass

        def __call__(self, sentences):
            return [penman.decode(f"(s / say-01 :ARG1 (x / w{len(s.split())}))") for s in sentences]

    monkeypatch.setitem(parse_module.PARSERS, "stub", StubParser)
    parse_module.get_parser.cache_clear()
    text_dir = make_tiny_encoder("mean").save(tmp_path / "text")
    amr_dirs = {  # one AMR encoder per seed, as training would give
        seed: AmrEncoder(make_tiny_encoder("mean", seed=seed), parser="stub").save(tmp_path / f"amr{seed}")
        for seed in (1, 2)
    }

    def trained(args, out, seed):
        return AmrEncoder.from_pretrained(amr_dirs[seed]), {
            "amr_model": str(amr_dirs[seed]),
            "trained": False,
        }

    monkeypatch.setattr(amr_retrofit, "train_or_load_amr", trained)
    out = tmp_path / "out"
    # the control is the text model itself: s/|s| concat s/|s| ranks pairs as s does, a known zero difference
    argv = ["--text-models", str(text_dir), "--control-model", str(text_dir), "--seeds", "1,2"]
    argv += ["--tasks", "sts17,qam", "--max-per-lang", "30", "--max-train", "60", "--weights", "0,0.5,1,2"]
    argv += ["--out", str(out), "--data-root", str(data_root)]
    results = amr_retrofit.main(argv)

    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert written["seeds"] == [1, 2] and set(written["scored"]) == {"once", "1", "2"}
    assert set(written["scored"]["once"]) == {"text/s", "text/control"}
    seeded = {"h", "text/concat_norm", "text/weighted", "text/sum", "text/concat", "text/sum_norm"}
    for seed in ("1", "2"):
        assert set(written["scored"][seed]) == seeded
        entries = written["scored"][seed]
        assert (
            set(entries["text/concat_norm"]["scores"])
            == set(entries["text/weighted"]["scores"])
            == {"sts17", "qam"}
        )
        assert set(entries["text/sum"]["scores"]) == {"sts17"}  # the ablation: STS only
        dev = entries["text/weighted"]["train"]["dev_weight"]
        assert dev["task"] == "stsb-dev" and set(dev["curve"]) == {"0", "0.5", "1", "2"}
        assert dev["curve"][f"{dev['weight']:g}"] == max(dev["curve"].values())
        assert dev["combine"] == f"concat_norm_w{dev['weight']:g}"
        # the recorded score is what this seed's AMR encoder gives beside the text model
        task = get_task("sts17", langs=["en-en"], data_root=data_root)
        amr = AmrEncoder.from_pretrained(amr_dirs[int(seed)])
        expected = task.evaluate(RetrofitEncoder(make_tiny_encoder("mean"), amr, "concat_norm"))["main_score"]
        assert entries["text/concat_norm"]["scores"]["sts17"]["main_score"] == pytest.approx(
            expected, abs=1e-4
        )
    parse_module.get_parser.cache_clear()

    claims = {(c["method"], c["baseline"]): c for c in results["summary"]["claims"]}
    main = claims[("text/concat_norm", "text/s")]
    base = out / written["scored"]["once"]["text/s"]["results"]
    for seed in ("1", "2"):  # per seed: sentkit compare on the two results files
        cmp = compare_runs(base, out / written["scored"][seed]["text/concat_norm"]["results"])
        for task in ("sts17", "qam"):
            score = cmp["tasks"][task]["scores"]["main_score"]
            assert main["tasks"][task]["per_seed"][seed] == {k: score[k] for k in ("delta", "ci", "p_value")}
    assert main["tasks"]["sts17"]["paper"].endswith("Table 2, EN-EN: mUSE 86.39 -> mUSE++ #5 88.74 (+2.35)")
    assert "Table 9, EN: mUSE 58.01 (no mUSE++ row)" in main["tasks"]["qam"]["paper"]
    control = claims[("text/control", "text/s")]["tasks"]["sts17"]
    assert abs(control["pooled"]["delta"]) < 1e-3 and control["verdict"] == INCONCLUSIVE
    assert all(abs(d["delta"]) < 1e-3 for d in control["per_seed"].values())

    assert [c["row"] for c in written["extra"]["paper"]["cells"]][:2] == ["mUSE", "mUSE++ #5"]
    beside = {(x["task"], x["key"]): x for x in written["extra"]["paper_beside_ours"]}
    assert set(beside) == {("sts17", "en-en"), ("qam", "en")}
    sts = beside[("sts17", "en-en")]
    means = [written["scored"][k]["text/concat_norm"]["scores"]["sts17"]["main_score"] for k in ("1", "2")]
    assert sts["concat_norm"] == pytest.approx(sum(means) / 2) and sts["concat_norm_n"] == 2
    assert sts["paper_text_only"] is None  # the tiny model is not a row of the paper
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "## Beside the paper" in table and "### text (not in the paper)" in table

    def no_training(*args, **kwargs):
        raise AssertionError("a second run must not train: every seed is complete")

    monkeypatch.setattr(amr_retrofit, "train_or_load_amr", no_training)
    again = amr_retrofit.main(argv)
    assert again["scored"] == written["scored"]
