"""Bitext retrieval and mining: Tatoeba nearest-neighbour accuracy and BUCC 2018 mining F1.

Tatoeba follows EASE's `downstreams/parallel-matching/evaluation.py`: for each language, the accuracy of
cosine nearest-neighbour retrieval xxx->eng and eng->xxx, averaged over both directions.
BUCC follows Artetxe & Schwenk (2019, "Margin-based parallel corpus mining"): candidates by forward and
backward nearest neighbours ("max" retrieval, one-to-one), scored by cosine or by the ratio margin, with the
scoring and retrieval code `sentkit mine` runs (sentkit.mining).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sentkit.datasets.bucc import BUCC_ENV, SHIPPED_PAIRS, BuccSample, bucc_folders, bucc_pairs, load_bucc
from sentkit.datasets.root import data_root as default_data_root
from sentkit.datasets.tatoeba import FOLDER as TATOEBA_FOLDER
from sentkit.datasets.tatoeba import load_tatoeba, tatoeba_languages
from sentkit.encoders.protocol import Encoder
from sentkit.langs import select_languages, tatoeba_code
from sentkit.mining.exact import cosine_knn
from sentkit.mining.margin import DEFAULT_K, SCORINGS, candidate_scores, ratio_margin  # noqa: F401 (re-exported)
from sentkit.mining.retrieval import select_pairs
from sentkit.stats.items import TaskItems, digest_rows
from sentkit.tasks.encoding import encode_unique, with_truncation
from sentkit.tasks.task import Task

# EASE's default list (ar ca cs de eo es fa fr it ja ko nl pl pt ru sv tr) mapped to ISO 639-3 by pycountry:
# `fa` becomes `fas`, which has no Tatoeba file (Persian is `pes`), so EASE scores these 16 languages.
TATOEBA_EASE_LANGUAGES: tuple[str, ...] = (
    "ara", "cat", "ces", "deu", "epo", "spa", "fra", "ita", "jpn", "kor", "nld", "pol", "por", "rus", "swe",
    "tur",
)  # fmt: skip
MARGIN_K = DEFAULT_K  # neighbourhood size of Artetxe & Schwenk (2019)


# ---- Tatoeba ----------------------------------------------------------------------------------------------
def tatoeba_hits(src: np.ndarray, eng: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each row's cosine nearest neighbour is its translation: (src->eng, eng->src), (n,) bools."""
    gold = np.arange(len(src))
    forward = cosine_knn(src, eng, 1)[1][:, 0]  # (n,)
    backward = cosine_knn(eng, src, 1)[1][:, 0]  # (n,)
    return forward == gold, backward == gold


def tatoeba_accuracy(src: np.ndarray, eng: np.ndarray) -> tuple[float, float]:
    """Percent of rows whose cosine nearest neighbour is their translation: (src->eng, eng->src)."""
    forward, backward = tatoeba_hits(src, eng)
    return 100.0 * float(np.mean(forward)), 100.0 * float(np.mean(backward))


@dataclass
class TatoebaTask(Task):
    """Tatoeba retrieval for `languages` (ISO 639-3); breakdown per language and direction."""

    _data: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict, repr=False)

    def load(self) -> None:
        for lang in self.languages:
            if lang not in self._data:
                self._data[lang] = load_tatoeba(lang, self.data_root)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        scores: dict[str, float] = {}
        self.items = TaskItems(unit="translation pair (retrieved in each direction)")
        for lang in self.languages:
            src, eng = self._data[lang]
            hits = tatoeba_hits(
                encode_unique(encoder, src, self.batch_size).rows(src),  # (n, dim)
                encode_unique(encoder, eng, self.batch_size).rows(eng),  # (n, dim)
            )
            forward, backward = (100.0 * float(np.mean(h)) for h in hits)
            scores[f"{lang}->eng"], scores[f"eng->{lang}"] = forward, backward
            scores[lang] = (forward + backward) / 2
            ids = digest_rows(src, eng)
            for key, hit in zip((f"{lang}->eng", f"eng->{lang}"), hits):
                self.items.add(key, "percent", ids, stratum=lang, hit=hit)
            self.items.aggregate(lang, [f"{lang}->eng", f"eng->{lang}"])
        scores["main_score"] = float(np.mean([scores[lang] for lang in self.languages]))
        self.items.aggregate(
            "main_score", [k for lang in self.languages for k in (f"{lang}->eng", f"eng->{lang}")]
        )
        texts = (t for lang in self.languages for side in self._data[lang] for t in side)
        return with_truncation(scores, encoder, texts)


def tatoeba(*, langs=None, data_root=None, batch_size: int = 64) -> TatoebaTask:
    """Tatoeba for any language codes (file-name codes or ISO 639-1; default: EASE's 16); main score = mean.

    Codes without a test set under the data root are dropped (all of them: LanguageNotCovered).
    """
    folder = (Path(data_root) if data_root else default_data_root()).joinpath(*TATOEBA_FOLDER)
    # English is the pivot side of every pair; with no data folder the loader reports the missing files
    available = [c for c in tatoeba_languages(data_root) if c != "eng"] if folder.is_dir() else None

    def expand(asked: list[str]) -> list[str]:
        codes = [tatoeba_code(s) for s in asked]
        return [c for c in codes if c != "eng" and (available is None or c in available)]

    chosen = select_languages(
        "tatoeba",
        langs,
        available if available is not None else [tatoeba_code(s) for s in langs or ()],
        default=TATOEBA_EASE_LANGUAGES,
        expand=expand,
        hint="each language is paired with English",
    )
    return TatoebaTask(
        name="tatoeba",
        languages=chosen,
        data_root=Path(data_root) if data_root else None,
        batch_size=batch_size,
    )


# ---- BUCC mining ------------------------------------------------------------------------------------------
KnnSearch = Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def mutual_neighbours(
    x: np.ndarray, y: np.ndarray, k: int = MARGIN_K, knn: KnnSearch = cosine_knn
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_sims, x_nn, y_sims, y_nn): the k nearest y of each x and the k nearest x of each y.

    `knn(queries, keys, k) -> (sims, indices)` is the exact cosine search (a GPU one in bench/bitext_mining.py).
    Both scorings of `mine_pairs` read the same neighbours, so a caller that mines with both searches once.
    """
    x_sims, x_nn = knn(x, y, k)  # (nx, k): y neighbours of each x
    y_sims, y_nn = knn(y, x, k)  # (ny, k): x neighbours of each y
    return x_sims, x_nn, y_sims, y_nn


def mine_pairs(
    x: np.ndarray,
    y: np.ndarray,
    scoring: str = "margin",
    k: int = MARGIN_K,
    knn: KnnSearch = cosine_knn,
    neighbours: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-to-one candidate pairs (x rows, y rows, scores), best score first: `sentkit mine`'s scoring
    (sentkit.mining.margin) and "max" retrieval (sentkit.mining.retrieval) on exact neighbours.

    Each x proposes its best y among its k nearest neighbours and each y its best x ("max" retrieval);
    the proposals are taken greedily by score, skipping any whose x or y is already paired.
    `neighbours` are `mutual_neighbours(x, y, k, knn)` when already computed (then `k` and `knn` are unused).
    """
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be 'cosine' or 'margin', got {scoring!r}")
    neighbours = neighbours if neighbours is not None else mutual_neighbours(x, y, k, knn)
    x_scores, y_scores = candidate_scores(neighbours, scoring)
    return select_pairs(neighbours, x_scores, y_scores, "max")


def prf_at_threshold(scores: np.ndarray, correct: np.ndarray, n_gold: int, threshold: float) -> tuple:
    """(precision, recall, F1) in percent of the candidates scoring >= threshold."""
    kept = scores >= threshold
    tp = int(correct[kept].sum())
    precision = tp / max(int(kept.sum()), 1)
    recall = tp / max(n_gold, 1)
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return 100 * precision, 100 * recall, 100 * f1


def best_threshold(scores: np.ndarray, correct: np.ndarray, n_gold: int) -> float:
    """The score cut-off with the highest F1 against the gold pairs (BUCC threshold tuning).

    The cut-off sits halfway between the last kept and the first dropped score, so that it transfers
    to held-out candidates without favouring either side.
    """
    if len(scores) == 0:
        return float("inf")
    order = np.argsort(-scores, kind="stable")
    s, c = scores[order], correct[order].astype(np.float64)
    tp = np.cumsum(c)
    kept = np.arange(1, len(s) + 1)
    f1 = 2 * tp / (kept + max(n_gold, 1))  # = 2PR/(P+R) with P = tp/kept, R = tp/n_gold
    last_of_tie = np.append(s[1:] != s[:-1], True)  # a cut-off keeps every tied score
    f1[~last_of_tie] = -1
    best = int(np.argmax(f1))
    return float(s[best] if best + 1 == len(s) else (s[best] + s[best + 1]) / 2)


def two_fold_f1(
    src: np.ndarray, scores: np.ndarray, correct: np.ndarray, gold_src: np.ndarray, n_src: int, seed: int = 0
) -> tuple[float, float, float, tuple[float, float]]:
    """Tune the threshold on one half of the source sentences, score the other half, and swap.

    The BUCC test gold is not public, so the sample's source sentences are split in two at random
    (`seed`); returns the mean (precision, recall, F1) over both directions and the two thresholds.
    """
    fold = source_folds(n_src, seed)
    results, thresholds = [], []
    for tune, test in ((0, 1), (1, 0)):
        on_tune, on_test = fold[src] == tune, fold[src] == test
        n_tune, n_test = int((fold[gold_src] == tune).sum()), int((fold[gold_src] == test).sum())
        threshold = best_threshold(scores[on_tune], correct[on_tune], n_tune)
        results.append(prf_at_threshold(scores[on_test], correct[on_test], n_test, threshold))
        thresholds.append(threshold)
    p, r, f = np.mean(results, axis=0)
    return float(p), float(r), float(f), (thresholds[0], thresholds[1])


def source_folds(n_src: int, seed: int = 0) -> np.ndarray:
    """The fold (0 or 1) of each source sentence in `two_fold_f1`: a seeded half of them is fold 1."""
    fold = np.zeros(n_src, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n_src)[n_src // 2 :]] = 1
    return fold


def source_counts(
    src: np.ndarray,
    scores: np.ndarray,
    correct: np.ndarray,
    gold_src: np.ndarray,
    n_src: int,
    thresholds: tuple[float, float],
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Per source sentence: its fold, candidates kept at the threshold its fold is scored with (the one
    tuned on the other fold), correct ones among them (tp) and gold pairs: what `two_fold_f1` sums."""
    fold = source_folds(n_src, seed)
    kept = scores >= np.array([thresholds[1], thresholds[0]])[fold[src]]
    return {
        "fold": fold.astype(np.int8),
        "kept": np.bincount(src[kept], minlength=n_src),
        "tp": np.bincount(src[kept & correct], minlength=n_src),
        "gold": np.bincount(gold_src, minlength=n_src),
    }


def bucc_scores(
    sample: BuccSample, x: np.ndarray, y: np.ndarray, scoring: str, seed: int = 0, neighbours=None
) -> dict:
    """Mine `sample` from vectors of its unique source (`x`) and English (`y`) texts; two-fold P/R/F1.

    Mining runs over distinct texts; a mined text pair stands for every id pair carrying those texts (as
    LASER's BUCC scripts map sentences back to ids). `neighbours`: `mutual_neighbours(x, y)`, if computed.
    """
    src_texts, trg_texts = _unique(sample.src_sentences), _unique(sample.trg_sentences)
    src_ids_of = _ids_by_text(sample.src_ids, sample.src_sentences)
    trg_ids_of = _ids_by_text(sample.trg_ids, sample.trg_sentences)
    text_src, text_trg, text_score = mine_pairs(x, y, scoring, neighbours=neighbours)
    src_row = {sid: i for i, sid in enumerate(sample.src_ids)}
    gold = set(sample.gold)
    src, scores, correct = [], [], []
    for i, j, s in zip(text_src, text_trg, text_score):
        for sid in src_ids_of[src_texts[i]]:
            for tid in trg_ids_of[trg_texts[j]]:
                src.append(src_row[sid])
                scores.append(s)
                correct.append((sid, tid) in gold)
    gold_src = np.array([src_row[sid] for sid, _ in sample.gold], dtype=np.int64)
    src, scores, correct = np.array(src, dtype=np.int64), np.array(scores), np.array(correct, dtype=bool)
    p, r, f, thresholds = two_fold_f1(src, scores, correct, gold_src, len(sample.src_ids), seed)
    counts = source_counts(src, scores, correct, gold_src, len(sample.src_ids), thresholds, seed)
    return {"precision": p, "recall": r, "f1": f, "thresholds": thresholds, "per_source": counts}


def _unique(texts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(texts))


def _ids_by_text(ids: Sequence[str], texts: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for sid, text in zip(ids, texts):
        out.setdefault(text, []).append(sid)
    return out


@dataclass
class BuccTask(Task):
    """BUCC 2018 sample sets mined with cosine and margin scoring; main score = mean margin F1."""

    seed: int = 0
    split: str = "sample"  # or "training" where a user has the training sets (both come with gold)
    _data: dict[str, BuccSample] = field(default_factory=dict, repr=False)

    def load(self) -> None:
        for pair in self.languages:
            if pair not in self._data:
                self._data[pair] = load_bucc(pair, self.data_root, self.split)

    def evaluate(self, encoder: Encoder) -> dict[str, float]:
        self.load()
        scores: dict[str, float] = {}
        self.items = TaskItems(unit="source sentence (its mined candidates and gold pairs)")
        for pair in self.languages:
            sample = self._data[pair]
            start = time.perf_counter()
            ids = digest_rows(
                [
                    digest_rows(sample.src_ids, sample.src_sentences),
                    digest_rows(sample.trg_ids, sample.trg_sentences),
                    digest_rows(*zip(*sample.gold)) if sample.gold else "",
                ]
            )
            x = encode_unique(encoder, sample.src_sentences, self.batch_size).vectors  # (n_src_texts, dim)
            y = encode_unique(encoder, sample.trg_sentences, self.batch_size).vectors  # (n_trg_texts, dim)
            neighbours = mutual_neighbours(x, y)  # one search serves both scorings
            for scoring in ("cosine", "margin"):
                result = bucc_scores(sample, x, y, scoring, self.seed, neighbours)
                scores[f"{pair}_{scoring}"] = result["f1"]
                scores[f"{pair}_{scoring}_precision"] = result["precision"]
                scores[f"{pair}_{scoring}_recall"] = result["recall"]
                self.meta.setdefault("thresholds", {})[f"{pair}_{scoring}"] = result["thresholds"]
                self.items.add(f"{pair}_{scoring}", "two_fold_f1", ids, stratum=pair, **result["per_source"])
            self.meta.setdefault("seconds", {})[pair] = round(time.perf_counter() - start, 2)
        for scoring in ("cosine", "margin"):
            scores[scoring] = float(np.mean([scores[f"{p}_{scoring}"] for p in self.languages]))
            self.items.aggregate(scoring, [f"{p}_{scoring}" for p in self.languages])
        scores["main_score"] = scores["margin"]
        self.items.aggregate("main_score", [f"{p}_margin" for p in self.languages])
        texts = (
            t for p in self.languages for t in (*self._data[p].src_sentences, *self._data[p].trg_sentences)
        )
        return with_truncation(scores, encoder, texts)


def bucc(
    *, langs: Iterable[str] | None = None, data_root=None, batch_size: int = 64, split: str = "sample"
) -> BuccTask:
    """BUCC 2018 mining F1 for each `xx-en` pair found under the data root's `bitext/bucc` or `$SENTKIT_BUCC`
    (archives as released or their extracted files); `de` alone means `de-en`. Default: every pair found."""
    folders = bucc_folders(data_root)
    available = bucc_pairs(folders, split)
    chosen = select_languages(
        "bucc",
        langs,
        available,
        default=available or SHIPPED_PAIRS,  # nothing found: the loader names the missing archive
        expand=lambda asked: [_bucc_pair(s) for s in asked],
        hint=f"BUCC files of other pairs go in {folders[-1]} or ${BUCC_ENV}",
    )
    return BuccTask(
        name="bucc",
        languages=chosen,
        data_root=Path(data_root) if data_root else None,
        batch_size=batch_size,
        split=split,
    )


def _bucc_pair(item: str) -> str:
    """`de`, `de-en` and `en-de` all name the pair `de-en` (BUCC pairs each language with English)."""
    src, _, trg = item.partition("-")
    if not trg:
        return f"{src}-en"
    return f"{trg}-en" if src == "en" else item
