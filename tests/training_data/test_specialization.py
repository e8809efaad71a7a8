"""Emu's training data: MARC product categories, user TSV/JSONL files, and the (anchor, label, adversarial) rows."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sentkit.datasets.labelled_sentences import (
    LabelledSentences,
    load_marc_categories,
    read_labelled_sentences,
)
from sentkit.errors import DataFormatError
from sentkit.training_data.specialization import marc_specialization_sentences, specialization_rows


def test_marc_categories_real_counts(data_root):
    en = load_marc_categories("en", "dev", data_root)
    assert len(en) == 5000 and set(en.langs) == {"en"}
    counts = Counter(en.labels)
    assert len(counts) == 31 and counts["apparel"] == 401 and counts["personal_care_appliances"] == 1
    assert en.texts[1] == "Garbage!"  # review_title of the second review
    body = load_marc_categories("en", "dev", data_root, text_field="review_body")
    assert body.texts[1].startswith("Shoes were purchased on March 6, 2019.") and body.labels[1] == "shoes"


def test_user_tsv_and_jsonl(tmp_path):
    tsv = tmp_path / "intents.tsv"
    tsv.write_text("text\tlang\tlabel\nbook a flight\ten\tflight\nvuelo a Madrid\tes\t\n", encoding="utf-8")
    rows = read_labelled_sentences(tsv)
    assert rows.texts == ["book a flight", "vuelo a Madrid"] and rows.labels == ["flight", ""]
    assert rows.langs == ["en", "es"] and rows.ids == ["", ""]
    headerless = tmp_path / "pairs.tsv"
    headerless.write_text(
        "book a flight\tflight\ten\t7\nreservar un vuelo\tflight\tes\t7\n", encoding="utf-8"
    )
    assert read_labelled_sentences(headerless).ids == ["7", "7"]
    jsonl = tmp_path / "intents.jsonl"
    lines = [
        {"text": "hi", "label": 3, "lang": "en", "id": 1},
        {"text": "hallo", "label": None, "lang": "de"},
    ]
    jsonl.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    rows = read_labelled_sentences(jsonl)
    assert rows.labels == ["3", ""] and rows.ids == ["1", ""]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.tsv", "text\tlabel\tlang\nok\tx\ten\nonly two\tx\n", "a.tsv:3: expected 3 tab-separated fields"),
        ("b.tsv", "text\tlabel\tlang\n \tx\ten\n", "b.tsv:2: expected a non-empty text"),
        ("c.tsv", "text\tlabel\tlang\nhi\tx\te n\n", "c.tsv:2: expected a language code"),
        (
            "d.jsonl",
            '{"text": "hi", "label": "x", "lang": "en"}\n[1, 2]\n',
            "d.jsonl:2: expected a JSON object",
        ),
        ("e.jsonl", '{"text": "hi", "label": ["x"], "lang": "en"}\n', "e.jsonl:1: expected a string label"),
        ("f.csv", "text,label,lang\n", "f.csv: expected a .tsv or .jsonl file"),
    ],
)
def test_bad_rows_are_one_line_errors(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        read_labelled_sentences(path)
    message = str(err.value)
    assert "\n" not in message and expected in message.replace(str(tmp_path) + "/", "")


def _toy() -> LabelledSentences:
    rows = LabelledSentences()
    for i, (text, label) in enumerate(
        [("cheap flight", "flight"), ("a hotel room", "hotel"), ("fly to Rome", "flight")]
    ):
        rows.append(text, label, "en", str(i))
    for i, lang in enumerate(["de", "fr", "de"]):
        rows.append(f"{lang} translation {i}", "", lang, str(i))
    rows.append("ohne Partner", "", "de", "")
    return rows


def test_rows_pair_each_labelled_sentence_with_another_language():
    data, names = specialization_rows(_toy(), seed=3)
    assert names == ["flight", "hotel"] and data["label"] == [0, 1, 0]
    assert data["anchor"] == ["cheap flight", "a hotel room", "fly to Rome"]
    assert all(lang in ("de", "fr") for lang in data["adversarial_lang"])
    assert all(not a.startswith("cheap") for a in data["adversarial"])  # never an English sentence
    # languages are drawn uniformly per row (not in proportion to their sentence counts)
    many = LabelledSentences()
    for i in range(2000):
        many.append(f"s{i}", "x", "en")
    for i in range(90):
        many.append(f"d{i}", "", "de")
    many.append("only fr", "", "fr")
    counts = Counter(specialization_rows(many, seed=0)[0]["adversarial_lang"])
    assert 900 < counts["fr"] < 1100  # 1 French sentence, drawn as often as 90 German ones


def test_parallel_rows_use_translations_and_name_missing_ones():
    data, _ = specialization_rows(_toy(), parallel=True, seed=0)
    assert data["adversarial"] == ["de translation 0", "fr translation 1", "de translation 2"]
    rows = _toy()
    rows.append("no translation", "hotel", "en", "99")
    with pytest.raises(DataFormatError, match="1 of 4 have none"):
        specialization_rows(rows, parallel=True)
    assert "adversarial" not in specialization_rows(_toy(), adversarial=False)[0].column_names


def test_marc_training_sentences_drop_foreign_labels(data_root):
    rows = marc_specialization_sentences(root=data_root, max_train=50, max_adversarial=20, seed=1)
    assert Counter(rows.langs) == {"en": 50, "de": 20, "es": 20, "fr": 20, "ja": 20, "zh": 20}
    assert all(label == "" for label, lang in zip(rows.labels, rows.langs) if lang != "en")
    assert all(label for label, lang in zip(rows.labels, rows.langs) if lang == "en")
