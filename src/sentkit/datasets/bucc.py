"""BUCC 2018 shared task sample sets (Zweigenbaum et al. 2018), read straight from the released archives.

`bucc2018-{xx}-en.sample-gold.tar.bz2` holds `bucc2018/{xx}-en/{xx}-en.sample.{xx|en}` (`id<TAB>sentence`,
ids like `de-000000001`) and `{xx}-en.sample.gold` (`xx-id<TAB>en-id`, one gold translation pair a line).
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path

from sentkit.datasets.root import data_file
from sentkit.errors import DataFormatError

FOLDER = ("bitext", "bucc")
BUCC_PAIRS: tuple[str, ...] = ("de-en", "fr-en")


@dataclass
class BuccSample:
    """One language pair: source (non-English) and English sentences with their ids, and the gold pairs."""

    pair: str
    src_ids: list[str]
    src_sentences: list[str]
    trg_ids: list[str]
    trg_sentences: list[str]
    gold: list[tuple[str, str]]


def _member_lines(archive: tarfile.TarFile, archive_path: Path, member: str) -> tuple[str, list[str]]:
    """(name used in errors, decoded lines) of one archive member."""
    where = f"{archive_path}/{member}"
    try:
        handle = archive.extractfile(member)
    except KeyError:
        raise DataFormatError(archive_path, None, f"expected a member {member!r} in the archive") from None
    if handle is None:
        raise DataFormatError(archive_path, None, f"expected {member!r} to be a regular file")
    lines = []
    for number, raw in enumerate(handle.read().split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as err:
            raise DataFormatError(where, number, f"expected UTF-8 text ({err.reason})") from None
    if lines and lines[-1] == "":  # final newline
        lines.pop()
    return where, lines


def _read_sentences(where: str, lines: list[str], lang: str) -> tuple[list[str], list[str]]:
    ids, sentences, seen = [], [], set()
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataFormatError(
                where, number, f"expected 2 tab-separated fields (id, sentence), got {len(fields)}"
            )
        sid, sentence = fields
        if not sid.startswith(f"{lang}-"):
            raise DataFormatError(where, number, f"expected an id starting with '{lang}-', got {sid!r}")
        if sid in seen:
            raise DataFormatError(where, number, f"expected unique ids, {sid!r} repeats")
        if not sentence.strip():
            raise DataFormatError(where, number, "expected a sentence, got an empty field")
        seen.add(sid)
        ids.append(sid)
        sentences.append(sentence)
    return ids, sentences


def read_bucc_archive(path: str | Path, pair: str) -> BuccSample:
    """Parse a `bucc2018-{pair}.sample-gold.tar.bz2` archive; every gold id must name a sentence."""
    path = Path(path)
    src_lang, trg_lang = pair.split("-")
    base = f"bucc2018/{pair}/{pair}.sample"
    try:
        archive = tarfile.open(path, "r:bz2")
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataFormatError(path, None, f"expected a bzip2-compressed tar archive ({err})") from None
    with archive:
        src_where, src_lines = _member_lines(archive, path, f"{base}.{src_lang}")
        trg_where, trg_lines = _member_lines(archive, path, f"{base}.{trg_lang}")
        gold_where, gold_lines = _member_lines(archive, path, f"{base}.gold")
    src_ids, src_sentences = _read_sentences(src_where, src_lines, src_lang)
    trg_ids, trg_sentences = _read_sentences(trg_where, trg_lines, trg_lang)
    known_src, known_trg = set(src_ids), set(trg_ids)
    gold = []
    for number, line in enumerate(gold_lines, start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataFormatError(
                gold_where,
                number,
                f"expected 2 tab-separated ids ({src_lang}, {trg_lang}), got {len(fields)}",
            )
        if fields[0] not in known_src:
            raise DataFormatError(
                gold_where, number, f"expected a {src_lang} id of the sample, got {fields[0]!r}"
            )
        if fields[1] not in known_trg:
            raise DataFormatError(
                gold_where, number, f"expected a {trg_lang} id of the sample, got {fields[1]!r}"
            )
        gold.append((fields[0], fields[1]))
    return BuccSample(pair, src_ids, src_sentences, trg_ids, trg_sentences, gold)


def load_bucc(pair: str, root: str | Path | None = None) -> BuccSample:
    """The BUCC 2018 sample+gold set of `pair` (`de-en` or `fr-en`) from the data root."""
    if pair not in BUCC_PAIRS:
        raise ValueError(f"unknown BUCC pair {pair!r}; available: {', '.join(BUCC_PAIRS)}")
    return read_bucc_archive(data_file(*FOLDER, f"bucc2018-{pair}.sample-gold.tar.bz2", root=root), pair)
