"""Seq2seq contradiction generator (JCSE sec. 3.2): a domain-tuned T5 fills each sentinel by beam search.

Needs a T5/mT5-style checkpoint (a local directory or hub name) whose tokenizer knows the sentinels
(`<extra_id_0>`, ...); JCSE uses a Japanese T5 fine-tuned by `span_corruption.finetune_infiller`.
No such weights install offline here; `ChunkSwapGenerator` is the offline stand-in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sentkit.training_data.jcse.chunk_masking import T5_SENTINEL, MaskedSentence
from sentkit.training_data.jcse.span_corruption import sentinel_token_ids


def sentinel_order_processor(
    sentinel_ids: Sequence[int], eos_id: int, n_chunks: Sequence[int], beams: int, max_new_tokens: int
):
    """A logits processor that keeps beams well formed: "<s0> text <s1> text ... <s_n-1> text </s>".

    Row r of the (batch * beams) generation belongs to sentence r // beams with n = n_chunks[...] masks:
    the first token must be <s0>; right after a sentinel a content token must follow; otherwise the only
    sentinel allowed is the next one, and end-of-sequence only once all n have been filled. When the
    token budget left is just enough to finish, the next sentinel (or end-of-sequence) is forced.
    """
    import torch
    from transformers import LogitsProcessor

    position = {int(t): i for i, t in enumerate(sentinel_ids)}

    class SentinelOrder(LogitsProcessor):
        def __init__(self) -> None:
            self.start_len: int | None = None

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            if self.start_len is None:
                self.start_len = input_ids.shape[1]
            left = max_new_tokens - (
                input_ids.shape[1] - self.start_len
            )  # tokens still allowed, this one included
            banned = torch.zeros_like(scores, dtype=torch.bool)  # (rows, vocab)
            banned[:, list(sentinel_ids)] = True
            forced: dict[int, int] = {}
            for row in range(input_ids.shape[0]):
                n = n_chunks[row // beams]
                tokens = input_ids[row].tolist()
                emitted = sum(1 for t in tokens if t in position)
                if emitted == 0:
                    forced[row] = sentinel_ids[0]
                elif tokens[-1] in position:
                    banned[row, eos_id] = True  # a sentinel needs a filler before anything else
                elif emitted < n:
                    if left <= 2 * (n - emitted) + 1:  # sentinel + filler each, then end-of-sequence
                        forced[row] = sentinel_ids[emitted]
                    banned[row, sentinel_ids[emitted]] = False
                    banned[row, eos_id] = True
                elif left <= 1:
                    forced[row] = eos_id
            scores = scores.masked_fill(banned, float("-inf"))
            for row, token in forced.items():
                scores[row] = float("-inf")
                scores[row, token] = 0.0
            return scores

    return SentinelOrder()


class T5InfillGenerator:
    """k contradictions per anchor: the top beams whose fillers are all non-empty and not all the original.

    Decoding is constrained by `sentinel_order_processor` so every beam names each sentinel once, in order.
    """

    name = "t5-infill"

    def __init__(
        self,
        model,
        tokenizer=None,
        num_beams: int = 8,
        max_new_tokens: int = 64,
        batch_size: int = 16,
        sentinel: str = T5_SENTINEL,
        device: str | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        if isinstance(model, str):
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
            model = AutoModelForSeq2SeqLM.from_pretrained(model)
        if tokenizer is None:
            raise ValueError("pass the tokenizer with a model object")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.num_beams = num_beams
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.sentinel = sentinel
        self._sentinel_re = re.compile(re.escape(sentinel).replace(r"\{\}", r"(\d+)"))
        self._strip = [t for t in (tokenizer.pad_token, tokenizer.eos_token) if t]
        self._sentinel_ids = sentinel_token_ids(tokenizer, sentinel)

    def parse(self, output: str, n_chunks: int) -> list[str] | None:
        """Fillers for sentinels 0..n-1 from a decoded target "<s0> a <s1> b </s>"; None if any is missing."""
        for token in self._strip:
            output = output.replace(token, "")
        pieces = self._sentinel_re.split(output)  # [before, id0, text0, id1, text1, ...]
        fillers: dict[int, str] = {}
        for number, text in zip(pieces[1::2], pieces[2::2], strict=True):
            fillers.setdefault(int(number), text.strip())
        chosen = [fillers.get(i, "") for i in range(n_chunks)]
        return chosen if all(chosen) else None

    def generate(self, masked: Sequence[MaskedSentence], k: int = 4, seed: int = 0) -> list[list[str]]:
        """Up to k distinct contradictions per masked anchor, best beam first."""
        import torch

        torch.manual_seed(seed)
        beams = max(self.num_beams, k)
        out: list[list[str]] = []
        for start in range(0, len(masked), self.batch_size):
            batch = masked[start : start + self.batch_size]
            most = max(len(m.chunks) for m in batch)
            if most > len(self._sentinel_ids):
                raise ValueError(
                    f"a sentence has {most} masked chunks; the tokenizer has {len(self._sentinel_ids)} sentinels"
                )
            enc = self.tokenizer(
                [m.masked_text(self.sentinel) for m in batch], return_tensors="pt", padding=True
            ).to(self.device)
            order = sentinel_order_processor(
                self._sentinel_ids,
                self.tokenizer.eos_token_id,
                [len(m.chunks) for m in batch],
                beams,
                self.max_new_tokens,
            )
            with torch.no_grad():
                generated = self.model.generate(
                    **enc,
                    logits_processor=[order],
                    num_beams=beams,
                    num_return_sequences=beams,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                )  # (batch * beams, out_len)
            texts = self.tokenizer.batch_decode(generated, skip_special_tokens=False)
            for i, sentence in enumerate(batch):
                found: dict[str, None] = {}
                for text in texts[i * beams : (i + 1) * beams]:
                    fillers = self.parse(text, len(sentence.chunks))
                    if fillers is None or fillers == [c.text for c in sentence.chunks]:
                        continue
                    found.setdefault(sentence.fill(fillers), None)
                    if len(found) == k:
                        break
                out.append(list(found))
        return out
