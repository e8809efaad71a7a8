"""Translated STS benchmark construction (JCSE sec. 4.1): translate, back-translate, keep faithful pairs.

Each sentence of an English STS file is translated (en -> ja), translated back (ja -> en) and scored with
BLEU-1 (sacrebleu, max n-gram order 1) against the original; a pair is kept when both of its sentences
reach `min_bleu`. The translator is pluggable: anything with `translate(texts, src, tgt) -> list[str]`,
or "module:attribute" naming one. No machine-translation model installs offline here: users bring theirs
(a Marian/NLLB checkpoint through transformers, a cloud API client, ...).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from sentkit.datasets.sts_pairs import STSPairs
from sentkit.errors import InvalidArgument

# sacrebleu tokenizer for the language the BLEU-1 compares in; 'char' works for any script
BLEU_TOKENIZE = {"ja": "ja-mecab", "zh": "zh", "ko": "ko-mecab"}


class Translator(Protocol):
    def translate(self, texts: Sequence[str], src: str, tgt: str) -> list[str]: ...


@dataclass
class TranslatedSTS:
    """The kept translated pairs, plus every pair's BLEU-1 (first, second sentence) and the keep mask."""

    pairs: STSPairs
    bleu: np.ndarray  # (n, 2) BLEU-1 of each original sentence vs its back-translation
    kept: np.ndarray  # (n,) bool
    translations: tuple[list[str], list[str]]
    back_translations: tuple[list[str], list[str]]


def load_translator(spec: str) -> Translator:
    """A translator from "module:attribute": a class or factory is called, an object with `translate` used."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise InvalidArgument(f"translator must be given as module:attribute, got {spec!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as err:
        raise InvalidArgument(f"translator {spec!r} cannot be loaded: {err}") from err
    translator = target() if isinstance(target, type) or not hasattr(target, "translate") else target
    if not hasattr(translator, "translate"):
        raise InvalidArgument(f"translator {spec!r} has no translate(texts, src, tgt) method")
    return translator


def bleu1(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a") -> np.ndarray:
    """Sentence-level BLEU-1 (0-100) of each hypothesis against its one reference (sacrebleu)."""
    try:
        from sacrebleu.metrics import BLEU
    except ImportError:
        raise ImportError("BLEU needs sacrebleu: pip install 'sentkit[ja]' (sacrebleu[ja]==2.6.0)") from None
    metric = BLEU(max_ngram_order=1, effective_order=True, tokenize=tokenize)
    return np.asarray(
        [metric.sentence_score(h, [r]).score for h, r in zip(hypotheses, references, strict=True)]
    )


def translate_sts(
    pairs: STSPairs,
    translator: Translator,
    src: str = "en",
    tgt: str = "ja",
    min_bleu: float = 50.0,
    tokenize: str | None = None,
    batch_size: int = 64,
) -> TranslatedSTS:
    """Translate both sentences of every pair src -> tgt, back-translate, keep pairs whose two sentences
    both reach BLEU-1 >= `min_bleu` against the originals (tokenizer: `BLEU_TOKENIZE` for src, else 13a)."""
    originals = list(pairs.sent1) + list(pairs.sent2)
    forward = _batched(translator, originals, src, tgt, batch_size)
    back = _batched(translator, forward, tgt, src, batch_size)
    scores = bleu1(back, originals, tokenize or BLEU_TOKENIZE.get(src, "13a"))
    n = len(pairs)
    bleu = np.stack([scores[:n], scores[n:]], axis=1)  # (n, 2)
    kept = bleu.min(axis=1) >= min_bleu
    keep = np.flatnonzero(kept)
    lang = tgt if "-" not in pairs.lang else f"{tgt}-{tgt}"
    out = STSPairs(
        [forward[i] for i in keep],
        [forward[n + i] for i in keep],
        pairs.gold[keep],
        lang,
        f"{pairs.dataset}.{tgt}",
    )
    return TranslatedSTS(out, bleu, kept, (forward[:n], forward[n:]), (back[:n], back[n:]))


def write_senteval_sts(pairs: STSPairs, folder: str | Path, name: str | None = None) -> tuple[Path, Path]:
    """STS.input.<name>.txt (sentence1<TAB>sentence2) and STS.gs.<name>.txt, SentEval's layout, atomically."""
    from sentkit.atomic import atomic_write_text

    name = name or pairs.dataset
    folder = Path(folder)
    for s in (*pairs.sent1, *pairs.sent2):
        if "\t" in s or "\n" in s:
            raise InvalidArgument(
                f"a translated sentence holds a tab or newline, which the format cannot: {s!r}"
            )
    inputs = "".join(f"{a}\t{b}\n" for a, b in zip(pairs.sent1, pairs.sent2, strict=True))
    gold = "".join(f"{g:g}\n" for g in pairs.gold)
    input_path, gold_path = folder / f"STS.input.{name}.txt", folder / f"STS.gs.{name}.txt"
    atomic_write_text(input_path, inputs)
    atomic_write_text(gold_path, gold)
    return input_path, gold_path


def _batched(translator: Translator, texts: list[str], src: str, tgt: str, batch_size: int) -> list[str]:
    out: list[str] = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        got = list(translator.translate(chunk, src, tgt))
        if len(got) != len(chunk):
            raise ValueError(f"translator returned {len(got)} texts for {len(chunk)} ({src} -> {tgt})")
        out += [t.replace("\t", " ").replace("\n", " ").strip() for t in got]
    return out


def translate_sts_file(
    input_path: str | Path,
    gold_path: str | Path | None,
    translator: str | Translator,
    out: str | Path,
    src: str = "en",
    tgt: str = "ja",
    min_bleu: float = 50.0,
    tokenize: str | None = None,
    batch_size: int = 64,
) -> dict:
    """One SentEval STS file -> `<out>/STS.input.<name>.txt` + `STS.gs.<name>.txt` of the kept pairs, and
    `<out>/<name>.bleu.json` (per-pair BLEU-1 of both sentences, back-translations, kept flags, counts)."""
    from sentkit.atomic import atomic_write_json, check_writable_dir
    from sentkit.datasets.senteval_sts import read_senteval_sts

    check_writable_dir(out)
    pairs = read_senteval_sts(input_path, gold_path, lang=src)
    if isinstance(translator, str):
        translator = load_translator(translator)
    result = translate_sts(pairs, translator, src, tgt, min_bleu, tokenize, batch_size)
    write_senteval_sts(result.pairs, out, pairs.dataset)
    summary = {
        "input": str(input_path),
        "pairs": len(pairs),
        "kept": int(result.kept.sum()),
        "min_bleu": min_bleu,
        "tokenize": tokenize or BLEU_TOKENIZE.get(src, "13a"),
        "mean_bleu1": float(result.bleu.mean()) if len(pairs) else 0.0,
        "rows": [
            {
                "bleu1": [round(float(x), 2) for x in result.bleu[i]],
                "kept": bool(result.kept[i]),
                "translation": [result.translations[0][i], result.translations[1][i]],
                "back_translation": [result.back_translations[0][i], result.back_translations[1][i]],
            }
            for i in range(len(pairs))
        ],
    }
    atomic_write_json(Path(out) / f"{pairs.dataset}.bleu.json", summary)
    return summary
