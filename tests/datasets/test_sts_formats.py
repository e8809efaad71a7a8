"""STS readers: real row counts from MANIFEST.md, and corrupted copies that must fail with file:line."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.datasets.jsts import read_jsts
from sentkit.datasets.senteval_sts import SUBSETS, read_senteval_sts, read_sts_year, read_sts_year_all
from sentkit.datasets.sick import read_sick
from sentkit.datasets.sts17 import DEFAULT_PAIRS, WMT_PAIR, read_sts17
from sentkit.datasets.stsb import read_stsb
from sentkit.errors import DataFormatError, MissingDataError


@pytest.mark.parametrize("split,rows", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_real_counts(data_root, split, rows):
    pairs = read_stsb(data_root / "sts" / "STSBenchmark" / f"sts-{split}.csv")
    assert len(pairs) == len(pairs.sent1) == len(pairs.sent2) == rows
    assert pairs.gold.min() == 0.0 and pairs.gold.max() == 5.0


def test_stsb_first_test_row(data_root):
    pairs = read_stsb(data_root / "sts" / "STSBenchmark" / "sts-test.csv")
    assert (pairs.sent1[0], pairs.sent2[0], pairs.gold[0]) == (
        "A girl is styling her hair.",
        "A girl is brushing her hair.",
        2.5,
    )


def test_stsb_quotes_are_text_and_extra_columns_ignored(tmp_path):
    path = tmp_path / "sts-test.csv"
    path.write_text(
        'main-news\theadlines\t2016\t0001\t4.2\t"He said "yes\tShe said no\n'
        "main-forums\tanswer\t2016\t0002\t1\tA b\tC d\tsource-a\tsource-b\n"
    )
    pairs = read_stsb(path)
    assert pairs.sent1 == ['"He said "yes', "A b"]
    assert pairs.sent2 == ["She said no", "C d"]
    np.testing.assert_array_equal(pairs.gold, [4.2, 1.0])


def _broken_copy(src, dst, line, new):
    lines = src.read_text(encoding="utf-8").split("\n")
    lines[line - 1] = new
    dst.write_text("\n".join(lines), encoding="utf-8")
    return dst


def test_stsb_wrong_field_count(data_root, tmp_path):
    src = data_root / "sts" / "STSBenchmark" / "sts-dev.csv"
    path = _broken_copy(src, tmp_path / "sts-dev.csv", 17, "main-news\theadlines\t2016\t0001\t3.0")
    with pytest.raises(DataFormatError, match=r"sts-dev\.csv:17: expected 7 tab-separated fields .*got 5"):
        read_stsb(path)


def test_stsb_non_numeric_score(data_root, tmp_path):
    src = data_root / "sts" / "STSBenchmark" / "sts-dev.csv"
    good = src.read_text(encoding="utf-8").split("\n")[9].split("\t")
    good[4] = "high"
    path = _broken_copy(src, tmp_path / "sts-dev.csv", 10, "\t".join(good))
    with pytest.raises(
        DataFormatError, match=r"sts-dev\.csv:10: expected a numeric similarity score, got 'high'"
    ):
        read_stsb(path)


def test_interior_blank_line_is_an_error_trailing_is_not(tmp_path):
    path = tmp_path / "jsts.csv"
    path.write_text("1.0\ta\tb\n\n2.0\tc\td\n")
    with pytest.raises(DataFormatError, match=r"jsts\.csv:2: .*got a blank line"):
        read_jsts(path)
    path.write_text("1.0\ta\tb\n2.0\tc\td\n\n\n")
    assert len(read_jsts(path)) == 2


@pytest.mark.parametrize("pair", DEFAULT_PAIRS)
def test_sts17_pairs_have_250_scored_rows(data_root, pair):
    pairs = read_sts17(data_root / "sts" / "STS17-test", pair)
    assert len(pairs) == 250
    assert pairs.lang == pair
    assert 0.0 <= pairs.gold.min() and pairs.gold.max() <= 5.0


def test_sts17_inline_scores_match_gs_files(data_root):
    folder = data_root / "sts" / "STS17-test"
    for pair, track in [("en-en", "track5.en-en"), ("en-tr", "track6.tr-en"), ("ar-ar", "track1.ar-ar")]:
        gs = np.array([float(x) for x in (folder / f"STS.gs.{track}.txt").read_text().split()])
        np.testing.assert_allclose(read_sts17(folder, pair).gold, gs)


def test_sts17_extended_pairs_reuse_en_en_gold(data_root):
    folder = data_root / "sts" / "STS17-test"
    en = read_sts17(folder, "en-en")
    de = read_sts17(folder, "en-de")
    fr = read_sts17(folder, "en-fr")
    np.testing.assert_allclose(de.gold, en.gold)
    assert de.sent1 == en.sent1  # en-de: German replaces the second sentence
    assert fr.sent2 == en.sent2  # fr-en: French replaces the first sentence
    assert de.sent2[0] == "Eine Person spielt in einem Team Basketball."


def test_sts17_wmt_reads_gs_file(data_root):
    pairs = read_sts17(data_root / "sts" / "STS17-test", WMT_PAIR)
    assert len(pairs) == 250
    assert pairs.gold[:2].tolist() == [5.0, 4.0]


def test_senteval_skips_blank_gold_lines(tmp_path):
    inp, gs = tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt"
    inp.write_text("a\tb\nc\td\ne\tf\n")
    gs.write_text("4.0\n\n1.5\n")
    pairs = read_senteval_sts(inp, gs)
    assert pairs.sent1 == ["a", "e"] and pairs.sent2 == ["b", "f"]
    np.testing.assert_array_equal(pairs.gold, [4.0, 1.5])


def test_senteval_unequal_line_counts(data_root, tmp_path):
    folder = data_root / "sts-ja" / "STS13-ja-test"
    inp = tmp_path / "STS.input.FNWN.txt"
    inp.write_bytes((folder / "STS.input.FNWN.txt").read_bytes())
    gs = tmp_path / "STS.gs.FNWN.txt"
    gs.write_text("\n".join((folder / "STS.gs.FNWN.txt").read_text().split("\n")[:100]) + "\n")
    with pytest.raises(
        DataFormatError, match=r"STS\.gs\.FNWN\.txt:101: expected one gold line per pair .*133.*got 100"
    ):
        read_senteval_sts(inp, gs)


def test_senteval_missing_sentence_field(tmp_path):
    inp, gs = tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt"
    inp.write_text("a\tb\nonly one sentence\n")
    gs.write_text("1\n2\n")
    with pytest.raises(DataFormatError, match=r"STS\.input\.x\.txt:2: expected 2 tab-separated fields"):
        read_senteval_sts(inp, gs)


def test_senteval_non_numeric_gold(tmp_path):
    inp, gs = tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt"
    inp.write_text("a\tb\nc\td\n")
    gs.write_text("1\nfive\n")
    with pytest.raises(
        DataFormatError, match=r"STS\.gs\.x\.txt:2: expected a numeric similarity score, got 'five'"
    ):
        read_senteval_sts(inp, gs)


def test_inline_score_needs_third_column(tmp_path):
    inp = tmp_path / "STS.input.track9.xx-en.txt"
    inp.write_text("a\tb\t1.0\nc\td\n")
    with pytest.raises(DataFormatError, match=r"track9\.xx-en\.txt:2: expected 3 tab-separated fields"):
        read_senteval_sts(inp, None)


# Japanese STS12-16 after JCSE's filtering (blank gold lines already removed upstream).
JA_YEAR_ROWS = {"STS12": 2615, "STS13": 1063, "STS14": 3165, "STS15": 2901, "STS16": 1143}


@pytest.mark.parametrize("year", SUBSETS)
def test_ja_sts_years(data_root, year):
    folder = data_root / "sts-ja" / f"{year}-ja-test"
    parts = read_sts_year(folder, year, "ja")
    assert [p.dataset for p in parts] == [f"{year}.{s}" for s in SUBSETS[year]]
    pooled = read_sts_year_all(folder, year, "ja")
    assert len(pooled) == sum(len(p) for p in parts) == JA_YEAR_ROWS[year]
    assert pooled.lang == "ja"


def test_sts_year_missing_subset(tmp_path):
    with pytest.raises(MissingDataError, match=r"STS.input.FNWN.txt"):
        read_sts_year(tmp_path, "STS13")


@pytest.mark.parametrize(
    "name,rows",
    [
        ("JSTS/JSTS-dev.csv", 1457),
        ("JSTS/JSTS-train.csv", 5000),
        # MANIFEST.md says 183 / 3481; the files have no header and hold 184 / 3482 scored rows
        ("JAC-STS/JAC-sts-dev.csv", 184),
        ("JAC-STS/JAC-sts-test.csv", 3482),
    ],
)
def test_score_first_real_counts(data_root, name, rows):
    pairs = read_jsts(data_root / "sts-ja" / name)
    assert len(pairs) == rows
    assert pairs.gold.min() == 0.0 and pairs.gold.max() == 5.0


def test_jsts_extra_field(data_root, tmp_path):
    src = data_root / "sts-ja" / "JSTS" / "JSTS-dev.csv"
    lines = src.read_text(encoding="utf-8").split("\n")
    path = _broken_copy(src, tmp_path / "JSTS-dev.csv", 5, lines[4] + "\textra")
    with pytest.raises(DataFormatError, match=r"JSTS-dev\.csv:5: expected 3 tab-separated fields .*got 4"):
        read_jsts(path)


@pytest.mark.parametrize(
    "name,rows", [("SICK_train.txt", 4500), ("SICK_trial.txt", 500), ("SICK_test_annotated.txt", 4927)]
)
def test_jsick_real_counts(data_root, name, rows):
    pairs = read_sick(data_root / "sts-ja" / "JSICK" / name, "ja")
    assert len(pairs) == rows
    assert pairs.gold.min() >= 1.0 and pairs.gold.max() <= 5.0


def test_sick_full_layout_by_header(tmp_path):
    path = tmp_path / "SICK.txt"
    path.write_text(
        "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set\n"
        "1\tA dog runs\tA dog is running\tENTAILMENT\t4.9\tTEST\n"
    )
    pairs = read_sick(path)
    assert (pairs.sent1, pairs.sent2, pairs.gold.tolist()) == (["A dog runs"], ["A dog is running"], [4.9])


def test_sick_errors(data_root, tmp_path):
    src = data_root / "sts-ja" / "JSICK" / "SICK_trial.txt"
    lines = src.read_text(encoding="utf-8").split("\n")
    cols = lines[2].split("\t")
    path = _broken_copy(src, tmp_path / "SICK_trial.txt", 3, "\t".join(cols[:3]))
    with pytest.raises(DataFormatError, match=r"SICK_trial\.txt:3: expected 5 tab-separated fields .*got 3"):
        read_sick(path)
    cols[3] = "n/a"
    path = _broken_copy(src, tmp_path / "SICK_trial.txt", 3, "\t".join(cols))
    with pytest.raises(DataFormatError, match=r"SICK_trial\.txt:3: expected a numeric similarity score"):
        read_sick(path)
    path = _broken_copy(src, tmp_path / "SICK_trial.txt", 1, "id\ta\tb\tscore\tlabel")
    with pytest.raises(DataFormatError, match=r"SICK_trial\.txt:1: expected a header row"):
        read_sick(path)
