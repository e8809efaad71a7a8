"""Every labelled loader keeps each text with its own label: whole files compared with an independent
plain read of the raw file (bytes, csv, json; nothing from sentkit), plus rows written out by hand where
a shifted label would show (right after a dropped row, at a label block boundary, the last rows)."""

from __future__ import annotations

import csv
import json
import tarfile

import numpy as np
import pytest

from sentkit.datasets.bucc import load_bucc
from sentkit.datasets.labelled import LabelledPairs, LabelledTexts
from sentkit.datasets.labelled_sentences import load_marc_categories
from sentkit.datasets.marc import load_marc
from sentkit.datasets.mewsc16 import MEWSC16_LANGUAGES, load_mewsc16
from sentkit.datasets.pawsx import load_pawsx
from sentkit.datasets.qabot import load_qabot
from sentkit.datasets.qam import load_qam
from sentkit.datasets.short_text_clustering import SHORT_TEXT_SETS, load_short_text
from sentkit.datasets.sick import read_sick
from sentkit.datasets.sts17 import DEFAULT_PAIRS, PAIR_FILES, read_sts17
from sentkit.datasets.stsb import read_stsb
from sentkit.datasets.tatoeba import load_tatoeba, tatoeba_languages
from sentkit.datasets.xnli import load_xnli
from sentkit.tasks import get_task
from sentkit.tasks.task import subsample


def raw_lines(path) -> list[str]:
    """The file's lines as bytes split on newlines (a final newline ends the last line, adds none)."""
    lines = path.read_bytes().decode("utf-8-sig").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


# ---- MewsC-16: sentences and categories line-aligned, empty sentences dropped -----------------------------
def raw_mewsc16(folder, lang) -> list[tuple[str, str]]:
    sentences = raw_lines(folder / f"{lang}_sentences.txt")
    categories = raw_lines(folder / f"{lang}_categories.txt")
    assert len(sentences) == len(categories)
    return [(s.strip(), c.strip()) for s, c in zip(sentences, categories) if s.strip()]


@pytest.mark.parametrize("lang", MEWSC16_LANGUAGES)
def test_mewsc16_pairs_equal_a_plain_read(data_root, lang):
    texts, labels = load_mewsc16(lang, data_root)
    assert list(zip(texts, labels)) == raw_mewsc16(data_root / "clustering" / "mewsc16", lang)


# (language, 0-based row after the drops, text start, category): pl drops its empty lines 2565, 2637 and
# 6015, de its line 3128; rows around each drop whose category differs from a neighbour's, and the last rows
MEWSC16_ROWS = [
    ("pl", 2564, "Aleksander Kwaśniewski", "Polityka"),  # line 2566
    ("pl", 2634, "Wyniki konkursu ogłosił Tomasz Sianecki", "Media"),  # line 2636 (2637: Gospodarka)
    ("pl", 2635, "Protestujący buddyjscy mnisi", "Polityka"),  # line 2638
    ("pl", 6012, "MonterreyDzisiaj", "Prawo i przestępczość"),  # line 6016 (6015: Polityka)
    ("pl", 7243, "27 października zmarł Milton da Silva", "Sport"),  # line 7247, the last
    ("de", 3126, "Hatte sich die SPD", "Themenportal Politik"),  # line 3127
    ("de", 3127, "Nach Angaben des Bundesverbandes Deutscher Milchviehhalter", "Themenportal Wirtschaft"),
    ("de", 6396, "<center><big>Bevorstehender Start von ESA-Astronaut", "Themenportal Wissenschaft"),
]


@pytest.mark.parametrize(
    ("lang", "row", "start", "category"), MEWSC16_ROWS, ids=[f"{r[0]}-{r[1]}" for r in MEWSC16_ROWS]
)
def test_mewsc16_rows_around_a_dropped_sentence_by_hand(data_root, lang, row, start, category):
    texts, labels = load_mewsc16(lang, data_root)
    assert texts[row].startswith(start) and labels[row] == category


# ---- English short text clustering: three formats ---------------------------------------------------------
def raw_short_text(folder, name) -> list[tuple[str, int]]:
    if name == "agnews":
        return [
            (text.strip(), int(label))
            for label, text in (line.split("\t") for line in raw_lines(folder / "agnews.txt"))
        ]
    if name == "tweet":
        return [(r["text"].strip(), r["cluster"]) for r in map(json.loads, raw_lines(folder / "tweet.txt"))]
    texts, labels = raw_lines(folder / f"{name}.txt"), raw_lines(folder / f"{name}_label.txt")
    assert len(texts) == len(labels)
    return [(t.strip(), int(y)) for t, y in zip(texts, labels)]


@pytest.mark.parametrize("name", SHORT_TEXT_SETS)
def test_short_text_pairs_equal_a_plain_read(data_root, name):
    texts, labels = load_short_text(name, data_root)
    assert list(zip(texts, labels)) == raw_short_text(
        data_root / "clustering" / "monolingual_benchmark", name
    )


# (set, 0-based row, text start, label): the last row of one label block and the first of the next, the
# last rows of the unsorted sets
SHORT_TEXT_ROWS = [
    ("biomedical", 18999, "porcine liver dihydrofolate reductase purification", 19),
    ("biomedical", 19000, "the effect of temperature on the direct muscle twitch response", 20),
    ("searchsnippets", 11219, "findarticles articles nxl dynamics military revolution", 7),
    ("searchsnippets", 11220, "wikipedia wiki grand slam tennis", 8),
    ("stackoverflow", 19491, "Haskell numeric type heirarch in SICP exercises", 19),
    ("stackoverflow", 19492, "Magento Onestep checkout", 20),
    ("agnews", 0, "bhp billiton approves chile copper project", 3),
    ("agnews", 7999, "odd attack damages art berlin woman handsprings", 1),
    ("tweet", 2469, "yemeni protester urged president ali abdullah saleh step", 79),
    ("tweet", 2470, "indian navy coast guard rescue thai vessel pirate", 107),
    ("tweet", 2471, "christie prof adept social medium", 45),
]


@pytest.mark.parametrize(
    ("name", "row", "start", "label"), SHORT_TEXT_ROWS, ids=[f"{r[0]}-{r[1]}" for r in SHORT_TEXT_ROWS]
)
def test_short_text_rows_by_hand(data_root, name, row, start, label):
    texts, labels = load_short_text(name, data_root)
    assert texts[row].startswith(start) and labels[row] == label


# ---- labelled pairs (XNLI, PAWS-X, QAM): text<TAB>text<TAB>label -----------------------------------------
def raw_pairs(path, label_ids) -> tuple[list[str], list[str], list[int]]:
    rows = [line.split("\t") for line in raw_lines(path)]
    return [r[0] for r in rows], [r[1] for r in rows], [label_ids[r[2].strip()] for r in rows]


@pytest.mark.parametrize(
    ("load", "lang", "split", "parts", "label_ids"),
    [
        (
            load_xnli,
            "de",
            "test",
            ("XNLI", "test-de.tsv"),
            {"entailment": 0, "neutral": 1, "contradiction": 2},
        ),
        (load_xnli, "sw", "dev", ("XNLI", "dev-sw.tsv"), {"entailment": 0, "neutral": 1, "contradiction": 2}),
        (load_pawsx, "ja", "dev", ("PAWSX", "dev-ja.tsv"), {"0": 0, "1": 1}),
        (load_qam, "fr", "test", ("QAM", "test.fr"), {"0": 0, "1": 1}),
    ],
)
def test_labelled_pairs_equal_a_plain_read(data_root, load, lang, split, parts, label_ids):
    data = load(lang, split, data_root)
    first, second, labels = raw_pairs(data_root.joinpath("transfer", *parts), label_ids)
    assert (data.first, data.second, data.labels.tolist()) == (first, second, labels)


def test_labelled_pair_rows_by_hand(data_root):
    xnli = load_xnli("de", "test", data_root)
    # line 2507 is a contradiction between two rows with other labels
    assert xnli.first[2506].startswith("Viele staatliche und lokale Regierungen haben zusätzliche Pr")
    assert xnli.second[2506] == "Lokalregierungen haben keine Vorraussetzungen." and xnli.labels[2506] == 2
    assert (
        xnli.second[5009].startswith("Ein 200.000-Worte-Roman für $25 ist 8.000 Wörter")
        and xnli.labels[5009] == 0
    )
    assert (
        xnli.second[5008].startswith("Ein 200.000 Wort Roman für $25 sind 4.000 Wörter")
        and xnli.labels[5008] == 2
    )
    paws = load_pawsx("ja", "dev", data_root)
    assert (
        paws.first[1009].startswith("この結果、ロードアイランド州とマサチューセッツ州")
        and paws.labels[1009] == 1
    )
    assert paws.first[1998].startswith("JoyKey には可動部品はなく") and paws.labels[1998] == 0
    qam = load_qam("fr", "test", data_root)
    assert (qam.first[9998], qam.labels[9998]) == ("réinitialiser ordi lenovo", 0)
    assert (qam.first[9999], qam.labels[9999]) == ("percer du carrelage quel foret", 1)


# ---- MARC: stars (transfer, knn-marc) and product category (knn-marc-category) -------------------------
def raw_marc(path) -> list[dict]:
    return [json.loads(line) for line in raw_lines(path)]


@pytest.mark.parametrize(("lang", "split"), [("de", "test"), ("ja", "dev"), ("zh", "test")])
def test_marc_pairs_equal_a_plain_read(data_root, lang, split):
    rows = raw_marc(data_root / "transfer" / "MARC" / f"{split}.{lang}.json")
    stars = load_marc(lang, split, data_root)
    assert stars.texts == [r["review_body"] for r in rows]
    assert stars.labels.tolist() == [int(r["stars"]) - 1 for r in rows]
    for field in ("review_title", "review_body"):
        categories = load_marc_categories(lang, split, data_root, field)
        assert list(zip(categories.texts, categories.labels, categories.langs, categories.ids)) == [
            (r[field], r["product_category"], r["language"], r["review_id"]) for r in rows
        ]


def test_marc_rows_by_hand(data_root):
    stars = load_marc("de", "test", data_root)
    # 1000 reviews per star, in order: rows 1000 and 1001 straddle the 1 -> 2 star boundary
    assert (
        stars.texts[999].startswith("Was soll diese Riesen Großer Runder Kreis Fleck")
        and stars.labels[999] == 0
    )
    assert stars.texts[1000].startswith("Die Lichter an sich sind gut und hell") and stars.labels[1000] == 1
    categories = load_marc_categories("de", "test", data_root)
    assert (
        categories.texts[999].startswith("Riesengroßer Hässliche Fleck")
        and categories.labels[999] == "wireless"
    )
    assert (categories.texts[1000], categories.labels[1000]) == ("Montage sehr Kompliziert", "baby_product")
    assert (categories.texts[4999], categories.labels[4999]) == ("Schnelle Lieferung", "sports")


# ---- QAbot: a query folder's candidates with their 0/1 labels ------------------------------------------
def test_qabot_candidates_equal_a_plain_csv_read(data_root):
    queries = load_qabot(data_root)
    for query in queries:
        folder = data_root / "retrieval" / "qabot" / query.query_id
        with (folder / "data.csv").open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert query.query == (folder / "question.txt").read_text(encoding="utf-8").strip()
        assert query.questions == [r["question"] for r in rows]
        assert query.answers == [r["answer"] for r in rows]
        assert query.labels.tolist() == [int(r["label"]) for r in rows]
    # by hand: query 1's relevant questions are rows 153, 205, 578 and 618; query 13's only one is row 1105
    assert np.flatnonzero(queries[0].labels).tolist() == [152, 204, 577, 617]
    assert queries[0].questions[152].startswith("課題１を提出して確認したところ")
    assert np.flatnonzero(queries[12].labels).tolist() == [1104]
    assert queries[12].questions[1104].startswith("最終課題(2)の2である新たな戦略の作成について")


# ---- STS: sentence pairs with their gold scores --------------------------------------------------------
def test_stsb_pairs_equal_a_plain_read(data_root):
    for split in ("dev", "test"):
        path = data_root / "sts" / "STSBenchmark" / f"sts-{split}.csv"
        rows = [line.split("\t") for line in raw_lines(path)]
        pairs = read_stsb(path)
        assert (pairs.sent1, pairs.sent2, pairs.gold.tolist()) == (
            [r[5] for r in rows],
            [r[6] for r in rows],
            [float(r[4]) for r in rows],
        )
    test = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-test.csv")
    assert (test.sent1[-1], test.sent2[-1], test.gold[-1]) == (
        "South Korea declares end to MERS outbreak",
        "North Korea Delegation Meets With South Korean Officials",
        0.0,
    )


@pytest.mark.parametrize("pair", DEFAULT_PAIRS)
def test_sts17_pairs_equal_a_plain_read(data_root, pair):
    rows = [line.split("\t") for line in raw_lines(data_root / "sts" / "STS17-test" / PAIR_FILES[pair])]
    scored = [r for r in rows if r[2].strip()]  # tr-en lists unscored pairs after the scored ones
    pairs = read_sts17(data_root / "sts" / "STS17-test", pair)
    assert (pairs.sent1, pairs.sent2, pairs.gold.tolist()) == (
        [r[0] for r in scored],
        [r[1] for r in scored],
        [float(r[2]) for r in scored],
    )


def test_japanese_sts_pairs_equal_a_plain_read(data_root):
    task = get_task("jsts", data_root=data_root)
    task.load()
    rows = [line.split("\t") for line in raw_lines(data_root / "sts-ja" / "JSTS" / "JSTS-dev.csv")]
    jsts = task.sets["ja"]
    assert (jsts.sent1, jsts.sent2, jsts.gold.tolist()) == (
        [r[1] for r in rows],
        [r[2] for r in rows],
        [float(r[0]) for r in rows],
    )
    path = data_root / "sts-ja" / "JSICK" / "SICK_test_annotated.txt"
    with path.open(encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    jsick = read_sick(path, lang="ja")
    assert (jsick.sent1, jsick.sent2, jsick.gold.tolist()) == (
        [r["sentence_A"] for r in table],
        [r["sentence_B"] for r in table],
        [float(r["relatedness_score"]) for r in table],
    )


# ---- bitext: Tatoeba line-aligned translations, BUCC sentences by id and gold pairs ---------------------
def test_tatoeba_pairs_equal_a_plain_read(data_root):
    folder = data_root / "bitext" / "tatoeba"
    for lang in tatoeba_languages(data_root):
        src, eng = load_tatoeba(lang, data_root)
        raw_src = raw_lines(folder / f"tatoeba.{lang}-eng.{lang}")
        raw_eng = raw_lines(folder / f"tatoeba.{lang}-eng.eng")
        assert list(zip(src, eng)) == list(zip(raw_src, raw_eng, strict=True)), lang
    src, eng = load_tatoeba("deu", data_root)
    assert (src[500], eng[500]) == (
        "Trotz der Wichtigkeit von Schlaf ist sein Zweck ein Rätsel.",
        "Despite the importance of sleep, its purpose is a mystery.",
    )
    assert (src[-1], eng[-1]) == ("Kann ich mit Kreditkarte bezahlen?", "Can I pay by credit card?")


def raw_bucc(archive, pair: str, suffix: str) -> list[tuple[str, ...]]:
    """Tab-split rows of one member of a BUCC archive (`{pair}.sample.{suffix}`), read with tarfile."""
    with tarfile.open(archive) as tar:
        text = tar.extractfile(f"bucc2018/{pair}/{pair}.sample.{suffix}").read().decode("utf-8")
    return [tuple(line.split("\t")) for line in text.split("\n") if line]


def test_bucc_sentences_and_gold_equal_a_plain_tar_read(data_root):
    for pair in ("de-en", "fr-en"):
        archive = data_root / "bitext" / "bucc" / f"bucc2018-{pair}.sample-gold.tar.bz2"
        src, trg, gold = (raw_bucc(archive, pair, suffix) for suffix in (pair[:2], "en", "gold"))
        data = load_bucc(pair, data_root)
        assert list(zip(data.src_ids, data.src_sentences)) == src
        assert list(zip(data.trg_ids, data.trg_sentences)) == trg
        assert data.gold == gold
    de = load_bucc("de-en", data_root)
    src, trg = dict(zip(de.src_ids, de.src_sentences)), dict(zip(de.trg_ids, de.trg_sentences))
    assert de.gold[0] == ("de-000000003", "en-000007818")
    assert src["de-000000003"].startswith(
        "Es wird erwartet, dass die Weltbevölkerung bis 2050 neun Milliarden"
    )
    assert trg["en-000007818"] == "By 2050, the global human population is expected to exceed nine billion."


# ---- subsets (every task's max_per_lang / max_train) keep the pairs -------------------------------------
def test_subsets_keep_each_text_with_its_label():
    texts = LabelledTexts(["a", "b", "c", "d", "e"], np.array([10, 11, 12, 13, 14]))
    part = texts.subset(np.array([1, 3, 4]))
    assert (part.texts, part.labels.tolist()) == (["b", "d", "e"], [11, 13, 14])
    pairs = LabelledPairs(["a", "b", "c"], ["x", "y", "z"], np.array([0, 1, 2]))
    part = pairs.subset(np.array([0, 2]))
    assert (part.first, part.second, part.labels.tolist()) == (["a", "c"], ["x", "z"], [0, 2])


def test_seeded_subsets_of_real_files_keep_their_rows(data_root):
    rows = subsample(5000, 100)
    records = raw_marc(data_root / "transfer" / "MARC" / "test.fr.json")
    part = load_marc("fr", "test", data_root).subset(rows)
    assert part.texts == [records[i]["review_body"] for i in rows]
    assert part.labels.tolist() == [int(records[i]["stars"]) - 1 for i in rows]
    label_ids = {"entailment": 0, "neutral": 1, "contradiction": 2}
    first, second, labels = raw_pairs(data_root / "transfer" / "XNLI" / "test-fr.tsv", label_ids)
    rows = subsample(len(labels), 60)
    part = load_xnli("fr", "test", data_root).subset(rows)
    assert (part.first, part.second, part.labels.tolist()) == (
        [first[i] for i in rows],
        [second[i] for i in rows],
        [labels[i] for i in rows],
    )
