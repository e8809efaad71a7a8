"""NLI readers on tiny files in each released format, the real XNLI dev files, and corrupted copies."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sentkit.datasets.nli import (
    NliRow,
    join_segmented,
    read_jsnli_tsv,
    read_simcse_csv,
    read_snli_jsonl,
    read_snli_txt,
    read_xnli,
    read_xnli_tsv,
)
from sentkit.datasets.xnli import XNLI_LANGS
from sentkit.errors import DataFormatError

SNLI_HEADER = (
    "gold_label sentence1_binary_parse sentence2_binary_parse sentence1_parse sentence2_parse "
    "sentence1 sentence2 captionID pairID label1 label2 label3 label4 label5"
).split()
MNLI_HEADER = (
    "index promptID pairID genre sentence1_binary_parse sentence2_binary_parse sentence1_parse "
    "sentence2_parse sentence1 sentence2 label1 gold_label"
).split()


def snli_line(label: str, s1: str, s2: str, pair: str) -> str:
    fields = dict.fromkeys(SNLI_HEADER, "")
    fields.update(
        gold_label=label, sentence1=s1, sentence2=s2, captionID=pair[:-1], pairID=pair, label1=label
    )
    return "\t".join(fields[k] for k in SNLI_HEADER)


def write_snli_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_snli_jsonl_skips_no_consensus(tmp_path):
    path = tmp_path / "snli_1.0_dev.jsonl"
    write_snli_jsonl(
        path,
        [
            {
                "gold_label": "neutral",
                "sentence1": "A man plays.",
                "sentence2": "A man plays well.",
                "pairID": "1n",
            },
            {"gold_label": "-", "sentence1": "A man plays.", "sentence2": "Nobody knows.", "pairID": "1x"},
            {"gold_label": "contradiction", "sentence1": "A man plays.", "sentence2": "A man sleeps."},
        ],
    )
    assert read_snli_jsonl(path) == [
        NliRow("A man plays.", "A man plays well.", "neutral", "en"),
        NliRow("A man plays.", "A man sleeps.", "contradiction", "en"),
    ]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"gold_label": "neutral", "sentence1": "x"', "expected a JSON object"),
        ('{"gold_label": "neutral", "sentence1": "x"}', "expected a JSON object with string fields"),
        ('{"gold_label": "maybe", "sentence1": "x", "sentence2": "y"}', "expected a label in"),
    ],
)
def test_snli_jsonl_errors_name_the_line(tmp_path, bad_line, message):
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"gold_label": "entailment", "sentence1": "a", "sentence2": "b"})
    path.write_text(f"{good}\n{good}\n{bad_line}\n{good}\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=rf"bad\.jsonl:3: {message}"):
        read_snli_jsonl(path)


def test_snli_txt_and_mnli_txt_headers(tmp_path):
    snli = tmp_path / "snli_1.0_train.txt"
    lines = [
        "\t".join(SNLI_HEADER),
        snli_line("entailment", "Two dogs run.", "Animals run.", "1e"),
        snli_line("-", "Two dogs run.", "Cats sit.", "1x"),
        snli_line("contradiction", "Two dogs run.", "The dogs sleep.", "1c"),
    ]
    snli.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_snli_txt(snli) == [
        NliRow("Two dogs run.", "Animals run.", "entailment", "en"),
        NliRow("Two dogs run.", "The dogs sleep.", "contradiction", "en"),
    ]
    mnli = tmp_path / "multinli_1.0_dev_matched.txt"
    row = ["0", "31193", "31193n", "government", "", "", "", "", "Prem.", "Hyp.", "neutral", "neutral"]
    mnli.write_text("\t".join(MNLI_HEADER) + "\n" + "\t".join(row) + "\n", encoding="utf-8")
    assert read_snli_txt(mnli) == [NliRow("Prem.", "Hyp.", "neutral", "en")]


def test_snli_txt_short_row_and_bad_header(tmp_path):
    path = tmp_path / "snli.txt"
    good = snli_line("entailment", "a", "b", "1e")
    path.write_text(
        "\n".join(["\t".join(SNLI_HEADER), good, good, "entailment\ta\tb", good]), encoding="utf-8"
    )
    with pytest.raises(DataFormatError, match=r"snli\.txt:4: expected 14 tab-separated fields.*got 3"):
        read_snli_txt(path)
    path.write_text("label\tpremise\thypothesis\nentailment\ta\tb\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"snli\.txt:1: expected a header row"):
        read_snli_txt(path)


def test_simcse_csv_quoted_fields_and_line_numbers(tmp_path):
    path = tmp_path / "nli_for_simcse.csv"
    path.write_text(
        'sent0,sent1,hard_neg\n"Yes, a man runs.",A man moves.,A man sits.\n'
        '"A two-line\npremise",It has lines.,It has no text.\n',
        encoding="utf-8",
    )
    assert read_simcse_csv(path) == [
        NliRow("Yes, a man runs.", "A man moves.", "entailment", "en"),
        NliRow("Yes, a man runs.", "A man sits.", "contradiction", "en"),
        NliRow("A two-line\npremise", "It has lines.", "entailment", "en"),
        NliRow("A two-line\npremise", "It has no text.", "contradiction", "en"),
    ]
    # the record after the two-line one starts on physical line 5
    with path.open("a", encoding="utf-8") as fh:
        fh.write("only,two\n")
    with pytest.raises(DataFormatError, match=r"nli_for_simcse\.csv:5: expected 3 fields"):
        read_simcse_csv(path)


def test_simcse_csv_needs_its_header(tmp_path):
    path = tmp_path / "nli.csv"
    path.write_text("premise,hypothesis\na,b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"nli\.csv:1: .*missing \['sent0', 'sent1', 'hard_neg'\]"):
        read_simcse_csv(path)


def test_jsnli_joins_morphemes(tmp_path):
    path = tmp_path / "train_w_filtering.tsv"
    path.write_text(
        "entailment\t自転車 で 2 人 の 男性 が レース で 競い ます 。\t人々 は 自転車 に 乗って います 。\n"
        "contradiction\t男性 が iPhone 6 を 使う 。\t男性 は 寝て いる 。\n",
        encoding="utf-8",
    )
    assert read_jsnli_tsv(path) == [
        NliRow("自転車で2人の男性がレースで競います。", "人々は自転車に乗っています。", "entailment", "ja"),
        NliRow("男性がiPhone 6を使う。", "男性は寝ている。", "contradiction", "ja"),
    ]
    assert (
        read_jsnli_tsv(path, join_morphemes=False)[0].premise
        == "自転車 で 2 人 の 男性 が レース で 競い ます 。"
    )


def test_jsnli_wrong_field_count(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("entailment\ta\tb\nneutral a b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev\.tsv:2: expected 3 tab-separated fields"):
        read_jsnli_tsv(path)


def test_join_segmented_keeps_spaces_between_ascii_words():
    assert join_segmented(" 新型 コロナ の COVID 19 対策 ") == "新型コロナのCOVID 19対策"


def test_real_xnli_dev_rows(data_root):
    rows = read_xnli("en", "dev", root=data_root)
    assert len(rows) == 2490
    assert Counter(r.label for r in rows) == {"entailment": 830, "neutral": 830, "contradiction": 830}
    assert rows[0] == NliRow(
        "And he said, Mama, I'm home.",
        "He called his mom as soon as the school bus dropped him off.",
        "neutral",
        "en",
    )
    assert len(XNLI_LANGS) == 15
    for lang in ("zh", "sw"):
        assert {r.lang for r in read_xnli(lang, root=data_root)} == {lang}
    assert len(read_xnli("de", "test", root=data_root)) == 5010
    with pytest.raises(ValueError, match="no language 'ja'"):
        read_xnli("ja", root=data_root)


def test_corrupted_xnli_copy_names_the_line(data_root, tmp_path):
    lines = (data_root / "transfer" / "XNLI" / "dev-fr.tsv").read_text(encoding="utf-8").splitlines()
    lines[16] = lines[16].rsplit("\t", 1)[0]  # line 17 loses its label
    broken = tmp_path / "dev-fr.tsv"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev-fr\.tsv:17: expected 3 tab-separated fields, got 2"):
        read_xnli_tsv(broken, "fr")
