"""(anchor, entailment, contradiction) graph triplets for the AMR encoder, with Cai et al.'s mixed training.

Algorithm 1 of the paper: for every sentence of a batch, draw a language l; if l is not English, the
sentence becomes the graph parsed from its translation into l; if l is English, draw q ~ U(0, 1) and parse
the sentence only if q > 0.5, else keep its English text. So only English slots ever keep text (half of
them), and graphs of different languages of one sentence meet in one batch. Here each slot draws l among
the languages its example exists in. XNLI dev rows are translations of each other, so row k of every
language is one parallel triplet; JSICK (Japanese) has no other language here, so its slots are always
graphs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from sentkit.datasets.columns import ANCHOR, LANG, NEGATIVE, POSITIVE
from sentkit.datasets.lines import read_lines
from sentkit.datasets.nli import NLI_LABELS, NliRow, read_xnli
from sentkit.errors import DataFormatError

SLOTS = (ANCHOR, POSITIVE, NEGATIVE)
JSICK_TRAIN = ("sts-ja", "JSICK", "SICK_train.txt")
Triplet = tuple[str, str, str]
TEXT_LANGS = ("en",)  # Algorithm 1: only English sentences may stay text


def read_sick_entailment(path: str | Path, lang: str = "ja") -> list[NliRow]:
    """SICK / JSICK pairs with their entailment judgment (columns found by header name)."""
    path = Path(path)
    lines = [ln for ln in read_lines(path) if ln.strip()]
    header = lines[0].split("\t") if lines else []
    needed = ("sentence_A", "sentence_B", "entailment_judgment")
    if any(c not in header for c in needed):
        raise DataFormatError(path, 1, f"expected a header row with columns {', '.join(needed)}")
    a, b, label = (header.index(c) for c in needed)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataFormatError(
                path, number, f"expected {len(header)} tab-separated fields, got {len(fields)}"
            )
        judgment = fields[label].strip().lower()
        if judgment not in NLI_LABELS:
            raise DataFormatError(
                path, number, f"expected an entailment judgment in {NLI_LABELS}, got {judgment!r}"
            )
        rows.append(NliRow(fields[a], fields[b], judgment, lang))
    return rows


def _triplets(rows: Sequence[NliRow]) -> list[Triplet]:
    from sentkit.training_data.triplets import nli_triplets

    data = nli_triplets(rows)
    return list(zip(data[ANCHOR], data[POSITIVE], data[NEGATIVE]))


def parallel_triplets(
    xnli_langs: Sequence[str] = ("en",), jsick: bool = False, data_root: str | Path | None = None
) -> list[dict[str, Triplet]]:
    """Triplets keyed by language: XNLI dev row k of every language in `xnli_langs` is one example
    (830 per language); with `jsick`, JSICK train's Japanese triplets are added as single-language examples."""
    examples: list[dict[str, Triplet]] = []
    per_lang = {lang: _triplets(read_xnli(lang, "dev", data_root)) for lang in xnli_langs}
    sizes = {lang: len(t) for lang, t in per_lang.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"XNLI dev triplets are not parallel across languages: {sizes}")
    for k in range(min(sizes.values(), default=0)):
        examples.append({lang: per_lang[lang][k] for lang in xnli_langs})
    if jsick:
        from sentkit.datasets.root import data_file

        examples += [
            {"ja": t} for t in _triplets(read_sick_entailment(data_file(*JSICK_TRAIN, root=data_root)))
        ]
    return examples


def mixed_triplets(
    examples: Sequence[Mapping[str, Triplet]],
    linearize: Callable[[Sequence[str], str], list[str]],
    q: float = 0.5,
    seed: int = 0,
    text_langs: Collection[str] | None = TEXT_LANGS,
) -> list[dict[str, str]]:
    """Algorithm 1's mixing: each slot takes a random language's graph, except that a slot in a language
    of `text_langs` keeps its text with probability q (the paper: English, q = 0.5).

    `text_langs=None` lets a slot of any language keep its text (an earlier reading of Algorithm 1, kept
    as an option). `linearize(sentences, lang)` returns linearised graphs; every needed sentence is parsed
    once per language. Returns rows with anchor, positive, negative and lang (the anchor's language).
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be a probability, got {q}")
    rng = random.Random(seed)
    picks = []  # (example, [(lang, keep_text) per slot])
    needed: dict[str, set[str]] = {}
    for example in examples:
        langs = sorted(example)
        # both draws on every slot, so a seed picks the same languages whatever text_langs is
        draws = [(rng.choice(langs), rng.random() < q) for _ in SLOTS]
        choice = [(lang, keep and (text_langs is None or lang in text_langs)) for lang, keep in draws]
        picks.append((example, choice))
        for slot, (lang, keep_text) in enumerate(choice):
            if not keep_text:
                needed.setdefault(lang, set()).add(example[lang][slot])
    graphs: dict[tuple[str, str], str] = {}
    for lang, sentences in needed.items():
        ordered = sorted(sentences)
        graphs.update({(lang, s): g for s, g in zip(ordered, linearize(ordered, lang))})
    rows = []
    for example, choice in picks:
        row = {}
        for slot, (name, (lang, keep_text)) in enumerate(zip(SLOTS, choice)):
            sentence = example[lang][slot]
            row[name] = sentence if keep_text else graphs[(lang, sentence)]
        row[LANG] = choice[0][0]
        rows.append(row)
    return rows


def write_jsonl(rows: Sequence[Mapping[str, str]], path: str | Path) -> Path:
    """The rows as the trainer's `.jsonl` triplet format (anchor, positive, negative keys)."""
    from sentkit.atomic import atomic_write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows))
    return path
