"""T5 span corruption (Raffel et al. 2020, sec. 3.1.4) and domain fine-tuning of a seq2seq infiller (JCSE sec. 3.2).

JCSE adapts a Japanese T5 to the target domain with T5's own objective: 15% of the tokens are dropped in
spans of mean length 3, each span replaced by one sentinel in the input; the target lists the sentinels
followed by the tokens they hide. Optimizer: Adafactor at a constant 1e-3 (T5's fine-tuning setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NOISE_DENSITY = 0.15  # T5 / JCSE: fraction of tokens corrupted
MEAN_SPAN = 3.0  # T5 / JCSE: mean corrupted span length


def random_spans_mask(
    length: int, rng: np.random.Generator, noise_density: float = NOISE_DENSITY, mean_span: float = MEAN_SPAN
) -> np.ndarray:
    """Boolean (length,) mask: round(length * density) noisy tokens in round(noisy / mean_span) spans,
    span lengths and the gaps between them split at random (every span and inner gap non-empty)."""
    n_noise = min(max(int(round(length * noise_density)), 1), length - 1) if length > 1 else 0
    n_spans = max(min(int(round(n_noise / mean_span)), n_noise, length - n_noise), 1) if n_noise else 0
    mask = np.zeros(length, dtype=bool)
    if not n_spans:
        return mask
    noise_lengths = _random_partition(n_noise, n_spans, rng)
    gap_lengths = _random_partition(length - n_noise, n_spans, rng)  # the gap before each span
    cursor = 0
    for gap, span in zip(gap_lengths, noise_lengths, strict=True):
        cursor += gap
        mask[cursor : cursor + span] = True
        cursor += span
    return mask


def _random_partition(total: int, parts: int, rng: np.random.Generator) -> list[int]:
    """`total` split into `parts` positive integers, uniformly over compositions."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=parts - 1, replace=False)) if parts > 1 else []
    edges = [0, *cuts, total]
    return [int(b - a) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def corrupt_spans(
    ids: Sequence[int], sentinel_ids: Sequence[int], eos_id: int, rng: np.random.Generator, **mask_options
) -> tuple[list[int], list[int]]:
    """(input, target) token ids: "a <s0> d <s1> g </s>" and "<s0> b c <s1> e f </s>" for a seven-token text."""
    mask = random_spans_mask(len(ids), rng, **mask_options)
    inputs: list[int] = []
    targets: list[int] = []
    span = -1
    for i, token in enumerate(ids):
        if mask[i]:
            if i == 0 or not mask[i - 1]:
                span += 1
                if span >= len(sentinel_ids):
                    raise ValueError(
                        f"need more than {len(sentinel_ids)} sentinel tokens for {len(ids)} tokens"
                    )
                inputs.append(sentinel_ids[span])
                targets.append(sentinel_ids[span])
            targets.append(token)
        else:
            inputs.append(token)
    return inputs + [eos_id], targets + [eos_id]


def sentinel_token_ids(tokenizer, sentinel: str = "<extra_id_{}>", limit: int = 100) -> list[int]:
    """Ids of sentinel.format(0), sentinel.format(1), ... as far as the tokenizer knows them."""
    ids = []
    for i in range(limit):
        token_id = tokenizer.convert_tokens_to_ids(sentinel.format(i))
        if token_id is None or token_id == tokenizer.unk_token_id:
            break
        ids.append(token_id)
    if not ids:
        raise ValueError(f"tokenizer has no sentinel tokens of the form {sentinel.format(0)!r}")
    return ids


@dataclass
class SpanCorruptionCollator:
    """Tokenizes sentences and corrupts them afresh each time a batch is drawn (T5's dynamic noise)."""

    tokenizer: object
    max_length: int = 64
    seed: int = 0
    sentinel: str = "<extra_id_{}>"

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        self._sentinels = sentinel_token_ids(self.tokenizer, self.sentinel)

    def __call__(self, rows: list[dict]) -> dict:
        import torch

        pad = self.tokenizer.pad_token_id
        pairs = []
        for row in rows:
            ids = self.tokenizer(
                row["text"], add_special_tokens=False, truncation=True, max_length=self.max_length
            )
            pairs.append(
                corrupt_spans(ids["input_ids"], self._sentinels, self.tokenizer.eos_token_id, self._rng)
            )
        width_in = max(len(x) for x, _ in pairs)
        width_out = max(len(y) for _, y in pairs)
        input_ids = torch.full((len(pairs), width_in), pad, dtype=torch.long)  # (batch, in_len)
        labels = torch.full((len(pairs), width_out), -100, dtype=torch.long)  # (batch, out_len), -100 ignored
        for i, (x, y) in enumerate(pairs):
            input_ids[i, : len(x)] = torch.tensor(x)
            labels[i, : len(y)] = torch.tensor(y)
        return {"input_ids": input_ids, "attention_mask": (input_ids != pad).long(), "labels": labels}


def finetune_infiller(
    model,
    tokenizer,
    sentences: Sequence[str],
    output_dir: str | Path,
    max_steps: int = 1000,
    batch_size: int = 32,
    lr: float = 1e-3,
    max_length: int = 64,
    seed: int = 0,
    logging_steps: int = 50,
) -> list[float]:
    """Fine-tune a seq2seq model on `sentences` by span corruption with Adafactor (constant `lr`);
    saves model + tokenizer to `output_dir` and returns the logged training losses."""
    from transformers import Trainer, TrainingArguments

    from datasets import Dataset

    if not sentences:
        raise ValueError("no sentences to fine-tune the infiller on")
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        optim="adafactor",  # transformers' Adafactor with relative_step/scale_parameter off: a fixed lr
        lr_scheduler_type="constant",
        logging_steps=logging_steps,
        save_strategy="no",
        report_to=[],
        seed=seed,
        remove_unused_columns=False,
        disable_tqdm=True,
        use_cpu=not _cuda(),
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"text": list(sentences)}),
        data_collator=SpanCorruptionCollator(tokenizer, max_length=max_length, seed=seed),
    )
    trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return [row["loss"] for row in trainer.state.log_history if "loss" in row]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
