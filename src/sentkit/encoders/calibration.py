"""Real sentences for calibrating static int8 exports, and held-out ones for checking every export.

Calibration reads STS-B train (English, first sentence of each sampled pair) and XNLI dev premises in eight
languages; the check reads STS-B dev (second sentences) and XNLI dev hypotheses. The two sets share no
sentence, and neither holds a sentence of STS-B test, STS17 or Tatoeba: the STS sets repeat sentences across
their splits and years, so every sentence found in those test files is dropped.
Both keep only the model's training languages when it declares them, so an English model is calibrated and
checked on English. Rows are taken at an even stride, so the sets are the same on every machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sentkit.datasets.nli import read_xnli
from sentkit.datasets.root import data_file, data_root
from sentkit.datasets.stsb import read_stsb
from sentkit.errors import MissingDataError

# XNLI dev languages read beside English: eight scripts and families e5's training covers
XNLI_LANGS = ("de", "es", "fr", "ru", "ar", "zh", "hi", "tr")
DEFAULT_SIZE = 300


@dataclass(frozen=True)
class SentenceSet:
    """Sentences and where each group came from ({description: count}), for an export's metadata."""

    sentences: tuple[str, ...]
    sources: dict[str, int]

    def record(self) -> dict:
        digest = hashlib.sha256("\n".join(self.sentences).encode("utf-8")).hexdigest()
        return {"sentences": len(self.sentences), "sources": dict(self.sources), "sha256": digest}


def calibration_set(
    languages: tuple[str, ...] | None, size: int = DEFAULT_SIZE, root: str | Path | None = None
) -> SentenceSet:
    """About `size` real sentences to calibrate activation ranges on; a MissingDataError names the file
    when the benchmark data is not there (static int8 needs real sentences, not a stand-in)."""
    groups = {
        "STS-B train, sentence 1": lambda: _stsb("sts-train.csv", 0, root),
        **{f"XNLI dev-{lang}, premise": _xnli_reader(lang, 0, root) for lang in XNLI_LANGS},
    }
    return _sample(groups, languages, size, root)


def check_set(
    languages: tuple[str, ...] | None, size: int = DEFAULT_SIZE, root: str | Path | None = None
) -> SentenceSet:
    """About `size` real sentences, none of them in `calibration_set`, to compare an export with fp32."""
    groups = {
        "STS-B dev, sentence 2": lambda: _stsb("sts-dev.csv", 1, root),
        **{f"XNLI dev-{lang}, hypothesis": _xnli_reader(lang, 1, root) for lang in XNLI_LANGS},
    }
    return _sample(groups, languages, size, root)


def _stsb(name: str, column: int, root) -> list[str]:
    pairs = read_stsb(data_file("sts", "STSBenchmark", name, root=root))
    return list(pairs.sent1 if column == 0 else pairs.sent2)


def _test_sentences(root) -> set[str]:
    """Every sentence of STS-B test, STS17 and the Tatoeba sets that are there (their files as stored)."""
    pairs = read_stsb(data_file("sts", "STSBenchmark", "sts-test.csv", root=root))
    found = {*pairs.sent1, *pairs.sent2}
    base = Path(root) if root is not None else data_root()
    for path in sorted((base / "sts" / "STS17-test").glob("STS.input.*")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            found.update(part.strip() for part in line.split("\t")[:2])
    for path in sorted((base / "bitext" / "tatoeba").glob("tatoeba.*")):
        found.update(line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines())
    return found


def _xnli_reader(lang: str, column: int, root):
    return lambda: [row.premise if column == 0 else row.hypothesis for row in read_xnli(lang, "dev", root)]


def _language(description: str) -> str:
    return description.split(",")[0].rsplit("-", 1)[1] if description.startswith("XNLI") else "en"


def _sample(groups: dict, languages: tuple[str, ...] | None, size: int, root) -> SentenceSet:
    """An even share of `size` from each group in the model's languages (all groups when none is)."""
    kept = {d: read for d, read in groups.items() if languages is None or _language(d) in languages}
    kept = kept or groups
    test = _test_sentences(root)
    share = max(1, size // len(kept))
    sentences: list[str] = []
    sources: dict[str, int] = {}
    seen: set[str] = set(test)  # never a test sentence, never one twice
    for description, read in kept.items():
        rows = list(dict.fromkeys(s for s in read() if s.strip() and s not in seen))  # unique, in file order
        if not rows:
            raise MissingDataError(description, "no sentences read; check the benchmark data folder")
        stride = max(1, len(rows) // share)
        picked = rows[::stride][:share]
        sentences += picked
        seen.update(picked)
        sources[f"{description}, one unique row in {stride}"] = len(picked)
    return SentenceSet(tuple(sentences), sources)
