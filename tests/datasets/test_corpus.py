"""Plain-text corpus reader: blank/duplicate handling, folders, encoding errors, real ja-clinic counts."""

from __future__ import annotations

import pytest

from sentkit.datasets.corpus import read_corpus, split_sentences
from sentkit.errors import DataFormatError, MissingDataError


def test_blank_lines_dropped_duplicates_kept_once(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeff犬が走る。\r\n\n  猫が寝る。  \n犬が走る。\n   \nlast line".encode())
    assert read_corpus(path) == ["犬が走る。", "猫が寝る。", "last line"]
    assert read_corpus(path, dedupe=False) == ["犬が走る。", "猫が寝る。", "犬が走る。", "last line"]
    assert read_corpus(path, min_chars=6) == ["last line"]


def test_folder_reads_txt_files_in_name_order(tmp_path):
    (tmp_path / "b.txt").write_text("second\nshared\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("first\nshared\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored\n", encoding="utf-8")
    assert read_corpus(tmp_path) == ["first", "shared", "second"]


def test_sentence_splitting_keeps_decimals():
    line = "左室駆出率は23.3%と低下した.心筋症を合併した。Is it? Yes! Dose 3.5 mg. Done"
    assert split_sentences(line) == [
        "左室駆出率は23.3%と低下した.",
        "心筋症を合併した。",
        "Is it?",
        "Yes!",
        "Dose 3.5 mg.",
        "Done",
    ]


def test_read_corpus_splits_sentences_on_request(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("一つ目。二つ目。\n三つ目\n", encoding="utf-8")
    assert read_corpus(path) == ["一つ目。二つ目。", "三つ目"]
    assert read_corpus(path, sentences=True) == ["一つ目。", "二つ目。", "三つ目"]


def test_bad_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "broken.txt"
    path.write_bytes(b"ok\nfine\n" + b"caf\xe9 latin-1\nafter\n")
    with pytest.raises(DataFormatError, match=r"broken\.txt:3: expected UTF-8 text") as err:
        read_corpus(path)
    assert err.value.line == 3


def test_missing_file_and_empty_folder(tmp_path):
    with pytest.raises(MissingDataError, match="nothere.txt"):
        read_corpus(tmp_path / "nothere.txt")
    with pytest.raises(MissingDataError, match=r"\*\.txt"):
        read_corpus(tmp_path)


def test_real_ja_clinic_corpus_counts(data_root):
    folder = data_root / "corpora" / "ja-clinic"
    # 11,832 lines, none blank; 56 are repeats of an earlier line
    assert len(read_corpus(folder, dedupe=False)) == 11832
    texts = read_corpus(folder)
    assert len(texts) == 11776
    assert texts[0].startswith("心筋症によるショックが遷延し")
