"""File-backed tasks (`sts:pairs.tsv`, ...): slices of the real benchmarks written out in the user formats
must score exactly as the built-in tasks do on the same rows, and record each file's sha256 and rows."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.errors import DataFormatError, LanguageNotCovered, UnknownName
from sentkit.evaluate import evaluate
from sentkit.tasks import get_task, resolve_tasks
from sentkit.tasks.retrieval import QAbotTask
from sentkit.tasks.task import subsample


def write_tsv(path, rows, header=None):
    lines = (["\t".join(header)] if header else []) + ["\t".join(str(f) for f in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_same_scores(mine: dict, builtin: dict, rename: dict | None = None) -> None:
    rename = rename or {}
    for key, value in builtin.items():
        assert mine[rename.get(key, key)] == pytest.approx(value, abs=1e-9), key


def test_sts_file_equals_stsb_test_and_records_the_file(data_root, tmp_path):
    task = get_task("stsb", data_root=data_root)
    task.load()
    pairs = task.sets["en"]
    path = write_tsv(
        tmp_path / "pairs.tsv",
        zip(pairs.gold, pairs.sent1, pairs.sent2),
        header=("score", "sentence1", "sentence2"),  # a header may order the columns freely
    )
    encoder = NgramEncoder()
    builtin = task.evaluate(encoder)
    mine_task = get_task(f"sts:{path}")
    mine = mine_task.evaluate(encoder)
    assert builtin["main_score"] > 40  # trigram overlap ranks STS-B well above chance (0)
    assert mine["main_score"] == pytest.approx(builtin["main_score"], abs=1e-9)
    assert mine_task.meta["files"] == [
        {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "rows": 1379}
    ]


def test_sts_file_with_lang_column_equals_sts17_pairs(data_root, tmp_path):
    builtin_task = get_task("sts17", langs=["en-de", "es-es"], data_root=data_root)
    builtin_task.load()
    rows = [
        (a, b, g, lang) for lang, p in builtin_task.sets.items() for a, b, g in zip(p.sent1, p.sent2, p.gold)
    ]
    path = write_tsv(tmp_path / "sts17.tsv", rows)  # headerless: sentence1, sentence2, score, lang
    encoder = NgramEncoder()
    builtin = builtin_task.evaluate(encoder)
    mine = get_task(f"sts:{path}").evaluate(encoder)
    assert_same_scores(mine, builtin)
    assert set(mine) == {"main_score", "en-de", "es-es"}
    only = get_task(f"sts:{path}", langs=["es-es"]).evaluate(encoder)
    assert only["main_score"] == pytest.approx(builtin["es-es"])


def test_clustering_file_equals_mewsc16_sample(data_root, tmp_path):
    builtin_task = get_task("mewsc16-100", langs=["en", "ja"], data_root=data_root)
    builtin_task.load()
    rows = [
        (t, label, lang)
        for lang, (texts, labels) in builtin_task._data.items()
        for t, label in zip(texts, labels)
    ]
    path = write_tsv(tmp_path / "labelled.tsv", rows, header=("text", "label", "lang"))
    encoder = NgramEncoder(dim=64)
    builtin = builtin_task.evaluate(encoder)
    mine = get_task(f"clustering:{path}").evaluate(encoder)
    assert_same_scores(mine, builtin)
    assert set(mine) == {"main_score", "en", "ja"}


def _raw_rows(path, rows) -> list[list[str] | dict]:
    """The given rows of a raw benchmark file, read without sentkit (json lines or tab-separated)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    parse = json.loads if path.suffix == ".json" else (lambda line: line.split("\t"))
    return [parse(lines[i]) for i in rows]


def test_knn_file_equals_marc_matrix(data_root, tmp_path):
    builtin_task = get_task("knn-marc", langs=["de", "en"], data_root=data_root)
    builtin_task.max_per_lang = 80
    # the file holds the task's seeded rows read from the raw files, not task.data: a task whose texts
    # and labels fell out of step cannot pass by writing its own mistake into the file
    rows = [
        (r["review_body"], int(r["stars"]) - 1, lang)
        for lang in ("de", "en")
        for r in _raw_rows(data_root / "transfer" / "MARC" / f"test.{lang}.json", subsample(5000, 80))
    ]
    path = write_tsv(tmp_path / "labelled.tsv", rows)  # headerless: text, label, lang
    encoder = NgramEncoder(dim=64)
    builtin = builtin_task.evaluate(encoder)
    mine_task = get_task(f"knn:{path}")
    mine = mine_task.evaluate(encoder)
    assert_same_scores(mine, builtin)
    assert set(mine) == {"main_score", "de->de", "de->en", "en->de", "en->en"}
    assert mine_task.meta["files"][0]["rows"] == 160


def test_bitext_files_equal_tatoeba(data_root):
    folder = data_root / "bitext" / "tatoeba"
    src, eng = folder / "tatoeba.deu-eng.deu", folder / "tatoeba.deu-eng.eng"  # already the user format
    encoder = NgramEncoder()
    builtin = get_task("tatoeba", langs=["deu"], data_root=data_root).evaluate(encoder)
    mine_task = get_task(f"bitext:{src}+{eng}")
    mine = mine_task.evaluate(encoder)
    assert builtin["main_score"] > 1  # chance is 0.1%
    assert_same_scores(
        mine, builtin, rename={"deu->eng": "src->tgt", "eng->deu": "tgt->src", "deu": "main_score"}
    )
    assert [f["rows"] for f in mine_task.meta["files"]] == [1000, 1000]


def test_retrieval_files_equal_qabot(data_root, tmp_path):
    builtin_task = QAbotTask(name="qabot", languages=("ja",), data_root=data_root)
    builtin_task.load()

    def flat(text: str) -> str:  # QAbot questions hold newlines and tabs; a TSV row cannot
        return " ".join(text.split())

    # queries 13-20 rank the full 1142-question pool, in the same order: the corpus of every query here
    queries = [
        dataclasses.replace(q, query=flat(q.query), questions=[flat(s) for s in q.questions])
        for q in builtin_task.queries
        if len(q.questions) == 1142 and int(q.query_id) >= 13
    ]
    corpus = queries[0].questions
    assert all(q.questions == corpus for q in queries)
    builtin_task.queries = queries
    write_tsv(tmp_path / "queries.tsv", [(q.query_id, q.query) for q in queries], header=("id", "text"))
    write_tsv(tmp_path / "corpus.tsv", [(f"d{i}", s) for i, s in enumerate(corpus)])
    qrels = [(q.query_id, f"d{i}", 1) for q in queries for i in np.flatnonzero(q.labels)]
    write_tsv(tmp_path / "qrels.tsv", qrels, header=("query_id", "doc_id", "relevance"))
    encoder = NgramEncoder(dim=128)
    builtin = builtin_task.evaluate(encoder)
    spec = f"retrieval:{tmp_path / 'queries.tsv'}+{tmp_path / 'corpus.tsv'}+{tmp_path / 'qrels.tsv'}"
    mine_task = get_task(spec)
    mine = mine_task.evaluate(encoder)
    assert builtin["main_score"] > 0
    assert_same_scores(mine, builtin)
    assert [f["rows"] for f in mine_task.meta["files"]] == [len(queries), 1142, len(qrels)]


def test_classification_files_equal_xnli_transfer(data_root, tmp_path):
    builtin_task = get_task("xnli", langs=["de", "fr"], data_root=data_root)
    builtin_task.max_per_lang, builtin_task.max_train = 40, 120
    # written from the task's seeded rows of the raw files (split on tabs), not from the loaded task
    xnli = data_root / "transfer" / "XNLI"
    write_tsv(
        tmp_path / "train.tsv",
        _raw_rows(xnli / "dev-en.tsv", subsample(2490, 120)),
        header=("sentence1", "sentence2", "label"),
    )
    test_rows = [
        (a, b, y, lang)
        for lang in ("de", "fr")
        for a, b, y in _raw_rows(xnli / f"test-{lang}.tsv", subsample(5010, 40))
    ]
    write_tsv(tmp_path / "test.tsv", test_rows, header=("sentence1", "sentence2", "label", "lang"))
    encoder = NgramEncoder(dim=16)
    builtin = builtin_task.evaluate(encoder)
    mine_task = get_task(f"classification:{tmp_path / 'train.tsv'}+{tmp_path / 'test.tsv'}")
    mine = mine_task.evaluate(encoder)
    for key in ("de", "fr", "all", "main_score"):
        assert mine[key] == pytest.approx(builtin[key], abs=1e-9), key
    assert mine_task.meta["C"] == builtin_task.meta["C"]


def test_single_text_classification_and_evaluate_records_files(tmp_path):
    rows = [(f"good film number {i}", "pos") for i in range(12)] + [
        (f"bad movie take {i}", "neg") for i in range(12)
    ]
    train = write_tsv(tmp_path / "train.tsv", rows[::2] + rows[1::2][:4])
    test = write_tsv(tmp_path / "test.tsv", rows[1::2][4:], header=("text", "label"))
    spec = f"classification:{train}+{test}"
    results = evaluate(NgramEncoder(dim=16), spec, out=tmp_path / "out", show_progress=False)
    task = results["tasks"][spec]
    assert task["main_score"] == 100.0  # the two classes share no words
    assert [f["rows"] for f in task["meta"]["files"]] == [16, 8]
    written = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert (
        written["tasks"][spec]["meta"]["files"][1]["sha256"] == hashlib.sha256(test.read_bytes()).hexdigest()
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a\tb\t3.5\nc\td\tfive\n", "pairs.tsv:2: expected a numeric similarity score, got 'five'"),
        (
            "a\tb\t3.5\nc\td\n",
            "pairs.tsv:2: expected 3 tab-separated fields (sentence1, sentence2, score), got 2 fields",
        ),
        ("sentence1\tsentence2\tscore\na\tb\t1\n\t\td\t2\n", "pairs.tsv:3: expected 3 tab-separated fields"),
        ("sentence1\tsentence2\tscore\na\t \t1\n", "pairs.tsv:2: expected a non-empty sentence2"),
        (
            "a\tb\t1\n\nc\td\t2\n",
            "pairs.tsv:2: expected 3 tab-separated fields (sentence1, sentence2, score), got a blank line",
        ),
        ("", "pairs.tsv: expected a header or rows of sentence1, sentence2, score, got no rows"),
        ("a\tb\n", "pairs.tsv:1: expected 3 fields (sentence1, sentence2, score) or 4 fields"),
    ],
)
def test_bad_sts_rows_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "pairs.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        get_task(f"sts:{path}")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_retrieval_and_classification_files(tmp_path):
    q = write_tsv(tmp_path / "q.tsv", [("q1", "what is x"), ("q2", "what is y")])
    c = write_tsv(tmp_path / "c.tsv", [("d1", "x is a letter"), ("d1", "y too")])
    r = write_tsv(tmp_path / "r.tsv", [("q1", "d1")])
    with pytest.raises(
        DataFormatError, match=r"c\.tsv:2: expected a unique document id, 'd1' is also on line 1"
    ):
        get_task(f"retrieval:{q}+{c}+{r}")
    c = write_tsv(tmp_path / "c.tsv", [("d1", "x is a letter"), ("d2", "y too")])
    r = write_tsv(tmp_path / "r.tsv", [("q1", "d1", 1), ("q2", "d9", 1)])
    with pytest.raises(DataFormatError, match=r"r\.tsv:2: expected a document id from c\.tsv, got 'd9'"):
        get_task(f"retrieval:{q}+{c}+{r}")
    train = write_tsv(tmp_path / "train.tsv", [("a", "x"), ("b", "y")])
    test = write_tsv(tmp_path / "test.tsv", [("c", "z")])
    with pytest.raises(
        DataFormatError, match=r"test\.tsv: expected only labels seen in train\.tsv, got \['z'\]"
    ):
        get_task(f"classification:{train}+{test}")


def test_spec_errors(tmp_path):
    with pytest.raises(UnknownName, match="unknown task family 'stss'"):
        resolve_tasks("stsb,stss:x.tsv")
    with pytest.raises(
        UnknownName, match=r"retrieval takes 3 file\(s\) retrieval:queries.tsv\+corpus.tsv\+qrels.tsv, got 1"
    ):
        resolve_tasks("retrieval:q.tsv")
    path = write_tsv(tmp_path / "p.tsv", [("a", "b", 1, "en"), ("c", "d", 2, "en"), ("e", "f", 3, "en")])
    assert resolve_tasks(f"stsb,sts:{path},stsb") == ["stsb", f"sts:{path}"]
    with pytest.raises(
        FileNotFoundError, match=r"missing\.tsv: file not found \(knn: expected labelled\.tsv"
    ):
        resolve_tasks(f"knn:{tmp_path / 'missing.tsv'}")  # before any model is loaded
    with pytest.raises(LanguageNotCovered, match=r"has no data for de \(it has: en\)"):
        get_task(f"sts:{path}", langs=["de"])
    with pytest.raises(FileNotFoundError, match="missing.tsv: file not found"):
        get_task(f"knn:{tmp_path / 'missing.tsv'}")
