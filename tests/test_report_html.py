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
