"""A tiny randomly initialised T5 with a small Unigram tokenizer trained here, sentinels included (no download)."""

from __future__ import annotations

N_SENTINELS = 32


def make_tiny_t5(sentences: list[str], seed: int = 0):
    """(model, tokenizer): a 2-layer, 64-dim T5 and a character-level SentencePiece-style (Unigram) tokenizer
    over the characters of `sentences`, with T5's pad/eos/unk ids 0/1/2 and 32 sentinels."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    sentinels = [f"<extra_id_{i}>" for i in range(N_SENTINELS)]
    chars = sorted({c for s in sentences for c in s.replace(" ", "")} | {"▁"})
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + [(c, -1.0) for c in chars]
    raw = Tokenizer(models.Unigram(vocab, unk_id=2, byte_fallback=False))
    raw.normalizer = normalizers.NFKC()
    raw.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    raw.decoder = decoders.Metaspace(prepend_scheme="first")
    raw.add_special_tokens(["<pad>", "</s>", "<unk>", *sentinels])
    raw.post_processor = TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        additional_special_tokens=sentinels,
    )
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config), tokenizer
