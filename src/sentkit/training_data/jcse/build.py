"""`sentkit build contradictions`: JCSE stage-one rows from a raw in-domain corpus, end to end.

corpus lines -> (seeded sample) -> clean/split/parse/filter (sec. 3.1; cached) -> mask noun chunks (sec. 3.2)
-> k contradictions per sentence -> rows (anchor, anchor, contradiction) as .jsonl/.csv + a manifest.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sentkit.atomic import atomic_write_json, check_writable_file
from sentkit.errors import InvalidArgument

GENERATORS = ("chunk-swap", "<T5 checkpoint directory or hub name>")


@dataclass
class ContradictionBuildConfig:
    corpus: str
    out: str
    lang: str = "ja"
    generator: str = "chunk-swap"
    k: int = 4
    max_lines: int = 0
    max_chunks: int = 0
    parsed: str = ""
    seed: int = 0
    data_root: str = ""
    num_beams: int = 8


def build_contradictions(config: ContradictionBuildConfig) -> dict:
    """Run the pipeline; writes `config.out` and `<out>.manifest.json`, returns the manifest."""
    from sentkit.datasets.corpus import CORPORA, read_corpus
    from sentkit.training_data.jcse.contradictions import (
        contradiction_rows,
        load_parsed,
        save_parsed,
        write_rows,
    )
    from sentkit.training_data.jcse.domain_corpus import load_pipeline, prepare_domain_corpus

    out = Path(config.out)
    if out.suffix.lower() not in (".jsonl", ".csv"):
        raise InvalidArgument(f"--out must end in .jsonl or .csv, got {config.out!r}")
    if config.k < 1:
        raise InvalidArgument(f"--k must be a positive number of contradictions, got {config.k}")
    check_writable_file(out)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    if config.parsed and Path(config.parsed).is_file():
        corpus = load_parsed(config.parsed)
        lines_read = None
    else:
        source: str | Path = config.corpus
        if config.corpus in CORPORA:
            from sentkit.datasets.root import data_file

            source = data_file(*CORPORA[config.corpus], root=config.data_root or None)
        lines = read_corpus(source)
        if config.max_lines and config.max_lines < len(lines):
            keep = np.sort(np.random.default_rng(config.seed).permutation(len(lines))[: config.max_lines])
            lines = [lines[i] for i in keep]
        lines_read = len(lines)
        try:
            nlp = load_pipeline(config.lang)
        except ImportError as err:
            raise InvalidArgument(str(err)) from err
        corpus = prepare_domain_corpus(lines, nlp)
        if config.parsed:
            save_parsed(corpus, config.parsed)
    timings["parse_s"] = round(time.perf_counter() - clock, 1)

    clock = time.perf_counter()
    generator = make_generator(config.generator, corpus, num_beams=config.num_beams)
    rows = contradiction_rows(
        corpus, generator, k=config.k, seed=config.seed, max_chunks=config.max_chunks or None
    )
    write_rows(rows, out)
    timings["generate_s"] = round(time.perf_counter() - clock, 1)
    anchors = len(set(rows["anchor"]))
    manifest = {
        "config": asdict(config),
        "generator": generator.name,
        "lines": lines_read,
        "sentences": len(corpus),
        "sentences_with_chunks": sum(bool(s.chunks) for s in corpus),
        "anchors_with_contradictions": anchors,
        "rows": len(rows),
        "rows_per_anchor": round(len(rows) / anchors, 3),
        "timings": timings,
    }
    atomic_write_json(out.with_name(out.name + ".manifest.json"), manifest)
    return manifest


def make_generator(name: str, corpus, num_beams: int = 8):
    """`chunk-swap` (offline, from the corpus's own chunks) or a seq2seq checkpoint for `T5InfillGenerator`."""
    if name == "chunk-swap":
        from sentkit.training_data.jcse.chunk_swap import ChunkSwapGenerator

        return ChunkSwapGenerator(corpus)
    if not Path(name).expanduser().is_dir() and "/" not in name:
        raise InvalidArgument(f"unknown generator {name!r}; expected one of {', '.join(GENERATORS)}")
    from sentkit.training_data.jcse.t5_infill import T5InfillGenerator

    return T5InfillGenerator(
        str(Path(name).expanduser()) if Path(name).expanduser().is_dir() else name, num_beams=num_beams
    )
