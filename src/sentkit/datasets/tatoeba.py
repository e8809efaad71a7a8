"""Tatoeba test sets v1 (Artetxe & Schwenk 2019, LASER): `tatoeba.{xxx}-eng.{xxx|eng}`, line-aligned pairs.

Languages are ISO 639-3 codes as in the file names (`deu`, `pes`, `cmn`); most sets hold 1000 pairs, a few
low-resource ones fewer.
"""

from __future__ import annotations

from pathlib import Path

from sentkit.datasets.lines import read_lines
from sentkit.datasets.root import data_file, data_root
from sentkit.errors import DataFormatError

FOLDER = ("bitext", "tatoeba")


def read_tatoeba_pair(src_path: str | Path, eng_path: str | Path) -> tuple[list[str], list[str]]:
    """Two line-aligned files -> (non-English sentences, English sentences); every line must be non-empty."""
    src, eng = read_lines(src_path), read_lines(eng_path)
    if len(src) != len(eng):
        longer, shorter = (src_path, eng_path) if len(src) > len(eng) else (eng_path, src_path)
        raise DataFormatError(
            longer,
            min(len(src), len(eng)) + 1,
            f"expected as many lines as {Path(shorter).name} ({min(len(src), len(eng))}), "
            f"got {max(len(src), len(eng))}",
        )
    for path, lines in ((src_path, src), (eng_path, eng)):
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise DataFormatError(path, number, "expected a sentence, got an empty line")
    return src, eng


def load_tatoeba(lang: str, root: str | Path | None = None) -> tuple[list[str], list[str]]:
    """The `lang`-eng test set (lang an ISO 639-3 code): (lang sentences, English translations)."""
    src = data_file(*FOLDER, f"tatoeba.{lang}-eng.{lang}", root=root)
    eng = data_file(*FOLDER, f"tatoeba.{lang}-eng.eng", root=root)
    return read_tatoeba_pair(src, eng)


def tatoeba_languages(root: str | Path | None = None) -> list[str]:
    """Every language code with a `tatoeba.{xxx}-eng.{xxx}` file under the data root, sorted."""
    folder = (Path(root) if root is not None else data_root()).joinpath(*FOLDER)
    codes = []
    for path in folder.glob("tatoeba.*-eng.*"):
        pair, lang = path.name.split(".")[1:3]
        if pair == f"{lang}-eng":
            codes.append(lang)
    return sorted(codes)
