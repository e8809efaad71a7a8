"""Train the AMR encoder of Cai et al., "Retrofitting Multilingual Sentence Embeddings with Abstract
Meaning Representation" (EMNLP 2022): supervised SimCSE (their eq. 1, sec. 3.1; the loss is
`sentkit.objectives.supervised`) on mixed graph triplets (sec. 4.1, Algorithm 1).

Steps: parse the NLI triplets with the offline parser and mix them (`triplets.mixed_triplets`), write them
as the trainer's `.jsonl`, build the start model (the base encoder with its own pooling, its vocabulary
extended with frequent relation/frame tokens), then run the one training path, `sentkit.training.train`,
with the `simcse-sup` objective on exactly the vectors the encoder returns: the paper's h = f(x) is the
encoder's output (sec. 3.1; [CLS] of BERT, sec. 6.2), with no projection head trained and dropped.

Data construction, in `sentkit/amr/`: `parse.py` (the offline parsers; rules in `rules.py`, `lexicon.py`),
`linearize.py` (graphs -> token sequences, sec. 4.1), `triplets.py` (Algorithm 1's mixed triplets from XNLI
dev and JSICK), `io.py` (AMR files). The trained encoder is `encoder.py`'s `AmrEncoder`; combining it with a
text encoder (sec. 4.2) is `sentkit/encoders/retrofit.py`, named `retrofit:<text>+<folder>` in
`sentkit.load_encoder`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sentkit.amr.encoder import AMR_CONFIG, AmrEncoder, extend_vocabulary
from sentkit.amr.linearize import linearize, vocabulary_tokens
from sentkit.amr.parse import get_parser
from sentkit.amr.triplets import TEXT_LANGS, Triplet, mixed_triplets, parallel_triplets, write_jsonl
from sentkit.atomic import atomic_write_bytes, atomic_write_json


@dataclass
class AmrTrainConfig:
    """The AMR-encoder recipe; defaults follow the paper where it gives them (q = 0.5, English text only,
    no head), and the base model's own pooling where the paper's start (raw BERT, [CLS]) is not ours."""

    base: str = "minilm-en"  # offline model with the BERT-uncased WordPiece vocabulary
    # "auto": the base's own pooling (its sentence-transformers modules: mean for MiniLM; [CLS] for a plain
    # transformers checkpoint such as the paper's BERT); "cls" / "mean" override it
    pooling: str = "auto"
    mlp_head: bool = False  # SimCSE's MLP over [CLS] in training only, dropped afterwards (not in the paper)
    xnli_langs: tuple[str, ...] = ("en",)  # XNLI dev languages with an offline parser
    jsick: bool = True  # add JSICK train (Japanese) triplets
    q: float = 0.5  # Algorithm 1: probability that an English slot keeps its text
    text_langs: tuple[str, ...] | None = TEXT_LANGS  # languages that may keep text (Algorithm 1); None: all
    min_count: int = 5  # vocabulary extension: relation/frame tokens seen at least this often
    parser: str = "rules"
    max_length: int = 128  # linearised graphs are ~3x longer than their sentences
    batch_size: int = 32
    lr: float = 3e-5
    epochs: float = 1.0
    max_steps: int = -1
    max_examples: int = 0  # > 0: keep the first N parallel examples (quick runs)
    seed: int = 0


def build_start_model(
    base: str, tokens: Sequence[str], out: str | Path, max_length: int = 128, pooling: str = "auto"
) -> Path:
    """`base` with `tokens` added to its vocabulary, saved as the AMR encoder's start.

    The start keeps every module the base ships (pooling, Dense, normalisation), so on text it encodes
    exactly as the base does; `pooling` other than "auto" replaces the base's pooling.
    """
    from sentkit.encoders import load_encoder
    from sentkit.encoders.transformer import POOLINGS, TransformerEncoder

    loaded = load_encoder(base)
    if not isinstance(loaded, TransformerEncoder):
        raise ValueError(f"base {base!r} ({type(loaded).__name__}) is not a trainable transformer encoder")
    if pooling != "auto" and (pooling not in POOLINGS or pooling == "cls_mlp"):
        raise ValueError(f"pooling must be auto or one of {POOLINGS[:1] + POOLINGS[2:]}, got {pooling!r}")
    start = TransformerEncoder(
        loaded.model,
        loaded.tokenizer,
        pooling=loaded.pooling if pooling == "auto" else pooling,
        max_length=max_length,
        prefix=loaded.prefix,
        normalize=loaded.normalize,
        name=f"amr-{base}",
        dense=list(loaded.dense),
        include_prompt=loaded.include_prompt,
        lowercase=loaded.lowercase,
    )
    added = extend_vocabulary(start, tokens)
    return AmrEncoder(start).save(out, base=base, added_tokens=added, pooling=start.pooling)


def training_pooling(start_pooling: str, mlp_head: bool = False) -> str:
    """The `TrainConfig.pooling` that trains the start model on the vectors it encodes with.

    Passed explicitly because the trainer's "auto" gives a [CLS] model SimCSE's training-only MLP head;
    `mlp_head=True` asks for that head (over [CLS] only).
    """
    if mlp_head:
        if start_pooling != "cls":
            raise ValueError(
                f"mlp_head trains SimCSE's head over [CLS]: set pooling='cls' (got {start_pooling!r})"
            )
        return "cls_mlp"
    return "cls" if start_pooling == "cls" else "auto"  # "auto" keeps any other pooling as it is


def linearizer(parser: str = "rules"):
    """`(sentences, lang) -> linearised graphs` with the named parser."""

    def run(sentences: Sequence[str], lang: str) -> list[str]:
        return [linearize(g) for g in get_parser(parser, lang)(sentences)]

    return run


def train_amr_encoder(
    config: AmrTrainConfig,
    output_dir: str | Path,
    eval_task=None,
    overwrite: bool = True,
    examples: Sequence[Mapping[str, Triplet]] | None = None,
    linearize: Callable[[Sequence[str], str], list[str]] | None = None,
) -> Path:
    """Build the mixed triplets and the start model under `output_dir`, train, and return `<output_dir>/best`.

    `examples` (language -> (anchor, entailment, contradiction)) replace XNLI dev + JSICK, and `linearize`
    (`(sentences, lang) -> linearised graphs`) replaces `config.parser`: your own parallel triplets or parser.
    """
    from sentkit.training import TrainConfig, train

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if examples is None:
        examples = parallel_triplets(config.xnli_langs, jsick=config.jsick)
    examples = list(examples)
    if config.max_examples > 0:
        examples = (
            examples[: config.max_examples // 2]
            + examples[-(config.max_examples - config.max_examples // 2) :]
        )
    rows = mixed_triplets(
        examples,
        linearize or linearizer(config.parser),
        q=config.q,
        seed=config.seed,
        text_langs=config.text_langs,
    )
    data = write_jsonl(rows, out / "triplets.jsonl")
    graphs = [
        r[slot] for r in rows for slot in ("anchor", "positive", "negative") if r[slot].startswith("( ")
    ]
    tokens = vocabulary_tokens(graphs, config.min_count)
    start = build_start_model(config.base, tokens, out / "start", config.max_length, config.pooling)
    start_pooling = json.loads((start / AMR_CONFIG).read_text(encoding="utf-8"))["pooling"]
    train_config = TrainConfig(
        model=str(start),
        objective="simcse-sup",
        data=str(data),
        output_dir=str(out / "run"),
        pooling=training_pooling(start_pooling, config.mlp_head),
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
    atomic_write_bytes(best / AMR_CONFIG, (start / AMR_CONFIG).read_bytes())
    summary = {
        "examples": len(examples),
        "rows": len(rows),
        "vocabulary_tokens": len(tokens),
        "start_pooling": start_pooling,
        **vars(config),
    }
    atomic_write_json(out / "amr_training.json", summary)
    return best
