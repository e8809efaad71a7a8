"""A sentkit encoder run through `mteb.evaluate` offline, on MTEB's own STSBenchmark and STS17 tasks whose
datasets are built from the local files, gives the score sentkit's tasks give; MTEB's result files then
sit beside sentkit runs in `sentkit report`."""

from __future__ import annotations

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.mteb_results import read_mteb_runs
from sentkit.tasks import get_task

mteb = pytest.importorskip("mteb", reason='MTEB checks need the mteb extra: pip install "sentkit[mteb]"')

# sentkit names STS17's cross-lingual pairs English first; MTEB's subsets name some the other way round.
# (en-ar is left out of the trigram check: Arabic and English share no trigrams, so most cosines are an
# exact 0 in float64 and tie, but differ in the last bit in MTEB's float32, which breaks the ties.)
MTEB_STS17 = {"en-en": "en-en", "es-es": "es-es", "en-de": "en-de", "en-es": "es-en"}


def local_mteb_task(name: str, sets: dict, subsets: dict[str, str] | None = None):
    """MTEB's task object with its dataset replaced by local pairs (nothing is downloaded)."""
    from datasets import Dataset, DatasetDict

    task = mteb.get_task(name, hf_subsets=list(subsets.values())) if subsets else mteb.get_task(name)

    def split(pairs) -> DatasetDict:
        rows = {"sentence1": pairs.sent1, "sentence2": pairs.sent2, "score": [float(g) for g in pairs.gold]}
        return DatasetDict({"test": Dataset.from_dict(rows)})

    if subsets:
        task.dataset = {subsets[key]: split(pairs) for key, pairs in sets.items()}
    else:
        task.dataset = {"default": split(next(iter(sets.values())))}
    task.data_loaded = True
    return task


class CachedEncoder:
    """Encodes each distinct text once; MTEB's run then reuses sentkit's vectors for the same texts."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.cache = inner, inner.name, {}

    def encode(self, sentences, batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        missing = list(dict.fromkeys(s for s in sentences if s not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.encode(missing, batch_size=batch_size)))
        return np.stack([self.cache[s] for s in sentences])  # (n, dim)


def run_mteb(encoder, tasks, cache_dir=None):
    from sentkit.encoders.mteb_adapter import mteb_model

    cache = mteb.ResultCache(cache_path=cache_dir) if cache_dir is not None else None
    result = mteb.evaluate(
        mteb_model(encoder), tasks, cache=cache, show_progress_bar=False, co2_tracker=False
    )
    assert not result.exceptions
    return {r.task_name: r.scores["test"] for r in result.task_results}


def test_stsb_and_sts17_same_score_in_mteb_and_sentkit(data_root, tmp_path):
    encoder = NgramEncoder()
    stsb = get_task("stsb", data_root=data_root)
    sts17 = get_task("sts17", langs=list(MTEB_STS17), data_root=data_root)
    stsb.load()
    sts17.load()
    mine_stsb, mine_sts17 = stsb.evaluate(encoder), sts17.evaluate(encoder)
    scores = run_mteb(
        encoder,
        [local_mteb_task("STSBenchmark", stsb.sets), local_mteb_task("STS17", sts17.sets, MTEB_STS17)],
        cache_dir=tmp_path / "mteb-cache",
    )
    # Spearman of float32 (MTEB) vs float64 (sentkit) cosines: equal up to the order of near-ties
    assert 100 * scores["STSBenchmark"][0]["main_score"] == pytest.approx(mine_stsb["main_score"], abs=0.01)
    by_subset = {s["hf_subset"]: 100 * s["main_score"] for s in scores["STS17"]}
    for key, subset in MTEB_STS17.items():
        assert by_subset[subset] == pytest.approx(mine_sts17[key], abs=0.01), key
    assert np.ptp([mine_sts17[k] for k in MTEB_STS17]) > 20  # the pairs really differ: a mix-up would show

    # the result files MTEB wrote read back as one run beside sentkit's, with sentkit's task names
    (run,) = read_mteb_runs([tmp_path / "mteb-cache"])
    assert run["model"] == "sentkit/char-trigram (MTEB)"
    assert run["tasks"]["stsb"]["main_score"] == pytest.approx(mine_stsb["main_score"], abs=0.01)
    assert run["tasks"]["sts17"]["scores"]["en-es"] == pytest.approx(mine_sts17["en-es"], abs=0.01)
    assert run["tasks"]["sts17"]["main_score"] == pytest.approx(mine_sts17["main_score"], abs=0.01)


@pytest.mark.slow
def test_minilm_same_scores_in_mteb_and_sentkit(data_root):
    from sentkit.datasets.sts_pairs import STSPairs
    from sentkit.encoders import load_encoder

    stsb = get_task("stsb", data_root=data_root)
    stsb.load()
    full = stsb.sets["en"]
    rows = np.random.default_rng(0).choice(len(full), size=150, replace=False)
    stsb.sets = {
        "en": STSPairs(
            [full.sent1[i] for i in rows], [full.sent2[i] for i in rows], full.gold[rows], "en", "slice"
        )
    }
    pairs = {"en-ar": "en-ar"}
    sts17 = get_task("sts17", langs=list(pairs), data_root=data_root)
    sts17.load()
    encoder = CachedEncoder(load_encoder("minilm-en"))  # MTEB asks for the same texts: encode them once
    mine_stsb, mine_sts17 = stsb.evaluate(encoder), sts17.evaluate(encoder)
    scores = run_mteb(
        encoder, [local_mteb_task("STSBenchmark", stsb.sets), local_mteb_task("STS17", sts17.sets, pairs)]
    )
    assert mine_stsb["main_score"] > 70  # a real model on real pairs
    assert 100 * scores["STSBenchmark"][0]["main_score"] == pytest.approx(mine_stsb["main_score"], abs=0.01)
    by_subset = {s["hf_subset"]: 100 * s["main_score"] for s in scores["STS17"]}
    for key in pairs:
        assert by_subset[key] == pytest.approx(mine_sts17[key], abs=0.01), key


def test_adapter_without_mteb_says_how_to_install(monkeypatch):
    import sys

    from sentkit.encoders import mteb_adapter

    monkeypatch.setitem(sys.modules, "mteb", None)
    with pytest.raises(ImportError, match=r'pip install "sentkit\[mteb\]"'):
        mteb_adapter.mteb_model(NgramEncoder())
