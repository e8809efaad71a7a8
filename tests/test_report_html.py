"""The HTML report: built from real evaluation runs (a fast trigram encoder on real data), a training run
directory and an MTEB result file; checked as HTML, then loaded in a real headless browser (chromium)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.evaluate import evaluate
from sentkit.report import write_report
from sentkit.tasks import get_task

LANGS = ["en", "de", "es"]  # STS17 pairs among these, Tatoeba deu/spa, the kNN file's de/en


@pytest.fixture(scope="module")
def report_inputs(data_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    knn = get_task("knn-marc", langs=["de", "en"], data_root=data_root)
    knn.max_per_lang = 40
    knn.load()
    knn_file = tmp / "reviews.tsv"
    knn_file.write_text(
        "text\tlabel\tlang\n"
        + "".join(f"{t}\t{y}\t{lang}\n" for lang, d in knn.data.items() for t, y in zip(d.texts, d.labels)),
        encoding="utf-8",
    )
    tasks = f"stsb,sts17,alignment-uniformity,tatoeba,knn:{knn_file}"
    paths = []
    for dim in (64, 256):
        run = evaluate(
            NgramEncoder(dim=dim, name=f"trigram-{dim}"),
            tasks,
            langs=LANGS,
            out=tmp / "results",
            data_root=data_root,
            show_progress=False,
        )
        paths.append(run["path"])
    run_dir = tmp / "runs" / "simcse-demo"
    for step in (10, 20):  # only the newest checkpoint's trainer_state is read (it holds the whole history)
        history = [
            {"step": s, "loss": 2.0 / s**0.3, "loss_contrastive": 1.5 / s**0.3, "loss_mlm": 0.5 / s**0.3}
            for s in range(2, step + 1, 2)
        ]
        (run_dir / f"checkpoint-{step}").mkdir(parents=True)
        (run_dir / f"checkpoint-{step}" / "trainer_state.json").write_text(
            json.dumps({"global_step": step, "log_history": history})
        )
    rows = [
        {
            "step": s,
            "epoch": s / 20,
            "main_score": 80 + s / 10,
            "en": 80 + s / 10,
            "best": True,
            "eval_s": 1.0,
        }
        for s in (0, 5, 10, 15, 20)
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    mteb_dir = tmp / "mteb" / "intfloat__multilingual-e5-small" / "fd1525a9fd15316a2d503bf26ab031a61d056e98"
    mteb_dir.mkdir(parents=True)
    (mteb_dir / "model_meta.json").write_text(json.dumps({"name": "intfloat/multilingual-e5-small"}))
    (mteb_dir / "STSBenchmark.json").write_text(
        json.dumps(  # the published score quoted in RESOURCES.md, in MTEB 2's TaskResult layout
            {
                "dataset_revision": "b0fddb56ed78048fa8b90373c8a3cfc37b684831",
                "task_name": "STSBenchmark",
                "mteb_version": "2.26.24",
                "scores": {
                    "test": [{"main_score": 0.8359, "hf_subset": "default", "languages": ["eng-Latn"]}]
                },
                "evaluation_time": 10.0,
            }
        )
    )
    return {"results": paths, "run_dir": run_dir, "mteb": tmp / "mteb", "knn_file": knn_file, "tmp": tmp}


@pytest.fixture(scope="module")
def report(report_inputs):
    out = report_inputs["tmp"] / "report"
    written = write_report([*report_inputs["results"], report_inputs["run_dir"], report_inputs["mteb"]], out)
    return written, written["html"].read_text(encoding="utf-8")


def _figures(page: str, kind: str) -> list[str]:
    return re.findall(rf'<figure class="fig" data-kind="{kind}">(.*?)</figure>', page, flags=re.S)


def test_report_sections_and_links(report, report_inputs):
    written, page = report
    assert "[report.html](report.html)" in written["markdown"].read_text()
    summary = page.split('<section id="heatmaps">')[0]
    for label in ("trigram-64", "trigram-256", "intfloat/multilingual-e5-small (MTEB)"):
        assert f"<th>{label}" in summary
    assert ">83.59</a>" in summary  # MTEB's 0.8359 as percent, in the stsb column
    heatmaps = _figures(page, "heatmap")
    titles = [re.search(r'aria-label="([^"]+)"', f).group(1) for f in heatmaps]
    assert "sts17: score per language / pair" in titles
    assert "tatoeba: score per language / pair" in titles
    sts17 = heatmaps[titles.index("sts17: score per language / pair")]
    assert [c in sts17 for c in (">en-en<", ">es-es<", ">en-de<", ">en-es<", ">ar-ar<")] == [True] * 4 + [
        False
    ]
    knn = _figures(page, "knn-matrix")
    assert len(knn) == 2 and all("rows: query language" in f for f in knn)
    assert all(f.count("<rect") == 4 for f in knn)  # de/en x de/en
    assert len(_figures(page, "scatter")) == 1 and "alignment (lower is better)" in page
    curves = _figures(page, "curve")
    assert len(curves) == 2 and "loss_contrastive" in curves[1] and "loss_mlm" in curves[1]
    assert curves[1].count("<circle") == 3 * 10  # 10 logging steps from checkpoint-20, not checkpoint-10's 5
    # every score links to a provenance row that exists; the user file's hash is shown there
    targets = re.findall(r'href="#([^"]+)"', page)
    assert len(targets) >= 2 * 5 + 1
    assert all(f'id="{t}"' in page for t in targets)
    assert hashlib.sha256(report_inputs["knn_file"].read_bytes()).hexdigest() in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # self-contained


def _chromium() -> str | None:
    return next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )


def _browser(binary: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chrome-profile'}",
        "--virtual-time-budget=3000",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120, check=True)


def test_report_renders_in_headless_chromium(report, tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium not installed (CI: apt-get update && apt-get install -y chromium)")
    written, page = report
    url = written["html"].resolve().as_uri()
    dom = _browser(binary, tmp_path, "--dump-dom", url).stdout
    n = len(re.findall(r'<figure class="fig"', page))
    assert n >= 7
    # the page's load handler marks each figure whose SVG got a non-empty layout box
    assert f'data-figures="{n}/{n}"' in dom
    assert dom.count('data-rendered="yes"') == n
    shot = tmp_path / "report.png"
    _browser(binary, tmp_path, f"--screenshot={shot}", "--window-size=1400,2400", url)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]  # (h, w, 3) floats in 0..1
    print(f"screenshot: {shot}")
    coloured = np.abs(pixels - pixels.mean(axis=2, keepdims=True)).sum(axis=2) > 0.1
    assert coloured.mean() > 0.003  # the viridis heatmap cells and coloured curves, not a blank or grey page
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


def test_names_from_user_data_are_escaped_in_every_report_file(tmp_path):
    # a model, task and language name holding what markdown, HTML and matplotlib's mathtext would act on
    model = "a|b <script>alert(1)</script> `x` $\\frac{$\nsecond line"
    run = {
        "model": model,
        "complete": True,
        "tasks": {"t|<i>": {"main_score": 50.0, "scores": {"main_score": 50.0, "en|`x`": 40.0}}},
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    written = write_report([path], tmp_path / "report")
    table = [line for line in written["markdown"].read_text().splitlines() if line.startswith("|")]
    assert table[0] == r"| task | a\|b \<script>alert(1)\</script> \`x\` \$\\frac{\$ second line |"
    assert table[2] == r"| **t\|\<i>** | 50.00 |"
    assert table[3] == r"| t\|\<i> / en\|\`x\` | 40.00 |"
    assert all(len(re.split(r"(?<!\\)\|", line)) == 4 for line in table)  # 2 cells in every row
    page = written["html"].read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<i>" not in page
    assert "a|b &lt;script&gt;alert(1)&lt;/script&gt; `x` $\\frac{$\nsecond line" in page
    assert written["bars"].read_bytes()[:4] == b"\x89PNG"


# ---- cell values: every number on the page and in report.md is the score of its own run, task and key ----
def _saved_runs(report_inputs) -> list[dict]:
    """The two results files as `sentkit eval` wrote them, read with json (the report's inputs)."""
    runs = []
    for path in report_inputs["results"]:
        with open(path, encoding="utf-8") as fh:
            runs.append(json.load(fh))
    return runs


def _cell_tips(figure: str) -> list[tuple[str, str]]:
    """(hover title, printed value) of each heatmap cell, in drawing order (row by row)."""
    return re.findall(r"<title>([^<]+)</title></rect><text [^>]*>([^<]+)</text>", figure)


def test_summary_cells_are_each_runs_main_scores(report, report_inputs):
    _, page = report
    runs = _saved_runs(report_inputs)
    summary = page.split('<section id="heatmaps">')[0]
    header = re.findall(r'<th title="([^"]+)">', summary)
    assert header == list(runs[0]["tasks"])
    for run in runs:
        row = re.search(rf"<tr><th>{re.escape(run['model'])}</th>(.*?)</tr>", summary).group(1)
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        expected = []
        for task in header:  # the score, then its 95% interval under it when the run recorded one
            result = run["tasks"][task]
            ci = result.get("main_score_ci")
            expected.append(f"{result['main_score']:.2f}" + (f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""))
        assert cells == expected
    mteb = re.search(r"<tr><th>intfloat/multilingual-e5-small \(MTEB\).*?</tr>", summary).group(0)
    assert [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", mteb)] == [
        "83.59" if task == "stsb" else "-" for task in header
    ]


def test_knn_matrix_cells_are_query_by_target(report, report_inputs):
    _, page = report
    runs = _saved_runs(report_inputs)
    [knn] = [task for task in runs[0]["tasks"] if task.startswith("knn:")]
    figures = _figures(page, "knn-matrix")
    assert len(figures) == len(runs)
    for figure, run in zip(figures, runs):
        scores = run["tasks"][knn]["scores"]
        assert scores["de->en"] != scores["en->de"]  # so a transposed matrix shows
        langs = list(dict.fromkeys(key.split("->")[0] for key in scores if "->" in key))
        assert sorted(langs) == ["de", "en"]
        assert _cell_tips(figure) == [  # row a, column b: a's queries labelled by their nearest b sentence
            (f"{a} / target language {b}: {scores[f'{a}->{b}']:.2f}", f"{scores[f'{a}->{b}']:.1f}")
            for a in langs
            for b in langs
        ]


def test_language_heatmap_cells_are_each_runs_breakdown(report, report_inputs):
    _, page = report
    runs = _saved_runs(report_inputs)
    heatmaps = _figures(page, "heatmap")
    sts17 = next(f for f in heatmaps if 'aria-label="sts17: score per language / pair"' in f)
    pairs = [k for k in runs[0]["tasks"]["sts17"]["scores"] if "-" in k]
    assert _cell_tips(sts17) == [
        (
            f"{run['model']} / {pair}: {run['tasks']['sts17']['scores'][pair]:.2f}",
            f"{run['tasks']['sts17']['scores'][pair]:.1f}",
        )
        for run in runs
        for pair in pairs
    ]


def test_markdown_table_cells_are_each_runs_scores(report, report_inputs):
    written, _ = report
    runs = _saved_runs(report_inputs)
    lines = written["markdown"].read_text(encoding="utf-8").splitlines()
    assert "| task | trigram-64 | trigram-256 | intfloat/multilingual-e5-small (MTEB) |" in lines
    for task in runs[0]["tasks"]:
        mteb = "83.59" if task == "stsb" else "-"
        main = [_with_ci(r["tasks"][task]["main_score"], r["tasks"][task].get("main_score_ci")) for r in runs]
        assert f"| **{task}** | {' | '.join(main)} | {mteb} |" in lines
        for key in (k for k in runs[0]["tasks"][task]["scores"] if k != "main_score"):
            cells = [
                _with_ci(r["tasks"][task]["scores"][key], r["tasks"][task].get("ci", {}).get(key))
                for r in runs
            ]
            assert f"| {task} / {key} | {' | '.join(cells)} | - |" in lines  # MTEB: main scores only


def _with_ci(score: float, ci) -> str:
    return f"{score:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def test_scores_show_their_bootstrap_intervals(report, report_inputs):
    from pathlib import Path

    written, page = report
    run = json.loads(Path(report_inputs["results"][0]).read_text())
    stsb = run["tasks"]["stsb"]
    low, high = stsb["main_score_ci"]
    summary = page.split('<section id="heatmaps">')[0]
    assert f'title="95% bootstrap interval over the test items">[{low:.2f}, {high:.2f}]</span>' in summary
    assert ">83.59</a></td>" in summary  # the MTEB file has no interval: a bare score
    assert stsb["items"]["data_sha256"] in page.split('<section id="provenance">')[1]
    assert "intervals: percentile bootstrap, 1000 resamples, seed 0" in page
    md = written["markdown"].read_text()
    assert "In brackets: 95% percentile bootstrap interval over the task's test items" in md
    assert f"| **stsb** | {stsb['main_score']:.2f} [{low:.2f}, {high:.2f}] |" in md
    de = run["tasks"]["tatoeba"]["ci"]["deu"]
    assert (
        f"| tatoeba / deu | {run['tasks']['tatoeba']['scores']['deu']:.2f} [{de[0]:.2f}, {de[1]:.2f}] |" in md
    )
