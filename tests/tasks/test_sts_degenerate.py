"""Degenerate STS data still gets its Spearman, with a warning on stderr and in the results file: pairs
whose two sentences are identical (the similarities are float noise), mostly repeated pairs, nearly constant
gold scores. Real benchmark sets raise none of them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.cli import main
from sentkit.datasets.sts_pairs import STSPairs
from sentkit.errors import DataWarning
from sentkit.evaluate import evaluate
from sentkit.tasks import get_task
from sentkit.tasks.sts_checks import (
    DUPLICATE_SHARE,
    NEAR_CONSTANT_SHARE,
    SIMILARITY_TOLERANCE,
    data_warnings,
    similarity_warning,
)

WORDS = "river stone cloud bread music window garden letter candle orange forest engine".split()


def write_pairs(path, rows):
    path.write_text(
        "sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{g}\n" for a, b, g in rows), encoding="utf-8"
    )
    return path


def sentence(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7)) + f" {i}"


def _evaluate(tmp_path, rows):
    spec = f"sts:{write_pairs(tmp_path / 'pairs.tsv', rows)}"
    with pytest.warns(DataWarning) as caught:
        result = evaluate(NgramEncoder(), [spec], out=tmp_path / "out", show_progress=False)
    saved = json.loads(open(result["path"], encoding="utf-8").read())["tasks"][spec]
    return [str(w.message) for w in caught if issubclass(w.category, DataWarning)], saved, spec


def test_identical_sentences_warn_that_the_spearman_ranks_float_noise(tmp_path):
    rows = [(sentence(i), sentence(i), (i * 7) % 6) for i in range(40)]
    messages, saved, spec = _evaluate(tmp_path, rows)
    note = (
        "the model gives 40 of 40 pairs the same cosine similarity (1.0000, within 0.0001): the Spearman "
        "ranks float noise, not the model's judgement (are both sentences of a pair the same text, or has "
        "the model collapsed?)"
    )
    assert messages == [f"task {spec}: {note}"]
    assert saved["meta"]["warnings"] == [note] and np.isfinite(saved["main_score"])


def test_two_pairs_repeated_warn_that_the_interval_claims_a_false_precision(tmp_path):
    rows = [(sentence(1), sentence(2), 1.0), (sentence(3), sentence(3) + " again", 4.0)] * 20
    messages, saved, spec = _evaluate(tmp_path, rows)
    note = (
        "38 of 40 pairs repeat an earlier pair (first: pair 3 repeats pair 1): the Spearman and its interval "
        "count each copy as a new pair, so they claim a precision the data lacks"
    )
    # the zero-width interval is warned about too; this says why
    assert messages[0] == f"task {spec}: {note}" and "has no width" in messages[1] and len(messages) == 2
    assert saved["meta"]["warnings"] == [note]


def test_nearly_constant_gold_scores_warn(tmp_path):
    rows = [(sentence(i), sentence(i + 1), 3.0 if i >= 3 else i) for i in range(40)]
    messages, saved, spec = _evaluate(tmp_path, rows)
    note = "37 of 40 pairs have the gold score 3: the Spearman ranks mostly ties and says little"
    assert messages == [f"task {spec}: {note}"]
    assert saved["meta"]["warnings"] == [note]


def test_cli_prints_each_warning_as_one_line_and_exits_0(tmp_path, capsys, monkeypatch):
    import sentkit

    monkeypatch.setattr(sentkit, "load_encoder", lambda name, **kw: NgramEncoder())
    path = write_pairs(tmp_path / "pairs.tsv", [(sentence(i), sentence(i), i % 5) for i in range(40)])
    capsys.readouterr()
    code = main(["eval", "--model", "ngram", "--tasks", f"sts:{path}", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("sentkit: warning: ")]
    assert len(lines) == 1 and "the model gives 40 of 40 pairs the same cosine similarity" in lines[0]


def test_ordinary_pairs_and_every_builtin_set_raise_no_warning(tmp_path, data_root):
    rows = [(sentence(i), sentence(i + i % 3), i % 6) for i in range(40)]
    spec = f"sts:{write_pairs(tmp_path / 'pairs.tsv', rows)}"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        result = evaluate(NgramEncoder(), [spec], show_progress=False)
        assert "warnings" not in result["tasks"][spec]["meta"]
        for name in ("stsb", "stsb-dev", "sts17", "jsts", "jsick", "jacsts", "ja-sts12-16"):
            task = get_task(name)
            task.load()
            assert "warnings" not in task.meta, name


def test_thresholds():
    assert (NEAR_CONSTANT_SHARE, SIMILARITY_TOLERANCE, DUPLICATE_SHARE) == (0.9, 1e-4, 0.5)
    sims = np.linspace(0.2, 0.9, 100)
    assert similarity_warning("en", sims) is None
    sims[:90] = 0.5 + np.linspace(0, 0.9e-4, 90)  # 90 of 100 within 1e-4 of each other
    assert similarity_warning("en", sims).startswith("en: the model gives 90 of 100 pairs the same cosine")
    sims[:90] = 0.5 + np.linspace(0, 2e-4, 90)
    assert similarity_warning("en", sims) is None

    def pairs(first, second, gold):
        return STSPairs(list(first), list(second), np.asarray(gold, dtype=float), "en", "toy")

    # (a, b) and (b, a) are one pair; half the rows repeated is not "most"
    half = pairs(["a", "b", "c", "d"], ["b", "a", "e", "f"], [1, 2, 3, 4])
    assert data_warnings("all", half) == []
    most = pairs(["a", "b", "a", "c"], ["b", "a", "b", "d"], [1, 2, 3, 4])
    assert data_warnings("all", most) == []  # 2 of 4 repeated is not most
    three = pairs(["a", "b", "a", "a", "c"], ["b", "a", "b", "b", "d"], [1, 2, 3, 4, 5])
    assert data_warnings("all", three) == [
        "3 of 5 pairs repeat an earlier pair (first: pair 2 repeats pair 1): the Spearman and its interval "
        "count each copy as a new pair, so they claim a precision the data lacks"
    ]
