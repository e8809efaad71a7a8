"""Tatoeba and BUCC 2018 loaders: real counts, and corrupted copies that must fail loudly."""

from __future__ import annotations

import io
import tarfile

import pytest

from sentkit.datasets.bucc import load_bucc, read_bucc_archive
from sentkit.datasets.tatoeba import load_tatoeba, read_tatoeba_pair, tatoeba_languages
from sentkit.errors import DataFormatError, MissingDataError
from sentkit.tasks.bitext import TATOEBA_EASE_LANGUAGES


def test_tatoeba_has_112_languages_and_1000_pairs_for_eases_16(data_root):
    langs = tatoeba_languages(data_root)
    assert len(langs) == 112 and "eng" not in langs
    assert set(TATOEBA_EASE_LANGUAGES) <= set(langs)
    for lang in TATOEBA_EASE_LANGUAGES:
        src, eng = load_tatoeba(lang, data_root)
        assert len(src) == len(eng) == 1000, lang
    assert len(load_tatoeba("tzl", data_root)[0]) == 104  # some low-resource sets are smaller


def test_tatoeba_missing_language_names_the_path(data_root):
    with pytest.raises(MissingDataError, match=r"tatoeba\.fas-eng\.fas"):
        load_tatoeba("fas", data_root)  # Persian is `pes` in the file names


def test_tatoeba_unequal_and_empty_lines(data_root, tmp_path):
    folder = data_root / "bitext" / "tatoeba"
    deu = (folder / "tatoeba.deu-eng.deu").read_text(encoding="utf-8").split("\n")[:6]
    eng = (folder / "tatoeba.deu-eng.eng").read_text(encoding="utf-8").split("\n")[:6]
    (tmp_path / "t.deu").write_text("\n".join(deu) + "\n", encoding="utf-8")
    (tmp_path / "t.eng").write_text("\n".join(eng[:5]) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.deu:6: expected as many lines as t\.eng \(5\), got 6"):
        read_tatoeba_pair(tmp_path / "t.deu", tmp_path / "t.eng")
    eng[2] = ""
    (tmp_path / "t.eng").write_text("\n".join(eng) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.eng:3: expected a sentence"):
        read_tatoeba_pair(tmp_path / "t.deu", tmp_path / "t.eng")


@pytest.fixture(scope="module")
def bucc_de(data_root):
    return load_bucc("de-en", data_root)


def test_bucc_real_counts(data_root, bucc_de):
    assert (len(bucc_de.src_ids), len(bucc_de.trg_ids), len(bucc_de.gold)) == (32593, 40354, 1038)
    assert bucc_de.src_ids[0] == "de-000000001" and bucc_de.src_sentences[0].startswith("Asien, Teil von")
    assert bucc_de.gold[0] == ("de-000000003", "en-000007818")
    fr = load_bucc("fr-en", data_root)
    assert (len(fr.src_ids), len(fr.trg_ids), len(fr.gold)) == (21497, 38069, 929)


def _archive(path, members):
    with tarfile.open(path, "w:bz2") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"bucc2018/de-en/de-en.sample.{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


GOOD = {
    "de": "de-000000001\tEin Satz.\nde-000000002\tNoch einer.\n",
    "en": "en-000000001\tA sentence.\nen-000000002\tAnother one.\n",
    "gold": "de-000000002\ten-000000002\n",
}


def test_bucc_archive_round_trip(tmp_path):
    sample = read_bucc_archive(_archive(tmp_path / "a.tar.bz2", GOOD), "de-en")
    assert sample.src_sentences == ["Ein Satz.", "Noch einer."]
    assert sample.gold == [("de-000000002", "en-000000002")]


@pytest.mark.parametrize(
    ("member", "text", "message"),
    [
        (
            "de",
            "de-000000001\tEin Satz.\nde-000000002\tzu\tviele\n",
            r"de-en\.sample\.de:2: expected 2 tab-separated",
        ),
        (
            "en",
            "en-000000001\tA sentence.\nde-000000002\tWrong id.\n",
            r"sample\.en:2: expected an id starting with 'en-'",
        ),
        ("en", "en-000000001\tA.\nen-000000001\tB.\n", r"sample\.en:2: expected unique ids"),
        (
            "gold",
            "de-000000002\ten-000000002\nde-000000009\ten-000000001\n",
            r"sample\.gold:2: expected a de id",
        ),
        ("gold", "de-000000002 en-000000002\n", r"sample\.gold:1: expected 2 tab-separated ids"),
    ],
)
def test_bucc_corrupted_archives_name_member_and_line(tmp_path, member, text, message):
    path = _archive(tmp_path / "a.tar.bz2", {**GOOD, member: text})
    with pytest.raises(DataFormatError, match=message):
        read_bucc_archive(path, "de-en")


def test_bucc_missing_member_and_not_an_archive(tmp_path):
    path = _archive(tmp_path / "a.tar.bz2", {"de": GOOD["de"], "en": GOOD["en"]})
    with pytest.raises(
        DataFormatError, match=r"a\.tar\.bz2: expected a member 'bucc2018/de-en/de-en\.sample\.gold'"
    ):
        read_bucc_archive(path, "de-en")
    (tmp_path / "b.tar.bz2").write_text("not bzip2")
    with pytest.raises(DataFormatError, match=r"b\.tar\.bz2: expected a bzip2-compressed tar archive"):
        read_bucc_archive(tmp_path / "b.tar.bz2", "de-en")
