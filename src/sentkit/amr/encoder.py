"""The AMR encoder h(x): parse a sentence, linearise its graph, encode it with a transformer.

Cai et al. 2022 (linearisation: sec. 4.1): a BERT-uncased encoder over linearised graphs whose
vocabulary is extended with frequent relation and frame tokens ([CLS] of raw BERT in the paper; here the
pooling its folder declares, by default the base model's own). Its folder is an ordinary
sentence-transformers directory plus `amr.json` saying which parser produced its graphs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentkit.amr.linearize import linearize
from sentkit.amr.parse import get_parser, guess_lang

AMR_CONFIG = "amr.json"


def extend_vocabulary(encoder, tokens: Sequence[str]) -> int:
    """Add AMR tokens to `encoder`'s tokenizer and embeddings; return how many were new.

    Each new embedding starts as the mean of the word pieces the token was split into before (so
    `:ARG0` starts near `:`, `arg`, `##0`), rather than at random.
    """
    import torch
    from tokenizers import AddedToken

    tokenizer, model = encoder.tokenizer, encoder.model
    lower = bool(getattr(tokenizer, "do_lower_case", False)) or tokenizer.tokenize("A") == tokenizer.tokenize(
        "a"
    )
    wanted = sorted({t.lower() if lower else t for t in tokens})
    vocab = tokenizer.get_vocab()
    new = [t for t in wanted if t not in vocab]
    if not new:
        return 0
    pieces = {t: tokenizer(t, add_special_tokens=False)["input_ids"] for t in new}
    # single_word: `go-02` must not match inside `undergo-02`
    tokenizer.add_tokens([AddedToken(t, single_word=True, normalized=True) for t in new])
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)  # rows set below
    weight = model.get_input_embeddings().weight
    with torch.no_grad():
        for token in new:
            ids = pieces[token]
            row = tokenizer.convert_tokens_to_ids(token)
            if ids and row >= old:
                weight[row] = weight[ids].mean(0)  # (hidden,)
    return len(new)


class AmrEncoder:
    """Sentences -> graphs (offline rule parser by default) -> linearised text -> a transformer's vectors.

    `lang="auto"` routes text with kana/kanji to the Japanese parser and the rest to English; sentences in
    other languages need a parser we do not have (see docs/methods/amr.md). Linearisations are cached per
    sentence.
    """

    def __init__(self, transformer, parser: str = "rules", lang: str = "auto", name: str | None = None):
        self.transformer = transformer
        self.parser = parser
        self.lang = lang
        self.name = name or f"amr:{transformer.name}"
        self._cache: dict[tuple[str, str], str] = {}

    @property
    def dim(self) -> int:
        return self.transformer.dim

    @classmethod
    def from_pretrained(cls, path: str | Path, lang: str | None = None) -> AmrEncoder:
        from sentkit.encoders.transformer import TransformerEncoder

        path = Path(path)
        config_file = path / AMR_CONFIG
        config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
        transformer = TransformerEncoder.from_pretrained(path)  # its own modules: pooling, normalisation
        return cls(transformer, config.get("parser", "rules"), lang or config.get("lang", "auto"), path.name)

    def save(self, path: str | Path, **extra) -> Path:
        path = Path(self.transformer.save(path))
        config = {"parser": self.parser, "lang": self.lang, "linearization": "cai2022-dfs", **extra}
        (path / AMR_CONFIG).write_text(json.dumps(config, indent=2), encoding="utf-8")
        return path

    def linearize(self, sentences: Sequence[str]) -> list[str]:
        """The linearised graph of each sentence (parsed once per language, then cached)."""
        langs = [guess_lang(s) if self.lang == "auto" else self.lang for s in sentences]
        todo: dict[str, list[str]] = {}
        for sentence, lang in zip(sentences, langs):
            if (lang, sentence) not in self._cache:
                todo.setdefault(lang, []).append(sentence)
        for lang, batch in todo.items():
            unique = list(dict.fromkeys(batch))
            for sentence, graph in zip(unique, get_parser(self.parser, lang)(unique)):
                self._cache[(lang, sentence)] = linearize(graph)
        return [self._cache[(lang, s)] for s, lang in zip(sentences, langs)]

    def encode(
        self, sentences: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        return self.transformer.encode(self.linearize(sentences), batch_size, show_progress)
