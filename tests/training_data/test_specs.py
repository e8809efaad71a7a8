"""Every data-spec form of load_training_data: built-in names, corpora, tables, JSON lines, NLI files."""

from __future__ import annotations

import json

import pytest

from sentkit.errors import DataFormatError, MissingDataError
from sentkit.training_data.specs import load_training_data


def rows_of(dataset) -> list[tuple]:
    names = [c for c in ("anchor", "positive", "negative", "lang") if c in dataset.column_names]
    return [tuple(row[c] for c in names) for row in dataset]


def test_xnli_specs(data_root):
    assert len(load_training_data("xnli:fr,sw", data_root=data_root)) == 2 * 830
    assert len(load_training_data("xnli-dev:en", data_root=data_root)) == 830
    assert len(load_training_data("xnli-test:en", data_root=data_root)) == 1670
    with pytest.raises(ValueError, match="XNLI languages must be among"):
        load_training_data("xnli:ja", data_root=data_root)


def test_real_corpus_spec(data_root):
    ds = load_training_data("ja-clinic", data_root=data_root, max_rows=100, seed=3)
    assert ds.column_names == ["anchor"] and len(ds) == 100
    assert len(load_training_data("ja-clinic", data_root=data_root)) == 11776


def test_txt_corpus_and_folder(tmp_path):
    (tmp_path / "a.txt").write_text("one\n\ntwo\none\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("three\n", encoding="utf-8")
    assert rows_of(load_training_data(tmp_path / "a.txt", shuffle=False)) == [("one",), ("two",)]
    assert len(load_training_data(tmp_path / "a.txt", shuffle=False, dedupe=False)) == 3
    assert rows_of(load_training_data(str(tmp_path), shuffle=False)) == [("one",), ("two",), ("three",)]


def test_shuffle_is_seeded_and_max_rows_caps(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("".join(f"s{i}\n" for i in range(50)), encoding="utf-8")
    first = rows_of(load_training_data(path, seed=1))
    assert first == rows_of(load_training_data(path, seed=1))
    assert first != rows_of(load_training_data(path, seed=2))
    assert sorted(first) == sorted((f"s{i}",) for i in range(50))
    assert rows_of(load_training_data(path, shuffle=False, max_rows=3)) == [("s0",), ("s1",), ("s2",)]
    sample = rows_of(load_training_data(path, max_rows=5, seed=1))
    assert sample == first[:5]
    with pytest.raises(ValueError, match="max_rows"):
        load_training_data(path, max_rows=0)


def test_tables_with_our_names_and_lang(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("anchor\tpositive\tlang\nx\ty\tja\nu\tv\ten\n", encoding="utf-8")
    ds = load_training_data(path, shuffle=False)
    assert ds.column_names == ["anchor", "positive", "lang"]
    assert rows_of(ds) == [("x", "y", "ja"), ("u", "v", "en")]


def test_table_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("premise,hypothesis\na,b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.csv:1: expected a header row sent0"):
        load_training_data(path)
    path.write_text("sent0,sent1,hard_neg\na,b,c\n , b, c\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.csv:3: expected a non-empty 'anchor'"):
        load_training_data(path)
    path.write_text("anchor,negative\na,b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.csv:1: expected a 'positive' column"):
        load_training_data(path)


def test_jsonl_forms(tmp_path):
    snli = tmp_path / "snli_1.0_dev.jsonl"
    records = [
        {"gold_label": "entailment", "sentence1": "P", "sentence2": "e"},
        {"gold_label": "-", "sentence1": "P", "sentence2": "x"},
        {"gold_label": "contradiction", "sentence1": "P", "sentence2": "c"},
    ]
    snli.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert rows_of(load_training_data(snli)) == [("P", "e", "c", "en")]

    plain = tmp_path / "pairs.jsonl"
    plain.write_text('{"anchor": "a", "positive": "b"}\n\n{"anchor": "c", "positive": 3}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"pairs\.jsonl:3: expected a string 'positive'"):
        load_training_data(plain)
    plain.write_text('{"anchor": "a", "positive": "b"}\n{"anchor": "c", "positive": "d"}\n', encoding="utf-8")
    assert rows_of(load_training_data(plain, shuffle=False)) == [("a", "b"), ("c", "d")]


def test_nli_tsv_and_txt_are_sniffed(tmp_path, data_root):
    jsnli = tmp_path / "dev.tsv"
    jsnli.write_text(
        "entailment\t犬 が 走る 。\t動物 が 動く 。\ncontradiction\t犬 が 走る 。\t犬 が 寝る 。\n",
        encoding="utf-8",
    )
    assert rows_of(load_training_data(jsnli)) == [("犬が走る。", "動物が動く。", "犬が寝る。", "ja")]
    xnli = load_training_data(data_root / "transfer" / "XNLI" / "dev-th.tsv", shuffle=False)
    assert len(xnli) == 830 and set(xnli["lang"]) == {"th"}
    snli = tmp_path / "snli_1.0_test.txt"
    header = "gold_label\tsentence1\tsentence2\tpairID"
    snli.write_text(f"{header}\nentailment\tP\te\t1\ncontradiction\tP\tc\t2\n", encoding="utf-8")
    assert rows_of(load_training_data(snli)) == [("P", "e", "c", "en")]


def test_unknown_and_missing_specs(tmp_path):
    with pytest.raises(ValueError, match=r"unknown training data spec 'wiki1m'.*xnli\[:LANGS\]"):
        load_training_data("wiki1m")
    with pytest.raises(MissingDataError, match="missing.csv"):
        load_training_data(tmp_path / "missing.csv")
    other = tmp_path / "data.parquet"
    other.write_bytes(b"PAR1")
    with pytest.raises(ValueError, match="unknown training data file type '.parquet'"):
        load_training_data(other)


def test_group_column_in_tables_and_json_lines(tmp_path):
    """A `group` column travels to training as integers (rows of one group are not each other's negatives)."""
    table = tmp_path / "t.csv"
    table.write_text("anchor,positive,group\nx,x2,7\ny,y2,7\nz,z2,-1\n", encoding="utf-8")
    ds = load_training_data(table, shuffle=False)
    assert ds.column_names == ["anchor", "positive", "group"] and ds["group"] == [7, 7, -1]
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"anchor": "a", "group": 0}\n{"anchor": "b", "group": "3"}\n', encoding="utf-8")
    assert load_training_data(lines, shuffle=False)["group"] == [0, 3]
    table.write_text("anchor,group\nx,1\ny,one\n", encoding="utf-8")
    with pytest.raises(
        DataFormatError,
        match=r"t\.csv:3: expected an integer 'group' \(a negative one = no group\), got 'one'",
    ):
        load_training_data(table)
