"""STS task: the metric on hand-checked cases, one encode per distinct sentence, factories, real scores."""

from __future__ import annotations

import hashlib
import math
import os

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentkit.datasets.senteval_sts import SUBSETS
from sentkit.errors import LanguageNotCovered, MissingDataError
from sentkit.tasks import TASKS, get_task
from sentkit.tasks.sts import STS_EN_ENV, cosine_spearman, paired_cosine, select_pairs, sts12_16

STS_TASKS = ["stsb", "stsb-dev", "sts17", "sts12-16", "ja-sts12-16", "jsts", "jsick", "jacsts"]


class CharBagEncoder:
    """Hashed character-bigram counts: a deterministic encoder with real lexical signal; counts calls."""

    name = "char-bag"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def encode(self, sentences, batch_size=64, show_progress=False):
        self.calls.append(list(sentences))
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for row, s in enumerate(sentences):
            for a, b in zip(s, s[1:]):
                out[row, int(hashlib.md5((a + b).encode()).hexdigest()[:8], 16) % self.dim] += 1
        return out


def test_spearman_hand_checked():
    # cosines are exactly 1, 0, -1
    a = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    b = np.array([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]])
    np.testing.assert_allclose(paired_cosine(a, b), [1.0, 0.0, -1.0])
    assert cosine_spearman(a, b, np.array([5.0, 3.0, 1.0])) == pytest.approx(100.0)
    # ranks system (3, 2, 1) vs gold (2, 3, 1): sum d^2 = 2, rho = 1 - 6*2 / (3*8) = 0.5
    assert cosine_spearman(a, b, np.array([3.0, 5.0, 1.0])) == pytest.approx(50.0)
    assert cosine_spearman(a, b, np.array([1.0, 3.0, 5.0])) == pytest.approx(-100.0)


def test_zero_vector_scores_zero_cosine():
    a = np.array([[0.0, 0.0], [1.0, 1.0]])
    b = np.array([[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(paired_cosine(a, b), [0.0, 1.0])


def test_registered():
    for name in [*STS_TASKS, "alignment-uniformity"]:
        assert name in TASKS


def test_stsb_dev_encodes_each_sentence_once_and_matches_direct_scoring(data_root):
    from sentkit.datasets.stsb import read_stsb

    enc = CharBagEncoder()
    scores = get_task("stsb-dev").evaluate(enc)
    assert len(enc.calls) == 1
    encoded = enc.calls[0]
    pairs = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-dev.csv")
    assert len(encoded) == len(set(encoded)) == len(set(pairs.sent1) | set(pairs.sent2)) < 3000
    # the deduplicated path equals encoding both sides separately
    direct = spearmanr(paired_cosine(enc.encode(pairs.sent1), enc.encode(pairs.sent2)), pairs.gold).statistic
    assert scores["main_score"] == scores["en"] == pytest.approx(100 * direct)
    assert 30 < scores["main_score"] < 90  # lexical overlap carries real signal on STS-B


def test_sts17_breakdown_and_mean(data_root):
    task = get_task("sts17", langs=["en-en", "de-en", "es"])
    assert task.languages == ("en-en", "en-de", "es-es")
    encoder = CharBagEncoder()
    scores = task.evaluate(encoder)
    assert set(scores) == {"main_score", "en-en", "en-de", "es-es"}
    assert scores["main_score"] == pytest.approx(np.mean([scores[k] for k in task.languages]))
    assert task.meta["pairs"] == {"en-en": 250, "en-de": 250, "es-es": 250}
    assert scores["en-en"] > scores["en-de"]  # character overlap helps monolingual pairs only
    # each pair's score: Spearman of the raw file's third column against the cosines of its two columns
    folder = data_root / "sts" / "STS17-test"
    files = {"en-en": "track5.en-en", "en-de": "extended.de-en", "es-es": "track3.es-es"}
    for pair, name in files.items():
        rows = [
            line.split("\t")
            for line in (folder / f"STS.input.{name}.txt").read_text(encoding="utf-8").splitlines()
        ]
        cos = _cosines(encoder.encode([r[0] for r in rows]), encoder.encode([r[1] for r in rows]))
        assert scores[pair] == pytest.approx(
            100 * spearmanr(cos, [float(r[2]) for r in rows]).statistic, abs=1e-9
        )


def test_select_pairs():
    known = ("en-en", "ar-ar", "en-ar", "en-de")
    assert select_pairs(None, known, known[:2]) == ("en-en", "ar-ar")
    assert select_pairs(["ar-en"], known, known) == ("en-ar",)
    assert select_pairs(["en", "ar"], known, known) == ("en-en", "ar-ar", "en-ar")
    with pytest.raises(LanguageNotCovered, match="has no data for en-xx"):
        select_pairs(["en-xx"], known, known)
    with pytest.raises(LanguageNotCovered, match="has no data for fr"):
        select_pairs(["fr"], known, known)
    assert select_pairs(["en-xx", "de-en", "fr"], known, known) == ("en-de",)  # a global --langs: what it has


def test_single_language_task_rejects_other_langs():
    with pytest.raises(LanguageNotCovered, match=r"'jsts' has no data for en \(it has: ja\)"):
        get_task("jsts", langs=["en"])


def test_sts12_16_missing_folder_hint(monkeypatch, tmp_path):
    monkeypatch.delenv(STS_EN_ENV, raising=False)
    with pytest.raises(MissingDataError, match=STS_EN_ENV):
        get_task("sts12-16").evaluate(CharBagEncoder())
    with pytest.raises(MissingDataError, match=r"STS12-en-test.*STS12-en-test \.\.\. STS16-en-test"):
        sts12_16(path=tmp_path).evaluate(CharBagEncoder())


def test_sts12_16_reads_a_senteval_folder(monkeypatch, tmp_path, data_root):
    # Stand-in English folder in SentEval layout: the Japanese files renamed, one blank gold line added.
    for year, subsets in SUBSETS.items():
        dst = tmp_path / f"{year}-en-test"
        dst.mkdir()
        for subset in subsets:
            for kind in ("input", "gs"):
                src = data_root / "sts-ja" / f"{year}-ja-test" / f"STS.{kind}.{subset}.txt"
                (dst / src.name).write_bytes(src.read_bytes())
    gs = tmp_path / "STS12-en-test" / "STS.gs.MSRpar.txt"
    lines = gs.read_text().split("\n")
    lines[0] = ""
    gs.write_text("\n".join(lines))
    monkeypatch.setenv(STS_EN_ENV, str(tmp_path))
    task = get_task("sts12-16")
    scores = task.evaluate(CharBagEncoder())
    assert set(scores) == {"main_score", *SUBSETS}
    assert task.meta["pairs"]["STS12"] == 2615 - 1
    assert task.meta["pairs"]["STS16"] == 1143
    assert scores["main_score"] == pytest.approx(np.mean([scores[y] for y in SUBSETS]))


def test_ja_sts12_16_real(data_root):
    task = get_task("ja-sts12-16")
    scores = task.evaluate(CharBagEncoder())
    assert task.meta["pairs"] == {"STS12": 2615, "STS13": 1063, "STS14": 3165, "STS15": 2901, "STS16": 1143}
    assert all(0 < scores[y] < 90 for y in SUBSETS)


@pytest.mark.parametrize("name,pairs", [("jsts", 1457), ("jsick", 4927), ("jacsts", 3482)])
def test_japanese_tasks_load_their_split(data_root, name, pairs):
    task = get_task(name)
    task.load()
    assert task.meta["pairs"] == {"ja": pairs}


def _raw_stsb_test(data_root) -> tuple[list[str], list[str], list[float]]:
    """STS-B test read with plain file reading: columns 6 and 7 are the sentences, column 5 the gold score."""
    path = data_root / "sts" / "STSBenchmark" / "sts-test.csv"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").split("\n") if line]
    return [r[5] for r in rows], [r[6] for r in rows], [float(r[4]) for r in rows]


def _cosines(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64 (on integer counts every dot and squared norm is exact, so sentences
    repeated in both columns tie at the same value, as in the task)."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return (u * v).sum(axis=1) / (np.sqrt((u * u).sum(axis=1)) * np.sqrt((v * v).sum(axis=1)))


class _Recording:
    """Passes `encode` through and keeps each sentence's vector (so the test need not encode twice)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.vectors = inner, inner.name, {}

    def encode(self, sentences, batch_size=64, show_progress=False):
        out = self.inner.encode(sentences, batch_size=batch_size)
        self.vectors.update(zip(sentences, out))
        return out

    def __getattr__(self, item):
        return getattr(self.inner, item)


def test_tiny_random_model_scores_exactly_its_spearman_on_the_raw_gold(data_root):
    import torch

    from conftest import make_tiny_encoder

    torch.set_num_threads(min(2, torch.get_num_threads()))
    encoder = _Recording(make_tiny_encoder("mean"))
    scores = get_task("stsb").evaluate(encoder)
    first, second, gold = _raw_stsb_test(data_root)
    assert len(gold) == 1379
    # the pairs and gold of the raw file, with each sentence's vector: the exact Spearman the task must give
    cos = _cosines([encoder.vectors[s] for s in first], [encoder.vectors[s] for s in second])
    expected = 100 * spearmanr(cos, gold).statistic
    assert scores["main_score"] == scores["en"] == pytest.approx(expected, abs=1e-9)
    assert expected < 60.0  # word overlap only: far below MiniLM's 82


@pytest.mark.slow
def test_minilm_stsb_test_matches_published(data_root):
    import torch

    from conftest import minilm_dir
    from sentkit.encoders.transformer import TransformerEncoder

    torch.set_num_threads(min(2, torch.get_num_threads()))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    encoder = TransformerEncoder.from_pretrained(minilm_dir())
    scores = get_task("stsb").evaluate(encoder)
    assert scores["main_score"] == pytest.approx(82.03, abs=1.5)


def test_sts12_16_reports_each_years_pooled_spearman_not_the_subset_mean(monkeypatch, tmp_path):
    """Within every subset cosine ranks the pairs as gold does (+100 each), but subsets with higher gold get
    lower cosines: the subset mean is 100 while SentEval's pooled 'all' Spearman of a year is negative."""
    from fakes import TableEncoder

    table = {}
    for year, subsets in SUBSETS.items():
        folder = tmp_path / f"{year}-en-test"
        folder.mkdir()
        for j, subset in enumerate(subsets):
            inputs, gold = [], []
            for i in range(4):
                cos = 0.9 - 0.2 * j + 0.01 * i
                a, b = f"{year} {subset} a{i}", f"{year} {subset} b{i}"
                table[a], table[b] = [1.0, 0.0], [cos, math.sqrt(1 - cos**2)]
                inputs.append(f"{a}\t{b}")
                gold.append(f"{0.8 * j + 0.1 * (i + 1):.2f}")
            (folder / f"STS.input.{subset}.txt").write_text("\n".join(inputs) + "\n", encoding="utf-8")
            (folder / f"STS.gs.{subset}.txt").write_text("\n".join(gold) + "\n", encoding="utf-8")
    monkeypatch.setenv(STS_EN_ENV, str(tmp_path))
    scores = get_task("sts12-16").evaluate(TableEncoder(table))
    for year, subsets in SUBSETS.items():
        cos = [0.9 - 0.2 * j + 0.01 * i for j in range(len(subsets)) for i in range(4)]
        gold = [0.8 * j + 0.1 * (i + 1) for j in range(len(subsets)) for i in range(4)]
        pooled = 100 * spearmanr(cos, gold).statistic
        assert pooled < 0
        assert scores[year] == pytest.approx(pooled, abs=1e-6)  # not the subset mean, which is 100
    assert scores["main_score"] == pytest.approx(np.mean([scores[y] for y in SUBSETS]))
