"""examples/amr_retrofit.py on tiny models and a stub parser: the weighted row's w comes from the dev curve
(its best point), and both retrofitted rows' test scores are what the encoders give on the real STS17 file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow  # encodes STS-B dev and STS17 en-en with two tiny models: ~20 s on 2 shared cores
def test_amr_example_records_dev_weight_and_both_rows(tmp_path, data_root, monkeypatch):
    penman = pytest.importorskip("penman")
    from conftest import make_tiny_encoder
    from sentkit.amr import parse as parse_module
    from sentkit.amr.encoder import AmrEncoder
    from sentkit.encoders.retrofit import RetrofitEncoder
    from sentkit.tasks import get_task

    class StubParser:  # the word count as a graph: fast, and not the text's own tokens
        def __init__(self, lang="en"):
            pass

        def __call__(self, sentences):
            return [penman.decode(f"(s / say-01 :ARG1 (x / w{len(s.split())}))") for s in sentences]

    monkeypatch.setitem(parse_module.PARSERS, "stub", StubParser)
    parse_module.get_parser.cache_clear()
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import amr_retrofit

    text_dir = make_tiny_encoder("mean").save(tmp_path / "text")
    amr_dir = AmrEncoder(make_tiny_encoder("mean", seed=1), parser="stub").save(tmp_path / "amr")
    out = tmp_path / "out"
    argv = ["--amr-model", str(amr_dir), "--text-models", str(text_dir), "--control-model", ""]
    argv += ["--tasks", "sts17", "--weights", "0,0.5,1,2", "--out", str(out), "--data-root", str(data_root)]
    results = amr_retrofit.main(argv)
    parse_module.get_parser.cache_clear()

    model = results["models"][str(text_dir)]
    dev = model["dev_weight"]
    assert dev["task"] == "stsb-dev" and set(dev["curve"]) == {"0", "0.5", "1", "2"}
    assert dev["curve"][f"{dev['weight']:g}"] == max(dev["curve"].values())
    assert dev["combine"] == f"concat_norm_w{dev['weight']:g}"
    scores = model["scores"]
    assert {"s", "concat_norm", dev["combine"]} <= set(scores)
    text, amr = make_tiny_encoder("mean"), AmrEncoder.from_pretrained(amr_dir)
    for how in ("concat_norm", dev["combine"]):
        task = get_task("sts17", langs=["en-en"], data_root=data_root)
        expected = task.evaluate(RetrofitEncoder(text, amr, how))["main_score"]
        assert scores[how]["sts17"]["main_score"] == pytest.approx(expected, abs=1e-4)
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert written["models"][str(text_dir)]["dev_weight"] == dev
    assert np.isfinite(written["models"][str(text_dir)]["scores"]["s"]["sts17"]["main_score"])
