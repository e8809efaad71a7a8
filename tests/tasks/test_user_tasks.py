"""File-backed tasks (`sts:pairs.tsv`, ...): slices of the real benchmarks written out in the user formats
must score exactly as the built-in tasks do on the same rows, and record each file's sha256 and rows."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from ngram_encoder import NgramEncoder
from sentkit.errors import DataFormatError, DataWarning, LanguageNotCovered, UnknownName
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


def test_sts_file_equals_stsb_test_and_records_the_file(data_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the spec names the file relative to the working folder
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
    mine_task = get_task("sts:pairs.tsv")
    mine = mine_task.evaluate(encoder)
    assert builtin["main_score"] > 40  # trigram overlap ranks STS-B well above chance (0)
    assert mine["main_score"] == pytest.approx(builtin["main_score"], abs=1e-9)
    assert mine_task.meta["files"] == [
        {
            "path": "pairs.tsv",
            "absolute_path": str(path.resolve()),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "rows": 1379,
        }
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


# ---- degenerate and ambiguous user files: each has one documented meaning -----------------------------


class VectorEncoder:
    """Each sentence's vector given by hand, so a score can be computed on paper."""

    name = "by-hand"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def encode(self, sentences, batch_size=64, show_progress=False):
        return np.asarray([self.vectors[s] for s in sentences], dtype=np.float32).reshape(len(sentences), -1)


def test_a_repeated_qrel_must_agree_with_the_first(tmp_path):
    q = write_tsv(tmp_path / "q.tsv", [("q1", "what is x")])
    c = write_tsv(tmp_path / "c.tsv", [("d1", "x is a letter"), ("d2", "y too")])
    r = write_tsv(tmp_path / "r.tsv", [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d1", 0)])
    with pytest.raises(
        DataFormatError,
        match=r"r\.tsv:3: expected one relevance per \(query, document\): \('q1', 'd1'\) has relevance 1 "
        r"on line 1 and 0 here",
    ):
        get_task(f"retrieval:{q}+{c}+{r}")
    r = write_tsv(tmp_path / "r.tsv", [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d1", 1)])
    task = get_task(f"retrieval:{q}+{c}+{r}")  # an identical repeat is the same judgement
    assert task.files.qrels == {"q1": {"d1": 1, "d2": 0}}


def test_queries_judged_only_non_relevant_are_left_out_of_every_metric(tmp_path):
    q = write_tsv(tmp_path / "q.tsv", [("q1", "x?"), ("q2", "y?"), ("q3", "xy?"), ("q4", "z?")])
    c = write_tsv(tmp_path / "c.tsv", [("d1", "x"), ("d2", "y"), ("d3", "z")])
    # q2 is judged, but only non-relevant; q4 is not judged at all
    r = write_tsv(tmp_path / "r.tsv", [("q1", "d1", 1), ("q2", "d2", 0), ("q3", "d1", 2)])
    encoder = VectorEncoder(
        {"x?": [1, 0, 0], "y?": [0, 1, 0], "xy?": [0.6, 0.8, 0], "z?": [0, 0, 1]}
        | {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}
    )
    task = get_task(f"retrieval:{q}+{c}+{r}")
    scores = task.evaluate(encoder)
    # q1 ranks d1 first: AP 1, RR 1, P@1 1, P@3 1/3; q3 ranks d2 (0.8) before d1 (0.6): AP 1/2, RR 1/2, P@1 0
    assert scores["map"] == pytest.approx(75.0) and scores["main_score"] == pytest.approx(75.0)
    assert scores["mrr"] == pytest.approx(75.0)
    assert scores["p@1"] == pytest.approx(50.0)
    assert scores["p@5"] == pytest.approx(100 / 3)  # k capped at the 3 documents
    assert (task.meta["n_queries"], task.meta["n_queries_no_relevant"], task.meta["n_queries_unjudged"]) == (
        2,
        1,
        1,
    )
    r = write_tsv(tmp_path / "r.tsv", [("q2", "d2", 0)])
    with pytest.raises(
        DataFormatError, match=r"r\.tsv: expected at least one query with a relevant document"
    ):
        get_task(f"retrieval:{q}+{c}+{r}")


def test_labels_are_kept_as_written(tmp_path):
    # "1", "01" and Arabic-Indic "١" all parse as the integer 1; they are three labels
    rows = [("a", "1"), ("b", "01"), ("c", "١"), ("d", "1"), ("e", "01")]
    path = write_tsv(tmp_path / "labelled.tsv", rows)
    task = get_task(f"knn:{path}")
    assert task.data["all"].labels.tolist() == ["1", "01", "١", "1", "01"]
    # a and b are each other's nearest neighbours, as are d and e, c is nearest to a: 1-NN never finds
    # the same label, so accuracy is 0 (merged labels would make it 100)
    encoder = VectorEncoder({"a": [1, 0.1], "b": [1, 0.12], "c": [1, 0.05], "d": [0.1, 1], "e": [0.12, 1]})
    assert task.evaluate(encoder)["main_score"] == 0.0


@pytest.mark.parametrize("family", ["clustering", "knn"])
@pytest.mark.parametrize(
    ("rows", "got"),
    [
        ([("a", "x"), ("b", "x"), ("c", "x")], "only 'x'"),
        ([("a", "x"), ("b", "y"), ("c", "z")], "3 rows with"),
    ],
    ids=["one-label", "all-distinct"],
)
def test_labels_that_fix_the_score_are_refused(tmp_path, family, rows, got):
    path = write_tsv(tmp_path / "labelled.tsv", rows)
    with pytest.raises(
        DataFormatError,
        match=rf"labelled\.tsv: expected at least 2 labels and a label shared by 2 rows, got {got}",
    ):
        get_task(f"{family}:{path}")


def test_clustering_labels_are_checked_per_language(tmp_path):
    rows = [("a", "x", "en"), ("b", "y", "en"), ("c", "x", "en"), ("d", "x", "de"), ("e", "x", "de")]
    path = write_tsv(tmp_path / "labelled.tsv", rows)
    with pytest.raises(DataFormatError, match=r"labelled\.tsv: lang 'de': expected at least 2 labels"):
        get_task(f"clustering:{path}")
    assert get_task(f"clustering:{path}", langs=["en"]).languages == ("en",)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "a\tb\t3\n",
            "pairs.tsv: expected at least 2 pairs with different gold scores (Spearman needs them), "
            "got 1 pair(s) scored 3",
        ),
        ("a\tb\t2\nc\td\t2\n", "got 2 pair(s) scored 2"),
        ("a\tb\t2\ten\nc\td\t4\ten\ne\tf\t1\tde\n", "pairs.tsv: lang 'de': expected at least 2 pairs"),
    ],
)
def test_sts_files_without_a_spearman_are_refused(tmp_path, content, message):
    path = tmp_path / "pairs.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        get_task(f"sts:{path}")
    assert message in str(err.value)


def test_classification_train_file_needs_two_labels(tmp_path):
    train = write_tsv(tmp_path / "train.tsv", [("a", "x"), ("b", "x")])
    test = write_tsv(tmp_path / "test.tsv", [("c", "x")])
    with pytest.raises(
        DataFormatError, match=r"train\.tsv: expected at least 2 labels to train a classifier"
    ):
        get_task(f"classification:{train}+{test}")


def test_bitext_with_repeated_lines_warns_once_and_records_it(tmp_path):
    src = tmp_path / "src.txt"
    tgt = tmp_path / "tgt.txt"
    src.write_text("Hallo\nDanke\nHallo\nJa\nDanke\n", encoding="utf-8")
    tgt.write_text("Hello\nThanks\nHi\nYes\nThank you\n", encoding="utf-8")
    with pytest.warns(DataWarning) as caught:
        task = get_task(f"bitext:{src}+{tgt}")
    assert len(caught) == 1  # tgt.txt has no repeats
    assert str(caught[0].message).startswith(
        f"{src}: 2 of 5 lines repeat an earlier line (first: line 3 repeats line 1)"
    )
    assert task.meta["repeated_lines"] == {str(src): 2}
    # identical lines get identical vectors: "Hallo" (line 1 and 3) cannot be told apart from the tgt side
    encoder = VectorEncoder(
        {"Hallo": [1, 0, 0, 0], "Danke": [0, 1, 0, 0], "Ja": [0, 0, 0, 1]}
        | {"Hello": [1, 0, 0, 0], "Hi": [1, 0.1, 0, 0], "Thanks": [0, 1, 0, 0], "Thank you": [0, 1, 0.1, 0]}
        | {"Yes": [0, 0, 0, 1]}
    )
    scores = task.evaluate(encoder)
    # src->tgt: line 3 "Hallo" finds Hello (line 1), line 5 "Danke" finds Thanks (line 2): 3 of 5 right;
    # tgt->src: Hi and Thank you each tie between two identical src lines, decided by position
    assert scores["src->tgt"] == pytest.approx(60.0)


def test_bitext_needs_two_lines(tmp_path):
    src, tgt = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("", encoding="utf-8")
    tgt.write_text("", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"a\.txt: expected at least 2 lines"):
        get_task(f"bitext:{src}+{tgt}")
    src.write_text("Hallo\n", encoding="utf-8")
    tgt.write_text("Hello\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"a\.txt: expected at least 2 lines .* got 1"):
        get_task(f"bitext:{src}+{tgt}")
