"""JCSE stage-two data (sec. 4.4; loss of sec. 3.3): Japanese NLI (premise, entailment, contradiction) triplets.

JCSE trains stage two on JSNLI (533k pairs; its released TSV reads through `load_training_data`).
No Japanese NLI training set is offline here (XNLI has no Japanese), so JSICK stands in: train gives
215 triplets with symmetric contradictions, train + trial 278 (`jsick:train,trial`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from datasets import Dataset
from sentkit.datasets.sick_nli import JSICK_SPLITS, read_jsick_nli
from sentkit.errors import ConfigError
from sentkit.training_data.triplets import nli_triplets

# the data spec this module resolves: jsick[:SPLITS], SPLITS comma-separated JSICK splits
JSICK_SPEC = re.compile(r"jsick(?::(?P<splits>[a-z,]+))?")


def jsick_triplets(splits: Sequence[str] = ("train",), data_root: str | Path | None = None) -> Dataset:
    """(premise, entailment, contradiction) triplets from JSICK; never pass "test" when evaluating on `jsick`."""
    rows = [row for split in splits for row in read_jsick_nli(split, root=data_root)]
    return nli_triplets(rows)


def stage2_triplets(spec: str, data_root: str | Path | None = None) -> Dataset:
    """The triplets a `jsick[:train,trial]` data spec names."""
    match = JSICK_SPEC.fullmatch(spec.strip())
    if match is None:
        raise ConfigError(f"expected a JSICK data spec jsick[:SPLITS], got {spec!r}")
    splits = [s for s in (match["splits"] or "train").split(",") if s]
    unknown = [s for s in splits if s not in JSICK_SPLITS]
    if unknown:
        raise ConfigError(f"JSICK splits must be among {list(JSICK_SPLITS)}, got {unknown}")
    return jsick_triplets(splits, data_root=data_root)
