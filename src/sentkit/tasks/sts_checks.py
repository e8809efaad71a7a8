"""STS data or similarities a Spearman cannot rank: warnings, not errors (the score is still reported).

- Gold scores nearly constant: `NEAR_CONSTANT_SHARE` of the pairs or more share one gold score (to
  `GOLD_TOLERANCE`): the correlation ranks mostly ties.
- Predicted similarities nearly constant: that share of the pairs lies within `SIMILARITY_TOLERANCE` of each
  other (float32 cosines of the same direction differ by about 1e-7, different pairs of a working model by
  1e-2 and more): the correlation ranks float noise (a set of pairs with the same sentence on both sides,
  or a collapsed model).
- Duplicates: more than `DUPLICATE_SHARE` of the pairs repeat an earlier pair (in either order): the
  Spearman and its interval count each copy as a new pair, so both claim a precision the data lacks.
docs/data-checks.md ("Degenerate STS data") says what each means for the user.
"""

from __future__ import annotations

import math

import numpy as np

from sentkit.datasets.sts_pairs import STSPairs

NEAR_CONSTANT_SHARE = 0.9
GOLD_TOLERANCE = 1e-6  # relative to the largest |gold|, at least 1: equal scores up to float noise
SIMILARITY_TOLERANCE = 1e-4
DUPLICATE_SHARE = 0.5


def data_warnings(key: str, pairs: STSPairs) -> list[str]:
    """What is degenerate in one set's gold scores and rows (`key` names the set; "all" = a whole file)."""
    where = "" if key == "all" else f"{key}: "
    n = len(pairs)
    notes = []
    gold = np.asarray(pairs.gold, dtype=np.float64)
    share, value = _densest_share(gold, GOLD_TOLERANCE * max(1.0, float(np.abs(gold).max(initial=0.0))))
    if n >= 2 and share >= NEAR_CONSTANT_SHARE:
        notes.append(
            f"{where}{round(share * n)} of {n} pairs have the gold score {value:g}: the Spearman ranks "
            "mostly ties and says little"
        )
    seen: dict[tuple[str, str], int] = {}
    repeats, first = 0, None
    for i, (a, b) in enumerate(zip(pairs.sent1, pairs.sent2)):
        pair = (a, b) if a <= b else (b, a)  # cosine is symmetric: (a, b) and (b, a) are one pair
        if pair in seen:
            repeats += 1
            first = first or (seen[pair] + 1, i + 1)
        else:
            seen[pair] = i
    if repeats > DUPLICATE_SHARE * n:
        notes.append(
            f"{where}{repeats} of {n} pairs repeat an earlier pair (first: pair {first[1]} repeats pair "
            f"{first[0]}): the Spearman and its interval count each copy as a new pair, so they claim a "
            "precision the data lacks"
        )
    return notes


def similarity_warning(key: str, similarities: np.ndarray) -> str | None:
    """A warning when the model's cosine similarities of one set's pairs are (nearly) constant."""
    where = "" if key == "all" else f"{key}: "
    sims = np.asarray(similarities, dtype=np.float64)
    share, value = _densest_share(sims, SIMILARITY_TOLERANCE)
    if len(sims) < 2 or share < NEAR_CONSTANT_SHARE:
        return None
    return (
        f"{where}the model gives {round(share * len(sims))} of {len(sims)} pairs the same cosine similarity "
        f"({value:.4f}, within {SIMILARITY_TOLERANCE:g}): the Spearman ranks float noise, not the model's "
        "judgement (are both sentences of a pair the same text, or has the model collapsed?)"
    )


def _densest_share(values: np.ndarray, tolerance: float) -> tuple[float, float]:
    """(largest share of `values` within `tolerance` of each other, the median of that group)."""
    v = np.sort(values[np.isfinite(values)])  # (n,)
    n = len(v)
    if n == 0:
        return 0.0, math.nan
    best, start = 1, 0
    lo = 0
    for hi in range(n):  # two pointers: the widest window of width <= tolerance
        while v[hi] - v[lo] > tolerance:
            lo += 1
        if hi - lo + 1 > best:
            best, start = hi - lo + 1, lo
    return best / n, float(np.median(v[start : start + best]))
