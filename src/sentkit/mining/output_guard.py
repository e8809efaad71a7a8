"""Where `sentkit mine` may write: never over its inputs, the files they name, or into a shard folder.

The pairs TSV and its `.json` sidecar are each refused, before any work, when they would be an input file,
a file of an input folder (every file directly in it is read as corpus), a file a shard folder's manifest
names as its input, a file in the folder a shard folder was encoded from (its manifest's `input_folder`; the
next encode of that folder would read the new file as corpus and refuse the run), or a path inside a shard
folder (its `manifest.json` among them). Paths are compared resolved and, where both exist, by inode, so
`./`, `..`, symlinks and hard links are caught. (A link as the TSV or sidecar itself is refused before this
check, as every output path is: sentkit.atomic.check_output_node.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sentkit.corpus.manifest import FORMAT, MANIFEST
from sentkit.errors import OutputPathError


def check_outputs(flag: str, out: str | Path, sidecar: Path, inputs: list[str]) -> None:
    """Refuse the output `out` (given with `flag`) or its `sidecar` where either would overwrite or enter
    one of `inputs` (text files or folders, shard folders), as the module docstring lists."""
    files, corpus_folders = _protected(inputs)
    for path, what in ((out, f"{flag} {out}"), (sidecar, f"{flag} {out}: its sidecar {sidecar}")):
        resolved = _resolved(path)
        for target, why in files:
            if resolved == target or _same_file(resolved, target):
                raise OutputPathError(f"{what} is {why}; write the pairs to another file")
        for folder, why in corpus_folders:
            if resolved.parent == folder:
                raise OutputPathError(
                    f"{what} lies in {why} (every file there is read as corpus); write the pairs outside it"
                )
        shard_folder = _enclosing_shard_folder(resolved)
        if shard_folder is not None:
            raise OutputPathError(
                f"{what} lies inside the shard folder {shard_folder}; write the pairs outside it"
            )


def _protected(inputs: list[str]) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """(files never to overwrite, folders whose files are read as corpus), each with how it was named."""
    files: list[tuple[Path, str]] = []
    corpus_folders: list[tuple[Path, str]] = []
    for given in inputs:
        path = Path(given)
        manifest = path / MANIFEST
        if path.is_dir() and manifest.is_file():
            encoded_from, folder = _manifest_inputs(manifest)
            for resolved in encoded_from:
                files.append((resolved, f"{resolved}, an input {given} was encoded from"))
            if folder is not None:
                corpus_folders.append((folder, f"the folder {folder} {given} was encoded from"))
        elif path.is_dir():
            corpus_folders.append((_resolved(path), f"the input folder {_resolved(path)}"))
            for file in sorted(path.iterdir()):
                if file.is_file():
                    files.append((_resolved(file), f"{file}, a file of the input folder {given}"))
        else:
            files.append((_resolved(path), f"the input {given}"))
    return files, corpus_folders


def _manifest_inputs(manifest: Path) -> tuple[list[Path], Path | None]:
    """The input files a shard manifest names and the folder they were read from when `--input` was one
    (nothing if it cannot be read: opening the folder refuses it)."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        files = [Path(entry["resolved"]) for entry in data["inputs"]]
        if "input_folder" in data:
            return files, None if data["input_folder"] is None else Path(data["input_folder"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return [], None
    return files, _folder_of(files)


def _folder_of(files: list[Path]) -> Path | None:
    """A manifest that does not record `input_folder`: the folder holding its inputs when they are every
    corpus file in it (as encoding that folder reads them: visible regular files), else None."""
    folders = {file.parent for file in files}
    if len(folders) != 1:
        return None
    (folder,) = folders
    try:
        present = {_resolved(f) for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")}
    except OSError:
        return None
    return folder if present == set(files) else None


def _enclosing_shard_folder(resolved: Path) -> Path | None:
    """The nearest folder above `resolved` holding a sentkit shard manifest, if any."""
    for folder in resolved.parents:
        manifest = folder / MANIFEST
        if manifest.is_file() and _is_shard_manifest(manifest):
            return folder
    return None


def _is_shard_manifest(manifest: Path) -> bool:
    try:
        with manifest.open("rb") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _resolved(path: str | Path) -> Path:
    """The absolute path with every link resolved; a link loop stays as it is (Path.resolve raises on one:
    reading such an input then fails with one line, and an output in one was refused before)."""
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False
