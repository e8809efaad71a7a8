"""STS 2017 test (Cer et al., 2017) plus the extended cross-lingual pairs of sentence-transformers.

All files here carry the gold score inline as third column (Readme_extended.txt) except track4b, the
separate WMT-news es-en set, which has only STS.gs. track6 tr-en lists 250 extra unscored pairs (blank third
column) after the 250 scored ones; they are skipped.
"""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.senteval_sts import read_senteval_sts
from sentkit.datasets.sts_pairs import STSPairs

# pair -> input file; the file's own sentence order may be the reverse of the pair name (cosine is symmetric)
PAIR_FILES: dict[str, str] = {
    "en-en": "STS.input.track5.en-en.txt",
    "ar-ar": "STS.input.track1.ar-ar.txt",
    "es-es": "STS.input.track3.es-es.txt",
    "en-ar": "STS.input.track2.ar-en.txt",
    "en-de": "STS.input.extended.de-en.txt",
    "en-tr": "STS.input.track6.tr-en.txt",
    "en-es": "STS.input.track4a.es-en.txt",
    "en-fr": "STS.input.extended.fr-en.txt",
    "en-it": "STS.input.extended.it-en.txt",
    "en-nl": "STS.input.extended.nl-en.txt",
}
DEFAULT_PAIRS: tuple[str, ...] = tuple(PAIR_FILES)
# Not among the default ten: the WMT news es-en subtrack (machine-translation-like, scored separately).
WMT_PAIR = "en-es-wmt"
WMT_FILES = ("STS.input.track4b.es-en.txt", "STS.gs.track4b.es-en.txt")


def read_sts17(folder: str | Path, pair: str) -> STSPairs:
    """The 250 scored pairs of one language pair (a key of PAIR_FILES, or WMT_PAIR)."""
    folder = Path(folder)
    if pair == WMT_PAIR:
        inp, gs = WMT_FILES
        return read_senteval_sts(folder / inp, folder / gs, lang="en-es", dataset="STS17.en-es-wmt")
    if pair not in PAIR_FILES:
        raise KeyError(f"unknown STS17 pair {pair!r}; known: {', '.join([*PAIR_FILES, WMT_PAIR])}")
    return read_senteval_sts(folder / PAIR_FILES[pair], None, lang=pair, dataset=f"STS17.{pair}")
