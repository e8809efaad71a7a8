"""Train the AMR encoder of Cai et al., "Retrofitting Multilingual Sentence Embeddings with Abstract
Meaning Representation" (EMNLP 2022): supervised SimCSE (their eq. 1, sec. 3.1; the loss is
`sentkit.objectives.supervised`) on mixed graph triplets (sec. 4.1, Algorithm 1).

Steps: parse the NLI triplets with the offline parser and mix them (`triplets.mixed_triplets`), write them
as the trainer's `.jsonl`, build the start model (a [CLS]-pooled BERT-uncased-vocabulary transformer whose
vocabulary is extended with frequent relation/frame tokens), then run the one training path,
`sentkit.training.train`, with the `simcse-sup` objective.

Data construction, in `sentkit/amr/`: `parse.py` (the offline parsers; rules in `rules.py`, `lexicon.py`),
`linearize.py` (graphs -> token sequences, sec. 4.1), `triplets.py` (Algorithm 1's mixed triplets from XNLI
dev and JSICK), `io.py` (AMR files). The trained encoder is `encoder.py`'s `AmrEncoder`; combining it with a
text encoder (sec. 4.2) is `sentkit/encoders/retrofit.py`, named `retrofit:<text>+<folder>` in
`sentkit.load_encoder`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sentkit.amr.encoder import AMR_CONFIG, AmrEncoder, extend_vocabulary
from sentkit.amr.linearize import linearize, vocabulary_tokens
from sentkit.amr.parse import get_parser
from sentkit.amr.triplets import mixed_triplets, parallel_triplets, write_jsonl


@dataclass
class AmrTrainConfig:
    """The AMR-encoder recipe; defaults follow the paper where it gives them (q = 0.5, [CLS], BERT uncased)."""

    base: str = "minilm-en"  # offline model with the BERT-uncased WordPiece vocabulary
    xnli_langs: tuple[str, ...] = ("en",)  # XNLI dev languages with an offline parser
    jsick: bool = True  # add JSICK train (Japanese) triplets
    q: float = 0.5  # Algorithm 1: probability a slot keeps its original text
    min_count: int = 5  # vocabulary extension: relation/frame tokens seen at least this often
    parser: str = "rules"
    max_length: int = 128  # linearised graphs are ~3x longer than their sentences
    batch_size: int = 32
    lr: float = 3e-5
    epochs: float = 1.0
    max_steps: int = -1
    max_examples: int = 0  # > 0: keep the first N parallel examples (quick runs)
    seed: int = 0


def build_start_model(base: str, tokens: Sequence[str], out: str | Path, max_length: int = 128) -> Path:
    """`base` re-pooled on [CLS] with `tokens` added to its vocabulary, saved as the AMR encoder's start."""
    from sentkit.encoders import load_encoder
    from sentkit.encoders.transformer import TransformerEncoder

    loaded = load_encoder(base)
    start = TransformerEncoder(
        loaded.model, loaded.tokenizer, pooling="cls", max_length=max_length, name=f"amr-{base}"
    )
    added = extend_vocabulary(start, tokens)
    return AmrEncoder(start).save(out, base=base, added_tokens=added)


def linearizer(parser: str = "rules"):
    """`(sentences, lang) -> linearised graphs` with the named parser."""

    def run(sentences: Sequence[str], lang: str) -> list[str]:
        return [linearize(g) for g in get_parser(parser, lang)(sentences)]

    return run


def train_amr_encoder(
    config: AmrTrainConfig, output_dir: str | Path, eval_task=None, overwrite: bool = True
) -> Path:
    """Build the mixed triplets and the start model under `output_dir`, train, and return `<output_dir>/best`."""
    from sentkit.training import TrainConfig, train

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    examples = parallel_triplets(config.xnli_langs, jsick=config.jsick)
    if config.max_examples > 0:
        examples = (
            examples[: config.max_examples // 2]
            + examples[-(config.max_examples - config.max_examples // 2) :]
        )
    rows = mixed_triplets(examples, linearizer(config.parser), q=config.q, seed=config.seed)
    data = write_jsonl(rows, out / "triplets.jsonl")
    graphs = [
        r[slot] for r in rows for slot in ("anchor", "positive", "negative") if r[slot].startswith("( ")
    ]
    tokens = vocabulary_tokens(graphs, config.min_count)
    start = build_start_model(config.base, tokens, out / "start", config.max_length)
    train_config = TrainConfig(
        model=str(start),
        objective="simcse-sup",
        data=str(data),
        output_dir=str(out / "run"),
        pooling="cls_mlp",
        max_length=config.max_length,
        batch_size=config.batch_size,
        lr=config.lr,
        epochs=config.epochs,
        max_steps=config.max_steps,
        seed=config.seed,
        eval_task="",  # a sentence task would feed raw text to a graph encoder; the last model is kept
        save_steps=10_000,
        logging_steps=5,
        overwrite=overwrite,
    )
    run_dir = train(train_config, eval_task=eval_task)
    best = run_dir / "best"
    shutil.copy(start / AMR_CONFIG, best / AMR_CONFIG)
    summary = {"examples": len(examples), "rows": len(rows), "vocabulary_tokens": len(tokens), **vars(config)}
    (out / "amr_training.json").write_text(json.dumps(summary, indent=2, default=list), encoding="utf-8")
    return best
