"""Entity vectors that initialise EASE's entity table (Nishikawa et al. 2022, sec. 3.3): Wikipedia2Vec.

`load_entity_vectors` reads a Wikipedia2Vec model file (.pkl, `Wikipedia2Vec.save`) or its text format
(`save_text`: `ENTITY/Title<TAB>v1 v2 ...`, or the word2vec variant with a `count dim` first line and
`ENTITY/Title_with_underscores v1 ...`), any user file included. `train_wikipedia2vec` trains one on a
dump with the `wikipedia2vec` package (extra `ease`) and caches it under $SENTKIT_CACHE.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from sentkit.atomic import check_output_node
from sentkit.errors import DataFormatError, MissingDataError


def _need_wikipedia2vec():
    try:
        import wikipedia2vec
    except ImportError:
        raise ImportError(
            "Wikipedia2Vec vectors need the `wikipedia2vec` package: pip install 'sentkit[ease]'"
        ) from None
    return wikipedia2vec


def load_entity_vectors(path: str | Path, titles: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Vectors for `titles` (float32 (n, dim)) and a boolean mask of the titles that have one (zeros elsewhere)."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(path, "expected a Wikipedia2Vec model (.pkl) or its text format")
    if path.suffix == ".pkl":
        model = _need_wikipedia2vec().Wikipedia2Vec.load(str(path))
        dim = model.syn0.shape[1]
        out = np.zeros((len(titles), dim), dtype=np.float32)
        found = np.zeros(len(titles), dtype=bool)
        for i, title in enumerate(titles):
            entity = model.get_entity(title)
            if entity is not None:
                out[i] = model.get_vector(entity)
                found[i] = True
        return out, found
    return _load_text(path, titles)


def _load_text(path: Path, titles: list[str]) -> tuple[np.ndarray, np.ndarray]:
    wanted = {title: i for i, title in enumerate(titles)}
    out: np.ndarray | None = None
    found = np.zeros(len(titles), dtype=bool)
    dim = None
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if number == 1 and len(line.split()) == 2 and all(p.isdigit() for p in line.split()):
                continue  # word2vec header: count dim
            if not line.strip():
                continue
            if "\t" in line:
                item, _, values = line.partition("\t")
            else:  # word2vec variant: spaces inside titles were written as underscores
                item, _, values = line.partition(" ")
                item = item.replace("_", " ")
            parts = values.split()
            if dim is None:
                dim = len(parts)
                out = np.zeros((len(titles), dim), dtype=np.float32)
            if len(parts) != dim or dim == 0:
                raise DataFormatError(
                    path, number, f"expected {dim} numbers after the item name, got {len(parts)}"
                )
            if not item.startswith("ENTITY/"):
                continue  # a word vector
            index = wanted.get(item[len("ENTITY/") :])
            if index is None:
                continue
            try:
                out[index] = np.asarray(parts, dtype=np.float32)
            except ValueError:
                raise DataFormatError(path, number, "expected numbers after the item name") from None
            found[index] = True
    if out is None:
        raise DataFormatError(path, None, "expected lines `ENTITY/Title<TAB>v1 v2 ...`, got none")
    return out, found


def cache_dir() -> Path:
    return Path(os.environ.get("SENTKIT_CACHE", Path.home() / ".cache" / "sentkit"))


def train_wikipedia2vec(
    dump: str | Path,
    dim: int = 50,
    iterations: int = 10,
    processes: int = 2,
    min_entity_count: int = 5,
    seed: int = 0,
    out: str | Path | None = None,
) -> Path:
    """Train Wikipedia2Vec (skip-gram over words, entities and the link graph) on `dump`; return the .pkl.

    Cached by dump content and settings under $SENTKIT_CACHE/wikipedia2vec. Its defaults (100 dims,
    5 iterations, min count 5) collapse on a small dump (all entity cosines ~0.99); 50 dims and
    10 iterations give sensible neighbours on gensim's 106-article sample.
    """
    w2v = _need_wikipedia2vec()
    from wikipedia2vec.dictionary import Dictionary
    from wikipedia2vec.dump_db import DumpDB
    from wikipedia2vec.link_graph import LinkGraph
    from wikipedia2vec.mention_db import MentionDB
    from wikipedia2vec.utils.tokenizer import get_default_tokenizer
    from wikipedia2vec.utils.wiki_dump_reader import WikiDumpReader

    dump = Path(dump)
    digest = hashlib.sha1(dump.read_bytes()).hexdigest()[:12]
    folder = (
        Path(out)
        if out
        else cache_dir() / "wikipedia2vec" / f"{digest}-d{dim}-i{iterations}-m{min_entity_count}-s{seed}"
    )
    model_file = folder / "model.pkl"
    if model_file.is_file():
        return model_file
    folder.mkdir(parents=True, exist_ok=True)
    import random

    random.seed(seed)
    np.random.seed(seed)
    db_file = folder / "dump.db"
    if db_file.exists():
        import shutil

        shutil.rmtree(db_file) if db_file.is_dir() else db_file.unlink()
    DumpDB.build(WikiDumpReader(str(dump)), str(db_file), processes, 100)
    dump_db = DumpDB(str(db_file))
    tokenizer = get_default_tokenizer(dump_db.language)
    dictionary = Dictionary.build(
        dump_db, tokenizer, True, 10, min_entity_count, 5, False, False, processes, 100, progressbar=False
    )
    link_graph = LinkGraph.build(dump_db, dictionary, processes, 100, progressbar=False)
    # the graph's CSR index pointer only reaches the last entity that has a link; entities after it would
    # raise IndexError in LinkGraph.neighbor_indices: pad it so they have empty neighbour lists
    entities = len(dictionary) - dictionary.entity_offset
    indptr = np.asarray(link_graph._indptr)
    if len(indptr) < entities + 1:
        pad = np.full(entities + 1 - len(indptr), indptr[-1], dtype=indptr.dtype)
        link_graph._indptr = np.concatenate([indptr, pad])
    mention_db = MentionDB.build(
        dump_db, dictionary, tokenizer, 0.01, 0.01, 10, False, processes, 100, progressbar=False
    )
    model = w2v.Wikipedia2Vec(dictionary)
    model.train(
        dump_db,
        link_graph,
        mention_db,
        tokenizer,
        None,
        dim_size=dim,
        init_alpha=0.025,
        min_alpha=0.0001,
        window=5,
        negative=15,
        word_neg_power=0.75,
        entity_neg_power=0.0,
        sample=1e-4,
        iteration=iterations,
        entities_per_page=10,
        pool_size=processes,
        chunk_size=100,
        progressbar=False,
    )
    tmp = folder / ".model.pkl.tmp"
    # wikipedia2vec writes the file itself: the temporary name and the target obey the output-path rule
    # (docs/cli.md, "Output paths"): never through a link or over a device
    check_output_node(tmp, "file")
    tmp.unlink(missing_ok=True)
    model.save(str(tmp))
    check_output_node(model_file, "file")
    os.replace(tmp, model_file)
    return model_file
