"""BUCC 2018 shared task sets (Zweigenbaum et al. 2018), read from the released archives or their files.

`bucc2018-{xx}-en.{split}-gold.tar.bz2` (split `sample` or `training`) holds
`bucc2018/{xx}-en/{xx}-en.{split}.{xx|en}` (`id<TAB>sentence`, ids like `de-000000001`) and
`{xx}-en.{split}.gold` (`xx-id<TAB>en-id`, one gold translation pair a line). Any `xx` reads the same way;
the shared data ships de-en and fr-en samples, a user adds ru-en / zh-en (or the training sets) as
archives or extracted files under the data root's `bitext/bucc` or in `$SENTKIT_BUCC`.
"""

from __future__ import annotations

import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from sentkit.datasets.checksums import verify_shipped
from sentkit.datasets.lines import iter_utf8_lines
from sentkit.datasets.root import data_root
from sentkit.errors import DataFormatError, MissingDataError

FOLDER = ("bitext", "bucc")
BUCC_ENV = "SENTKIT_BUCC"  # a user's folder with other pairs (ru-en, zh-en) or the training sets
SHIPPED_PAIRS: tuple[str, ...] = ("de-en", "fr-en")  # the sample+gold archives in the shared data
BUCC_LANGUAGES: tuple[str, ...] = ("de", "fr", "ru", "zh")  # the shared task's four pairs, all with English


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


def read_bucc_archive(path: str | Path, pair: str, split: str = "sample") -> BuccSample:
    """Parse a `bucc2018-{pair}.{split}-gold.tar.bz2` archive; every gold id must name a sentence.

    Members are found by name (`{pair}.{split}.{src|en|gold}`), under `bucc2018/{pair}/` as released or
    anywhere else in the archive.
    """
    path = Path(path)
    src_lang, trg_lang = _split_pair(pair)
    try:
        archive = tarfile.open(path, "r:bz2")
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataFormatError(path, None, f"expected a bzip2-compressed tar archive ({err})") from None
    with archive:
        names = archive.getnames()
        src = _member_lines(archive, path, _member_name(names, pair, f"{pair}.{split}.{src_lang}"))
        trg = _member_lines(archive, path, _member_name(names, pair, f"{pair}.{split}.{trg_lang}"))
        gold = _member_lines(archive, path, _member_name(names, pair, f"{pair}.{split}.gold"))
    return _sample(pair, src, trg, gold)


def read_bucc_files(folder: str | Path, pair: str, split: str = "sample") -> BuccSample:
    """The extracted layout: `{pair}.{split}.{src}`, `{pair}.{split}.en` and `{pair}.{split}.gold` in `folder`."""
    folder = Path(folder)
    src_lang, trg_lang = _split_pair(pair)
    parts = []
    for ext in (src_lang, trg_lang, "gold"):
        path = folder / f"{pair}.{split}.{ext}"
        if not path.is_file():
            raise MissingDataError(path, f"BUCC {pair} needs {pair}.{split}.{{{src_lang},{trg_lang},gold}}")
        parts.append((str(path), [line for _, line in iter_utf8_lines(path)]))
    return _sample(pair, *parts)


def find_bucc(pair: str, folders: list[Path], split: str = "sample") -> Path | None:
    """Where `pair` is in a folder: its released archive, or the folder holding its extracted files
    (directly, or under `bucc2018/{pair}/` or `{pair}/` as the archive unpacks)."""
    for folder in folders:
        archive = folder / f"bucc2018-{pair}.{split}-gold.tar.bz2"
        if archive.is_file():
            return archive
        for sub in (folder, folder / "bucc2018" / pair, folder / pair):
            if (sub / f"{pair}.{split}.gold").is_file():
                return sub
    return None


def bucc_pairs(folders: list[Path], split: str = "sample") -> tuple[str, ...]:
    """Every `xx-en` pair with a released archive or extracted gold file in `folders`, sorted."""
    pattern = re.compile(rf"(?:bucc2018-)?([a-z]{{2,3}}-en)\.{re.escape(split)}(?:-gold\.tar\.bz2|\.gold)$")
    found = set()
    for folder in folders:
        for sub in (folder, folder / "bucc2018", *(folder / "bucc2018").glob("*-en"), *folder.glob("*-en")):
            if sub.is_dir():
                found.update(m.group(1) for p in sub.iterdir() if (m := pattern.match(p.name)))
    return tuple(sorted(found))


def bucc_folders(root: str | Path | None = None) -> list[Path]:
    """Where BUCC files are looked for: `$SENTKIT_BUCC` (a user's folder) first, then `bitext/bucc` below the
    data root."""
    folders = [Path(os.environ[BUCC_ENV]).expanduser()] if os.environ.get(BUCC_ENV) else []
    return [*folders, (Path(root) if root is not None else data_root()).joinpath(*FOLDER)]


def load_bucc(pair: str, root: str | Path | None = None, split: str = "sample") -> BuccSample:
    """The BUCC 2018 `split` (sample or training, the ones with gold) of `pair` (e.g. `de-en`, `ru-en`)."""
    folders = bucc_folders(root)
    where = find_bucc(pair, folders, split)
    if where is None:
        raise MissingDataError(
            folders[-1] / f"bucc2018-{pair}.{split}-gold.tar.bz2",
            f"no BUCC {pair} {split} files under {' or '.join(map(str, folders))}; put the released archive "
            f"or its extracted {pair}.{split}.* files there, or set {BUCC_ENV} to their folder",
        )
    if where.is_file():
        if folders[-1] in where.parents:
            verify_shipped(where, Path(root) if root is not None else data_root())
        return read_bucc_archive(where, pair, split)
    return read_bucc_files(where, pair, split)


def _split_pair(pair: str) -> tuple[str, str]:
    src, _, trg = pair.partition("-")
    if not src or trg != "en":
        raise ValueError(f"a BUCC pair is '<xx>-en' (e.g. de-en), got {pair!r}")
    return src, trg


def _member_name(names: list[str], pair: str, suffix: str) -> str:
    matches = [n for n in names if n == suffix or n.endswith("/" + suffix)]
    return matches[0] if matches else f"bucc2018/{pair}/{suffix}"  # missing: _member_lines names it


def _sample(pair: str, src: tuple[str, list[str]], trg: tuple[str, list[str]], gold: tuple[str, list[str]]):
    src_lang, trg_lang = _split_pair(pair)
    src_ids, src_sentences = _read_sentences(*src, src_lang)
    trg_ids, trg_sentences = _read_sentences(*trg, trg_lang)
    known_src, known_trg = set(src_ids), set(trg_ids)
    gold_where, gold_lines = gold
    pairs = []
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
        pairs.append((fields[0], fields[1]))
    return BuccSample(pair, src_ids, src_sentences, trg_ids, trg_sentences, pairs)
