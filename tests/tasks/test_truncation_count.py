"""Each task reports how many of its distinct sentences the encoder cut at its window."""

from __future__ import annotations

from fakes import TableEncoder

from conftest import make_tiny_encoder
from sentkit.datasets.stsb import read_stsb
from sentkit.evaluate import evaluate
from sentkit.tasks import get_task
from sentkit.tasks.encoding import TRUNCATED_KEY, truncated_sentences


def test_truncated_sentences_are_counted_per_task_even_when_cached(data_root, toy_root):
    dev = toy_root / "sts" / "STSBenchmark" / "sts-dev.csv"  # the first 150 rows of STS-B dev
    dev.parent.mkdir(parents=True)
    lines = (data_root / "sts" / "STSBenchmark" / "sts-dev.csv").read_text(encoding="utf-8").split("\n")
    dev.write_text("\n".join(lines[:150]) + "\n", encoding="utf-8")
    encoder = make_tiny_encoder("mean")
    encoder.max_length = 12
    pairs = read_stsb(dev)
    distinct = set(pairs.sent1) | set(pairs.sent2)
    lengths = encoder.tokenizer(sorted(distinct))["input_ids"]
    expected = sum(len(ids) > 12 for ids in lengths)
    assert 0 < expected < len(distinct)
    results = evaluate(encoder, "stsb-dev,alignment-uniformity", data_root=toy_root, show_progress=False)
    for name in ("stsb-dev", "alignment-uniformity"):  # the second task's sentences all come from the cache
        assert results["tasks"][name]["scores"][TRUNCATED_KEY] == expected, name
    assert results["tasks"]["alignment-uniformity"]["sentences"] == 0


def test_encoders_that_do_not_record_truncation_get_no_key(data_root):
    scores = get_task("jacsts-dev", data_root=data_root).evaluate(TableEncoder(dim=8))
    assert TRUNCATED_KEY not in scores
    assert truncated_sentences(TableEncoder(), ["a"]) is None
