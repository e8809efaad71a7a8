"""MewsC-16 and short text clustering loaders: real counts, and corrupted copies that must fail loudly."""

from __future__ import annotations

import json

import pytest

from sentkit.datasets.mewsc16 import MEWSC16_LANGUAGES, load_mewsc16, read_mewsc16
from sentkit.datasets.short_text_clustering import (
    load_short_text,
    read_label_tab_text,
    read_text_and_labels,
    read_text_cluster_jsonl,
)
from sentkit.errors import DataFormatError

# (sentences after dropping empty ones, category count); category counts match EASE's README table
MEWSC16_COUNTS = {
    "ar": (2243, 11), "ca": (3310, 11), "cs": (1534, 9), "de": (6397, 8), "en": (12892, 13),
    "eo": (227, 8), "es": (6415, 11), "fa": (772, 9), "fr": (10697, 13), "ja": (1984, 12),
    "ko": (344, 10), "pl": (7244, 11), "pt": (8921, 11), "ru": (1406, 12), "sv": (584, 7), "tr": (459, 7),
}  # fmt: skip
SHORT_TEXT_COUNTS = {
    "agnews": (8000, 4),
    "biomedical": (20000, 20),
    "searchsnippets": (12340, 8),
    "stackoverflow": (20000, 20),
    "tweet": (2472, 89),
}


@pytest.mark.parametrize("lang", MEWSC16_LANGUAGES)
def test_mewsc16_real_counts(data_root, lang):
    texts, labels = load_mewsc16(lang, data_root)
    assert (len(texts), len(set(labels))) == MEWSC16_COUNTS[lang]
    assert all(t and t == t.strip() for t in texts)


def test_mewsc16_drops_empty_sentences_like_ease(data_root):
    folder = data_root / "clustering" / "mewsc16"
    raw = (folder / "pl_sentences.txt").read_text(encoding="utf-8").split("\n")
    assert len(raw) == 7247  # 3 empty lines are dropped
    assert len(load_mewsc16("pl", data_root)[0]) == 7244


@pytest.mark.parametrize("name", list(SHORT_TEXT_COUNTS))
def test_short_text_real_counts(data_root, name):
    texts, labels = load_short_text(name, data_root)
    assert (len(texts), len(set(labels))) == SHORT_TEXT_COUNTS[name]
    assert all(isinstance(label, int) for label in labels)


def test_searchsnippets_byte_order_mark_is_stripped(data_root):
    texts, labels = load_short_text("searchsnippets", data_root)
    assert texts[0].startswith("turtlesoft goldenseal") and labels[0] == 1


def _head(path, n):
    return path.read_text(encoding="utf-8").split("\n")[:n]


def test_mewsc16_unequal_line_counts_name_file_and_line(data_root, tmp_path):
    src = data_root / "clustering" / "mewsc16"
    (tmp_path / "s.txt").write_text("\n".join(_head(src / "ko_sentences.txt", 10)), encoding="utf-8")
    (tmp_path / "c.txt").write_text("\n".join(_head(src / "ko_categories.txt", 9)), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"s\.txt:10: expected as many lines as c\.txt \(9\), got 10"):
        read_mewsc16(tmp_path / "s.txt", tmp_path / "c.txt")


def test_mewsc16_empty_category_is_an_error(data_root, tmp_path):
    src = data_root / "clustering" / "mewsc16"
    cats = _head(src / "ko_categories.txt", 10)
    cats[4] = "  "
    (tmp_path / "s.txt").write_text("\n".join(_head(src / "ko_sentences.txt", 10)), encoding="utf-8")
    (tmp_path / "c.txt").write_text("\n".join(cats), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"c\.txt:5: expected a category name"):
        read_mewsc16(tmp_path / "s.txt", tmp_path / "c.txt")


def test_agnews_bad_label_and_missing_tab(data_root, tmp_path):
    lines = _head(data_root / "clustering" / "monolingual_benchmark" / "agnews.txt", 5)
    bad = tmp_path / "agnews.txt"
    bad.write_text("\n".join([*lines[:2], "x\t" + lines[2].split("\t")[1], *lines[3:]]) + "\n")
    with pytest.raises(DataFormatError, match=r"agnews\.txt:3: expected an integer label, got 'x'"):
        read_label_tab_text(bad)
    bad.write_text("\n".join([*lines[:3], lines[3].replace("\t", " "), lines[4]]) + "\n")
    with pytest.raises(DataFormatError, match=r"agnews\.txt:4: expected 2 tab-separated fields"):
        read_label_tab_text(bad)


def test_text_and_label_files_must_align(data_root, tmp_path):
    folder = data_root / "clustering" / "monolingual_benchmark"
    (tmp_path / "so.txt").write_text("\n".join(_head(folder / "stackoverflow.txt", 8)) + "\n")
    labels = _head(folder / "stackoverflow_label.txt", 8)
    (tmp_path / "so_label.txt").write_text("\n".join(labels[:7]) + "\n")
    with pytest.raises(DataFormatError, match=r"so\.txt:8: expected as many lines as so_label\.txt \(7\)"):
        read_text_and_labels(tmp_path / "so.txt", tmp_path / "so_label.txt")
    labels[5] = "7.5"
    (tmp_path / "so_label.txt").write_text("\n".join(labels) + "\n")
    with pytest.raises(DataFormatError, match=r"so_label\.txt:6: expected an integer label"):
        read_text_and_labels(tmp_path / "so.txt", tmp_path / "so_label.txt")


def test_tweet_bad_json_and_bad_cluster(data_root, tmp_path):
    lines = _head(data_root / "clustering" / "monolingual_benchmark" / "tweet.txt", 4)
    bad = tmp_path / "tweet.txt"
    bad.write_text("\n".join([lines[0], lines[1][:-3], *lines[2:]]))
    with pytest.raises(DataFormatError, match=r"tweet\.txt:2: expected a JSON object"):
        read_text_cluster_jsonl(bad)
    row = json.loads(lines[2])
    row["cluster"] = "14"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(row), lines[3]]))
    with pytest.raises(DataFormatError, match=r"tweet\.txt:3: expected an integer \"cluster\", got '14'"):
        read_text_cluster_jsonl(bad)
    good = tmp_path / "ok.txt"
    good.write_text("\n".join(lines))
    assert read_text_cluster_jsonl(good)[1][0] == 37  # the first tweet's cluster in the real file


def test_unknown_names_are_rejected(data_root):
    with pytest.raises(ValueError, match="available"):
        load_short_text("reuters", data_root)
    with pytest.raises(ValueError, match="available"):
        load_mewsc16("zh", data_root)
