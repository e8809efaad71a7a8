"""EASE data: wikitext cleaning, sentence splitting, dump streaming, hard negatives, Wikidata / langlinks
readers, the XNLI multilingual rows and the whole builder on dumps written here (and gensim's real sample)."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import numpy as np
import pytest

from sentkit.errors import DataFormatError, SentkitError
from sentkit.training_data.ease.entity_pairs import (
    ENTITIES,
    MANIFEST,
    ROWS,
    EaseBuildConfig,
    build_entity_pairs,
    merge_entity_pairs,
    read_entities,
    read_entity_pairs,
)
from sentkit.training_data.ease.entity_vectors import load_entity_vectors
from sentkit.training_data.ease.hard_negatives import HardNegativeMiner
from sentkit.training_data.ease.langlinks import iter_langlinks
from sentkit.training_data.ease.sentence_split import rule_sentences
from sentkit.training_data.ease.wikidata import iter_wikidata
from sentkit.training_data.ease.wikipedia_dump import SiteInfo, iter_pages
from sentkit.training_data.ease.wikitext import clean_wikitext
from sentkit.training_data.ease.xnli_entities import find_entities, surface_forms


def test_clean_wikitext_keeps_prose_and_link_spans():
    text = (
        "{{Infobox|name=[[X]]|b={{y}}}}\n"
        "'''Oxygen''' is a [[chemical element]] with [[Symbol (chemistry)|symbol]] O.<ref>a [[Ref]]</ref> "
        "It forms [[oxide]]s [[File:O2.png|thumb|a [[caption]]]] readily.\n"
        "== History ==\n* a list item with [[Z]]\n{|\n| cell [[T]]\n|}\n"
        "[[Category:Chemical elements|O]]\n[[de:Sauerstoff]]"
    )
    paragraphs, categories = clean_wikitext(text)
    assert [p.text for p in paragraphs] == [
        "Oxygen is a chemical element with symbol O. It forms oxides readily."
    ]
    links = paragraphs[0].links
    assert [(k.target, paragraphs[0].text[k.start : k.end]) for k in links] == [
        ("Chemical element", "chemical element"),
        ("Symbol (chemistry)", "symbol"),
        ("Oxide", "oxides"),
    ]
    assert categories == ["Chemical elements"]


def test_rule_splitter_keeps_abbreviations_and_initials():
    text = "J. R. R. Tolkien was born in 1892. He lived in the U.S. for a while? Yes. Mr. Smith did."
    assert [text[a:b] for a, b in rule_sentences(text)] == [
        "J. R. R. Tolkien was born in 1892.",
        "He lived in the U.S. for a while?",
        "Yes.",
        "Mr. Smith did.",
    ]


# ---- a MediaWiki export written here ----------------------------------------------------------------
def _page(title: str, page_id: int, text: str = "", redirect: str | None = None) -> str:
    red = f'<redirect title="{redirect}" />' if redirect else ""
    body = f"#REDIRECT [[{redirect}]]" if redirect else text
    body = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        f"  <page>\n    <title>{title}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n    {red}\n"
        f"    <revision>\n      <id>{page_id + 1000}</id>\n      <model>wikitext</model>\n"
        f'      <text xml:space="preserve">{body}</text>\n    </revision>\n  </page>\n'
    )


ARTICLES = {
    "Oxygen": "Oxygen is a [[chemical element]] discovered by [[Carl Wilhelm Scheele]] in [[Sweden]]. "
    "It reacts with [[Hydrogen]] to form water in most conditions.\n"
    "Large amounts are made in [[Germany]] by industrial plants every year.\n[[Category:Elements]]",
    "Nitrogen": "Nitrogen is a [[chemical element]] isolated by [[Daniel Rutherford]] in [[Scotland]]. "
    "It was studied further in [[France]] by several chemists of that era.\n[[Category:Elements]]",
    "Hydrogen": "Hydrogen is the lightest [[chemical element]] known to science today. "
    "[[Henry Cavendish]] described it in [[England]] during the eighteenth century.\n"
    "It is produced in [[Germany]] and [[France]] in large industrial quantities.\n[[Category:Elements]]",
    "Sweden": "Sweden is a country in northern Europe next to [[Norway]] and [[Finland]] on a peninsula. "
    "[[Carl Wilhelm Scheele|Scheele]] worked in the town of [[Uppsala]] for many years.\n"
    "[[Category:Countries]]",
}
NO_LINK_ARTICLES = {"Plain": "A page of prose with no links at all in any of its sentences."}


def write_dump(path: Path, articles: dict[str, str], redirects: dict[str, str] | None = None) -> Path:
    pages = [_page(t, i + 10, text) for i, (t, text) in enumerate(articles.items())]
    pages += [_page(s, 500 + i, redirect=t) for i, (s, t) in enumerate((redirects or {}).items())]
    xml = (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
        "  <siteinfo>\n    <dbname>enwiki</dbname>\n    <namespaces>\n"
        '      <namespace key="0" case="first-letter" />\n'
        '      <namespace key="14" case="first-letter">Category</namespace>\n'
        "    </namespaces>\n  </siteinfo>\n" + "".join(pages) + "</mediawiki>\n"
    )
    data = xml.encode("utf-8")
    path.write_bytes(bz2.compress(data) if path.suffix == ".bz2" else data)
    return path


def _build(tmp_path: Path, name: str = "out", **kwargs) -> tuple[dict, list[dict]]:
    dump = kwargs.pop("dump", None) or write_dump(
        tmp_path / "dump.xml.bz2", ARTICLES, {"Deutschland": "Germany", "Chem element": "Chemical element"}
    )
    kwargs.setdefault("types", "category")
    config = EaseBuildConfig(dump=str(dump), out=str(tmp_path / name), splitter="rule", **kwargs)
    manifest = build_entity_pairs(config, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / name / ROWS).read_text().splitlines()]
    return manifest, rows


def test_streams_pages_and_siteinfo(tmp_path):
    dump = write_dump(tmp_path / "d.xml", ARTICLES, {"Deutschland": "Germany"})
    site = SiteInfo()
    pages = list(iter_pages(dump, site))
    assert [p.title for p in pages] == [*ARTICLES, "Deutschland"]
    assert pages[-1].redirect == "Germany" and site.dbname == "enwiki" and site.lang == "en"


def test_builder_rows_redirects_min_links_and_negatives(tmp_path):
    dump = write_dump(
        tmp_path / "dump.xml.bz2",
        {**ARTICLES, "Extra": "Steel is made in [[Deutschland]] and [[Sweden]] in large amounts each year."},
        {"Deutschland": "Germany"},
    )
    manifest, rows = _build(tmp_path, dump=dump, min_links=2)
    entities = read_entities(tmp_path / "out")
    titles = [e.title for e in entities]
    # linked >= 2 times; "Deutschland" resolved to Germany (2 direct links + 1 through the redirect)
    assert titles == sorted(titles) and "Deutschland" not in titles
    assert {"Chemical element", "Germany", "France", "Carl Wilhelm Scheele", "Sweden"} <= set(titles)
    assert "Norway" not in titles  # linked once
    assert next(e for e in entities if e.title == "Germany").links == 3
    assert manifest["entities"] == len(entities) and manifest["rows"] == len(rows)
    by_id = {i: e for i, e in enumerate(entities)}
    for row in rows:
        assert row["entity_ids"] != row["negative_entity_ids"]
        assert by_id[row["entity_ids"]].type == by_id[row["negative_entity_ids"]].type
    # every row's sentence links its entity; Sweden is the only entity typed "Countries" (its page's
    # category), so it has no same-type negative and its rows are dropped and counted
    oxygen = [r for r in rows if r["page"] == "Oxygen"]
    assert {by_id[r["entity_ids"]].title for r in oxygen} == {
        "Chemical element",
        "Carl Wilhelm Scheele",
        "Germany",
    }  # Hydrogen is linked once only
    assert next(e for e in entities if e.title == "Sweden").type == "Countries"
    assert manifest["rows_without_negative_dropped"] == 2
    data = read_entity_pairs(tmp_path / "out")
    assert data.column_names == ["anchor", "entity_ids", "negative_entity_ids", "lang", "group"]
    assert len(data) == len(rows)
    # one group per source sentence: a sentence's rows (one per linked entity) share it, other sentences differ
    by_sentence: dict[str, set[int]] = {}
    for row in rows:
        by_sentence.setdefault(row["anchor"], set()).add(row["group"])
    assert all(len(g) == 1 for g in by_sentence.values())
    assert len({next(iter(g)) for g in by_sentence.values()}) == len(by_sentence)
    assert any(sum(r["anchor"] == a for r in rows) > 1 for a in by_sentence)  # the case the groups exist for


def test_deterministic_across_processes_and_resumable(tmp_path):
    _, one = _build(tmp_path, "a", min_links=2, processes=1, pages_per_shard=1, seed=3)
    _, two = _build(tmp_path, "b", min_links=2, processes=2, pages_per_shard=1, seed=3)
    assert one == two
    messages: list[str] = []
    config = EaseBuildConfig(
        dump=str(tmp_path / "dump.xml.bz2"),
        out=str(tmp_path / "a"),
        splitter="rule",
        types="category",
        min_links=2,
        pages_per_shard=1,
        seed=3,
    )
    build_entity_pairs(config, log=messages.append)
    assert any("resumed: 4 of 4 shards" in m for m in messages)
    again = [json.loads(x) for x in (tmp_path / "a" / ROWS).read_text().splitlines()]
    assert again == one
    _, other_seed = _build(tmp_path, "c", min_links=2, seed=4)
    assert [r["entity_ids"] for r in other_seed] == [r["entity_ids"] for r in one]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("truncated", r"dump\.xml\.bz2:\d+: the compressed stream is truncated"),
        ("not-xml", r"dump\.xml\.bz2:1: expected well-formed MediaWiki XML"),
        ("no-links", r"dump\.xml\.bz2: expected \[\[links\]\] in article prose; found none in 1 articles"),
    ],
)
def test_bad_input_one_line_and_nothing_written(tmp_path, content, expected):
    dump = tmp_path / "dump.xml.bz2"
    if content == "truncated":
        write_dump(dump, ARTICLES)
        dump.write_bytes(dump.read_bytes()[:-60])
    elif content == "not-xml":
        dump.write_bytes(bz2.compress(b"this is { not xml at all\n"))
    else:
        write_dump(dump, NO_LINK_ARTICLES)
    with pytest.raises(DataFormatError, match=expected) as err:
        _build(tmp_path, dump=dump, min_links=1)
    assert "\n" not in str(err.value)
    for name in (ROWS, ENTITIES, MANIFEST):
        assert not (tmp_path / "out" / name).exists()


def test_hard_negative_property():
    """Over random typings and pages: same type, never on the page, never the positive; None only if impossible."""
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 30))
        types = {i: f"T{int(rng.integers(0, 4))}" for i in range(n)}
        miner = HardNegativeMiner(types, seed=trial)
        page = set(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
        positive = int(rng.choice(sorted(page)))
        negative = miner.sample(positive, page)
        allowed = {e for e, t in types.items() if t == types[positive] and e not in page}
        if negative is None:
            assert not allowed
        else:
            assert negative in allowed


def test_wikidata_reader_real_format(tmp_path):
    items = [
        {
            "type": "item",
            "id": "Q629",
            "labels": {"en": {"language": "en", "value": "oxygen"}},
            "claims": {
                "P31": [
                    {
                        "mainsnak": {
                            "snaktype": "value",
                            "property": "P31",
                            "datavalue": {
                                "value": {"entity-type": "item", "numeric-id": 11344, "id": "Q11344"},
                                "type": "wikibase-entityid",
                            },
                        },
                        "type": "statement",
                        "rank": "normal",
                    }
                ]
            },
            "sitelinks": {"enwiki": {"site": "enwiki", "title": "Oxygen", "badges": []}},
        },
        {"type": "property", "id": "P31", "claims": {}},
        {"type": "item", "id": "Q34", "claims": {}, "sitelinks": {"dewiki": {"title": "Schweden"}}},
    ]
    path = tmp_path / "latest-all.json.bz2"
    body = "[\n" + ",\n".join(json.dumps(i) for i in items) + "\n]\n"
    path.write_bytes(bz2.compress(body.encode()))
    got = list(iter_wikidata(path))
    assert [(i.qid, i.title, i.instance_of) for i in got] == [
        ("Q629", "Oxygen", ("Q11344",)),
        ("Q34", "", ()),
    ]
    (tmp_path / "bad.json").write_text('[\n{"id": "Q1"},\n{"id": \n]\n')
    with pytest.raises(DataFormatError, match=r"bad\.json:3: expected one JSON entity per line"):
        list(iter_wikidata(tmp_path / "bad.json"))


def test_builder_with_wikidata_types_and_qids(tmp_path):
    def item(qid, title, cls):
        claim = {"mainsnak": {"datavalue": {"value": {"id": cls}, "type": "wikibase-entityid"}}}
        return {
            "type": "item",
            "id": qid,
            "claims": {"P31": [claim]},
            "sitelinks": {"enwiki": {"title": title}},
        }

    items = [
        item("Q183", "Germany", "Q6256"),
        item("Q142", "France", "Q6256"),
        item("Q34", "Sweden", "Q6256"),
        item("Q11344", "Chemical element", "Q16889133"),
        item("Q556", "Hydrogen", "Q11344"),
    ]
    path = tmp_path / "wd.json"
    path.write_text("[\n" + ",\n".join(json.dumps(i) for i in items) + "\n]\n")
    manifest, rows = _build(tmp_path, min_links=1, wikidata=str(path), types="auto")
    assert manifest["entity_types"] == "wikidata" and manifest["entity_keys"] == "wikidata"
    entities = {e.key: e for e in read_entities(tmp_path / "out")}
    assert set(entities) == {"Q183", "Q142", "Q34", "Q11344", "Q556"}  # titles without a Q-id dropped
    countries = {i for i, k in enumerate(sorted(entities)) if entities[k].type == "Q6256"}
    for row in rows:
        if row["entity_ids"] in countries:
            assert row["negative_entity_ids"] in countries


def test_merge_folders_shares_one_entity_table(tmp_path):
    from sentkit.cli import main

    items = [("Q183", "Germany"), ("Q142", "France"), ("Q34", "Sweden"), ("Q11344", "Chemical element")]
    items += [
        ("Q20", "Norway"),
        ("Q33", "Finland"),
        ("Q556", "Hydrogen"),
        ("Q22", "Scotland"),
        ("Q21", "England"),
    ]
    lines = [
        json.dumps({"type": "item", "id": q, "claims": {}, "sitelinks": {"enwiki": {"title": t}}})
        for q, t in items
    ]
    (tmp_path / "wd.json").write_text("[\n" + ",\n".join(lines) + "\n]\n")
    parts = {"a": ("Oxygen", "Sweden"), "b": ("Nitrogen", "Hydrogen")}
    for name, titles in parts.items():
        dump = write_dump(tmp_path / f"{name}.xml", {t: ARTICLES[t] for t in titles})
        _build(tmp_path, name, dump=dump, min_links=1, wikidata=str(tmp_path / "wd.json"), types="none")
    folders = [tmp_path / "a", tmp_path / "b"]
    assert main(["build", "ease-merge", *map(str, folders), "--out", str(tmp_path / "m")]) == 0
    keys = [e.key for e in read_entities(tmp_path / "m")]
    tables = [read_entities(f) for f in folders]
    assert keys == sorted({e.key for table in tables for e in table})
    assert [e.key for e in tables[0]] != [e.key for e in tables[1]]  # numbered differently per folder
    merged = _rows_of(tmp_path / "m")
    originals = [(table, row) for f, table in zip(folders, tables) for row in _rows_of(f)]
    assert len(merged) == len(originals) > 0
    for row, (table, original) in zip(merged, originals):
        assert row["anchor"] == original["anchor"]
        assert keys[row["entity_ids"]] == table[original["entity_ids"]].key
        assert keys[row["negative_entity_ids"]] == table[original["negative_entity_ids"]].key
    # each folder numbers its sentences from 0: merged groups keep sentences apart across folders
    part_a = len(_rows_of(folders[0]))
    groups_a = {r["group"] for r in merged[:part_a]}
    groups_b = {r["group"] for r in merged[part_a:]}
    assert 0 in {r["group"] for r in _rows_of(folders[1])} and not groups_a & groups_b
    _build(tmp_path, "t", min_links=1, types="none")  # title keys: not language-independent
    with pytest.raises(SentkitError, match="language-independent"):
        merge_entity_pairs([folders[0], tmp_path / "t"], tmp_path / "x")


def _rows_of(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / ROWS).read_text().splitlines()]


def test_langlinks_reader_real_format(tmp_path):
    sql = (
        "-- MySQL dump 10.19\n/*!40101 SET NAMES utf8mb4 */;\nDROP TABLE IF EXISTS `langlinks`;\n"
        "CREATE TABLE `langlinks` (\n  `ll_from` int(8) unsigned NOT NULL DEFAULT 0,\n) ENGINE=InnoDB;\n"
        "INSERT INTO `langlinks` VALUES (10,'de','Sauerstoff'),(10,'fr','Oxyg\\u00e8ne'),"
        "(11,'de','Stickstoff'),(12,'en','O\\'Brien_(surname)'),(13,'ja','酸素');\n"
    )
    path = tmp_path / "xxwiki-latest-langlinks.sql"
    path.write_text(sql, encoding="utf-8")
    assert list(iter_langlinks(path, "de")) == [(10, "de", "Sauerstoff"), (11, "de", "Stickstoff")]
    rows = list(iter_langlinks(path))
    assert rows[3] == (12, "en", "O'Brien (surname)") and rows[4] == (13, "ja", "酸素")
    (tmp_path / "bad.sql").write_text("INSERT INTO `langlinks` VALUES (1,'de','A'),(oops);\n")
    with pytest.raises(DataFormatError, match=r"bad\.sql:1: expected \(page_id,'lang','title'\) tuples"):
        list(iter_langlinks(tmp_path / "bad.sql"))


def test_builder_langlinks_keys(tmp_path):
    """A German dump + its langlinks: entity keys become English titles; pages without one are dropped."""
    pages = {
        "Sauerstoff": "Sauerstoff wurde in [[Schweden]] entdeckt, nicht in [[Dänemark]] oder so.",
        "Stickstoff": "Stickstoff wurde in [[Norwegen]] viel hergestellt, sagt man dort heute.",
        "Schweden": "Ein Land.",
        "Norwegen": "Ein Land.",
    }
    dump = write_dump(tmp_path / "dewiki.xml", pages)
    dump.write_text(dump.read_text().replace("enwiki", "dewiki"))  # page ids: Schweden 12, Norwegen 13
    sql = tmp_path / "dewiki-langlinks.sql"
    sql.write_text(
        "INSERT INTO `langlinks` VALUES (12,'en','Sweden'),(12,'fr','Suède'),(13,'en','Norway');\n"
    )
    config = EaseBuildConfig(
        dump=str(dump),
        out=str(tmp_path / "o"),
        splitter="rule",
        types="none",
        min_links=1,
        langlinks=str(sql),
    )
    manifest = build_entity_pairs(config, log=lambda _: None)
    assert manifest["entity_keys"] == "langlinks:en" and manifest["site"]["lang"] == "de"
    assert [(e.key, e.title) for e in read_entities(tmp_path / "o")] == [
        ("Norway", "Norwegen"),
        ("Sweden", "Schweden"),
    ]
    rows = read_entity_pairs(tmp_path / "o")
    assert sorted(zip(rows["entity_ids"], rows["negative_entity_ids"])) == [(0, 1), (1, 0)]
    assert set(rows["lang"]) == {"de"}
    sql.write_text("INSERT INTO `langlinks` VALUES (12,'en','Sweden');\n")
    config.out = str(tmp_path / "p")
    with pytest.raises(DataFormatError, match="same-type hard negative"):
        build_entity_pairs(config, log=lambda _: None)  # one entity left: no negative exists
    assert not (tmp_path / "p" / ROWS).exists()


def test_xnli_surface_forms_and_matching():
    anchors = [("Washington", 1)] * 3 + [("music", 2)] * 2 + [("New York City", 3)] * 2 + [("The", 4)] * 9
    forms = surface_forms(iter(anchors))
    assert forms == {"Washington": 1, "New York City": 3}  # "music" needs 6 links, "The" is a stopword
    assert find_entities("I flew from New York City to Washington, twice.", forms) == [3, 1]


def test_xnli_rows_label_every_translation(data_root):
    from sentkit.training_data.ease.xnli_entities import xnli_entity_rows

    rows = list(xnli_entity_rows(lambda: iter([("Washington", 5)] * 3), data_root, langs=("en", "de", "fr")))
    assert rows and {r["lang"] for r in rows} == {"en", "de", "fr"}
    first = [r for r in rows if r["page"] == rows[0]["page"]]
    assert [r["lang"] for r in first] == ["en", "de", "fr"] and "Washington" in first[0]["anchor"]
    assert all(r["entity_ids"] == 5 for r in rows)
    # a sentence and its translations share one group; different English sentences never do
    assert len({r["group"] for r in first}) == 1
    groups_by_page = {}
    for r in rows:
        groups_by_page.setdefault(r["page"], set()).add(r["group"])
    assert all(len(g) == 1 for g in groups_by_page.values())
    assert len({next(iter(g)) for g in groups_by_page.values()}) == len(groups_by_page)


def test_entity_vector_text_formats(tmp_path):
    tab = tmp_path / "vec.txt"
    tab.write_text("the\t0.1 0.2 0.3\nENTITY/Oxygen\t1 2 3\nENTITY/New York City\t4 5 6\n")
    vectors, found = load_entity_vectors(tab, ["New York City", "Missing", "Oxygen"])
    assert found.tolist() == [True, False, True]
    assert vectors.tolist() == [[4, 5, 6], [0, 0, 0], [1, 2, 3]]
    w2v = tmp_path / "vec.w2v"
    w2v.write_text("3 2\nthe 0.5 0.5\nENTITY/New_York_City 7 8\nENTITY/Oxygen 9 10\n")
    vectors, found = load_entity_vectors(w2v, ["Oxygen", "New York City"])
    assert vectors.tolist() == [[9, 10], [7, 8]] and found.all()
    (tmp_path / "bad.txt").write_text("ENTITY/A\t1 2\nENTITY/B\t1 2 3\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: expected 2 numbers"):
        load_entity_vectors(tmp_path / "bad.txt", ["A"])


@pytest.mark.slow
def test_gensim_dump_sample_end_to_end(tmp_path):
    """The real English dump sample shipped in gensim (106 articles, 99 redirects)."""
    utils = pytest.importorskip("gensim.test.utils", reason="the `ease` extra (gensim) is not installed")
    dump = utils.datapath("enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    config = EaseBuildConfig(
        dump=dump, out=str(tmp_path / "g"), min_links=5, splitter="rule", types="category", processes=2
    )
    manifest = build_entity_pairs(config, log=lambda _: None)
    assert manifest["articles"] == 106 and manifest["redirects"] == 99
    assert manifest["rows"] > 1000 and manifest["entities"] > 150 and manifest["pages_per_second"] > 0
    titles = {e.title for e in read_entities(tmp_path / "g")}
    assert {"Aristotle", "United States"} <= titles


def test_cli_build_ease(tmp_path, capsys):
    from sentkit.cli import main

    dump = write_dump(tmp_path / "dump.xml.bz2", ARTICLES, {"Deutschland": "Germany"})
    out = tmp_path / "cli"
    argv = ["build", "ease", "--dump", str(dump), "--out", str(out), "--min-links", "2"]
    assert main([*argv, "--splitter", "rule", "--types", "category", "--processes", "2"]) == 0
    assert "rows" in capsys.readouterr().out and (out / ROWS).is_file()
    (tmp_path / "bad.xml").write_text("<mediawiki><page><title>A</title></mediawiki>")
    assert main(["build", "ease", "--dump", str(tmp_path / "bad.xml"), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentkit: error: ") and "bad.xml:1: expected well-formed" in err and "\n" not in err
    with pytest.raises(SystemExit) as exit_:  # argparse's one-line error
        main([*argv, "--min-links", "0"])
    assert exit_.value.code == 2 and "expected a positive integer, got '0'" in capsys.readouterr().err


def test_ner_labels_attach_to_overlapping_links(monkeypatch):
    """The NER fallback: a link takes the label of the entity span it overlaps (a fake pipeline here)."""
    from types import SimpleNamespace

    from sentkit.training_data.ease import entity_pairs

    class FakeNER:
        def pipe(self, texts, batch_size):
            for text in texts:
                start = text.index("Carl")
                yield SimpleNamespace(
                    ents=[SimpleNamespace(start_char=start, end_char=start + 20, label_="PERSON")]
                )

    entity_pairs._init_worker("rule", "en", False, entity_pairs.DEFAULT_SKIP_PREFIXES)
    monkeypatch.setitem(entity_pairs._worker, "nlp", FakeNER())
    text = "Oxygen was found by [[Carl Wilhelm Scheele]] in [[Sweden]] long before anyone else."
    (record,) = entity_pairs._process_pages([("Oxygen", text)], min_words=5)
    (sentence, spans) = record["sentences"][0]
    assert [(target, label) for target, _, _, label in spans] == [
        ("Carl Wilhelm Scheele", "PERSON"),
        ("Sweden", ""),
    ]
    assert record["targets"] == ["Carl Wilhelm Scheele", "Sweden"]
    entity_pairs._worker.clear()
