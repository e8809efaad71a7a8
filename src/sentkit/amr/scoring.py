"""Smatch (Cai & Knight 2013) with fixed restarts and seed, plus amrlib's detailed sub-scores.

smatch's hill climbing starts from random mappings, so the score of one pair can change between runs; we
seed Python's `random` once and score the pairs one after another (no process pool), so a run is repeatable.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from sentkit.amr import require


def one_line(graph) -> str:
    """A graph as the single-line PENMAN string smatch reads (no metadata)."""
    penman = require("penman")
    if isinstance(graph, str):
        return " ".join(graph.split())
    return penman.encode(penman.Graph(graph.triples, top=graph.top), indent=None)


def smatch_counts(predicted: Sequence[str], gold: Sequence[str], restarts: int = 4, seed: int = 0):
    """(matched, predicted, gold) triple counts summed over pairs: smatch's corpus-level numbers."""
    smatch = require("smatch", "smatch==1.0.4")
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted graphs for {len(gold)} gold graphs")
    previous = smatch.iteration_num
    smatch.iteration_num = restarts + 1  # smatch counts the smart initialisation as one of its iterations
    random.seed(seed)
    total = [0, 0, 0]
    try:
        for p, g in zip(predicted, gold):
            smatch.match_triple_dict.clear()  # its cache is keyed by node names, which repeat across pairs
            for k, n in enumerate(smatch.get_amr_match(p, g)):
                total[k] += n
    finally:
        smatch.iteration_num = previous
    return tuple(total)


def prf(matched: int, n_pred: int, n_gold: int) -> dict[str, float]:
    """Precision, recall and F1 in percent."""
    p = 100.0 * matched / n_pred if n_pred else 0.0
    r = 100.0 * matched / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f}


def smatch_score(predicted: Sequence, gold: Sequence, restarts: int = 4, seed: int = 0) -> dict[str, float]:
    """Corpus Smatch P/R/F (percent) of predicted vs gold graphs (penman Graphs or PENMAN strings)."""
    return prf(*smatch_counts([one_line(g) for g in predicted], [one_line(g) for g in gold], restarts, seed))


def detailed_scores(predicted: Sequence, gold: Sequence, restarts: int = 4, seed: int = 0) -> dict:
    """Smatch, Unlabeled, No WSD, Concepts, Frames, Named Ent., Negations, Wikification, Reentrancies, SRL
    (Damonte et al. 2017's breakdown as amrlib computes it), each as P/R/F in percent."""
    enhanced = require(
        "amrlib.evaluate.smatch_enhanced", "amrlib==0.8.1 (pip install --no-deps amrlib==0.8.1)"
    )
    pred = [one_line(g) for g in predicted]
    gold_lines = [one_line(g) for g in gold]
    scores = {"Smatch": prf(*smatch_counts(pred, gold_lines, restarts, seed))}
    scores["Unlabeled"] = prf(
        *smatch_counts(
            [enhanced.unlabel(p) for p in pred], [enhanced.unlabel(g) for g in gold_lines], restarts, seed
        )
    )
    scores["No WSD"] = prf(
        *smatch_counts(
            [enhanced.remove_wsd(p) for p in pred],
            [enhanced.remove_wsd(g) for g in gold_lines],
            restarts,
            seed,
        )
    )
    for name, (p, r, f) in enhanced.compute_subscores(pred, gold_lines).items():
        scores[name] = {"precision": 100.0 * p, "recall": 100.0 * r, "f1": 100.0 * f}
    random.seed(seed)
    for name, (p, r, f) in enhanced.compute_reentracy_srl(pred, gold_lines).items():
        scores[name] = {"precision": 100.0 * p, "recall": 100.0 * r, "f1": 100.0 * f}
    return scores
