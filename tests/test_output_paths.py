"""Every output path obeys one rule (sentkit.atomic.check_output_node): what is there must be what sentkit
writes, a regular file or a folder, and not a symbolic link. A device, a FIFO, a link (to a file, a folder,
nowhere or itself) or a link loop above the path is refused in one line, exit 2, before any work; the atomic
writers refuse to replace one too, and the node is left as it was."""

from __future__ import annotations

import os
import stat

import pytest

from sentkit.atomic import (
    atomic_directory,
    atomic_text_writer,
    atomic_write_bytes,
    atomic_write_json,
    check_writable_dir,
    check_writable_file,
)
from sentkit.cli import main
from sentkit.errors import OutputPathError

ROOT = os.geteuid() == 0  # mknod of a character device needs root


def _make(kind: str, path, target_dir):
    """A node of `kind` at `path`; a link's target (a file with content, or a folder) goes in `target_dir`."""
    if kind == "chardev":
        if not ROOT:
            pytest.skip("creating a character device needs root")
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the numbers of /dev/null
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-file":
        target = target_dir / "target.txt"
        target.write_text("keep me\n")
        path.symlink_to(target)
    elif kind == "link-to-folder":
        target = target_dir / "target"
        target.mkdir()
        (target / "kept.txt").write_text("keep me\n")
        path.symlink_to(target)
    elif kind == "dangling-link":
        path.symlink_to(target_dir / "nowhere")
    elif kind == "self-link":
        path.symlink_to(path.name)
    else:
        raise AssertionError(kind)


def _state(path) -> tuple:
    """What a node is and holds, to show it was left alone (lstat: a link is not followed)."""
    node = os.lstat(path)
    kind = stat.S_IFMT(node.st_mode)
    link = os.readlink(path) if stat.S_ISLNK(node.st_mode) else None
    return kind, link, node.st_ino, getattr(node, "st_rdev", 0)


def _tree(root) -> dict:
    """Every regular file under `root` (links not followed) with its bytes, and every name."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            out[path] = open(path, "rb").read() if os.path.isfile(path) and not os.path.islink(path) else None
    return out


FILE_NODES = ["chardev", "fifo", "link-to-file", "dangling-link", "self-link"]
FOLDER_NODES = ["chardev", "fifo", "link-to-folder", "dangling-link", "self-link"]


# ---- the rule and the writers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", FILE_NODES)
def test_file_writers_never_replace_a_node_that_is_not_a_regular_file(tmp_path, kind):
    out = tmp_path / "out"
    _make(kind, out, tmp_path)
    before, tree = _state(out), _tree(tmp_path)
    with pytest.raises(OutputPathError, match=r"out: is a (symbolic link|character device|FIFO)"):
        check_writable_file(out)
    with pytest.raises(OutputPathError, match=r"out: is a "):
        atomic_write_bytes(out, b"new")
    with pytest.raises(OutputPathError, match=r"out: is a "):
        atomic_write_json(out, {"a": 1})
    with pytest.raises(OutputPathError, match=r"out: is a "), atomic_text_writer(out) as fh:
        fh.write("never")
    assert _state(out) == before and _tree(tmp_path) == tree  # no temporary file left either


@pytest.mark.parametrize("kind", FOLDER_NODES)
def test_folder_writers_never_replace_or_enter_a_link_or_a_node(tmp_path, kind):
    out = tmp_path / "out"
    _make(kind, out, tmp_path)
    before, tree = _state(out), _tree(tmp_path)
    with pytest.raises(OutputPathError, match=r"out: is a (symbolic link|character device|FIFO)"):
        check_writable_dir(out)
    with pytest.raises(OutputPathError, match=r"out: is a "), atomic_directory(out) as tmp:
        (tmp / "model.onnx").write_bytes(b"x")
    assert _state(out) == before and _tree(tmp_path) == tree  # no `.out.old`, no temporary folder


def test_the_message_says_where_a_link_points_and_to_give_the_real_path(tmp_path):
    (tmp_path / "link.tsv").symlink_to(tmp_path / "real.tsv")
    with pytest.raises(OutputPathError) as err:
        check_writable_file(tmp_path / "link.tsv")
    assert str(err.value) == (
        f"{tmp_path}/link.tsv: is a symbolic link (to {tmp_path}/real.tsv); outputs are never written "
        "through a link: give the real path of the file"
    )


def test_links_above_the_output_are_followed(tmp_path):
    real = tmp_path / "disk"
    real.mkdir()
    (tmp_path / "results").symlink_to(real)
    assert check_writable_dir(tmp_path / "results" / "run") == tmp_path / "results" / "run"
    atomic_write_bytes(tmp_path / "results" / "run" / "v.npy", b"x")
    assert (real / "run" / "v.npy").read_bytes() == b"x"


def test_a_link_loop_above_the_output_is_one_line(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    for check in (check_writable_file, check_writable_dir):
        with pytest.raises(OutputPathError, match=r"loop/x: cannot be used as an output \(Too many levels"):
            check(tmp_path / "loop" / "x")
    with pytest.raises(OutputPathError, match=r"loop/x/y: cannot be (used as an output|created)"):
        check_writable_dir(tmp_path / "loop" / "x" / "y")


def test_a_node_put_there_while_the_file_was_written_is_not_replaced(tmp_path):
    out = tmp_path / "pairs.tsv"
    with pytest.raises(OutputPathError, match="pairs.tsv: is a FIFO"), atomic_text_writer(out) as fh:
        fh.write("rows")
        os.mkfifo(out)
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.tsv"]


def test_a_leftover_old_link_is_unlinked_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "kept.txt").write_text("keep me")
    out = tmp_path / "export"
    out.mkdir()
    (tmp_path / ".export.old").symlink_to(target)
    with atomic_directory(out) as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert (target / "kept.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "export"]


# ---- every command that writes: refused before any work, one line, exit 2 ------------------------------------
@pytest.fixture
def no_model(monkeypatch):
    def refuse(name, **kwargs):
        raise AssertionError(f"the model {name} was loaded: the output should have been refused first")

    monkeypatch.setattr("sentkit.cli._load_model", refuse)


# id: (command line with {out} where the output goes ({sidecar}: the output is fine, its sidecar not), what
# the output is)
COMMANDS = {
    "encode": (["encode", "--model", "avg:minilm-en", "--input", "in.txt", "--output", "{out}"], "file"),
    "encode-shards": (["encode", "--input", "in.txt", "--output", "{out}", "--shard-size", "2"], "folder"),
    "mine": (["mine", "--src", "in.txt", "--tgt", "in2.txt", "--model", "ngram", "--out", "{out}"], "file"),
    "mine-sidecar": (
        ["mine", "--src", "in.txt", "--tgt", "in2.txt", "--model", "m", "--out", "{sidecar}"],
        "file",
    ),
    "compare": (["compare", "a.json", "b.json", "--out", "{out}"], "file"),
    "eval": (["eval", "--tasks", "sts:pairs.tsv", "--out", "{out}"], "folder"),
    "export": (["export", "--out", "{out}", "--overwrite"], "folder"),
    "report": (["report", "a.json", "--out", "{out}"], "folder"),
    "train": (["train", "--output-dir", "{out}"], "folder"),
    "build-ease": (["build", "ease", "--dump", "dump.xml", "--out", "{out}"], "folder"),
    "build-ease-merge": (["build", "ease-merge", "built", "--out", "{out}"], "folder"),
    "build-contradictions": (["build", "contradictions", "--corpus", "in.txt", "--out", "{out}"], "file"),
    "build-contradictions-sidecar": (
        ["build", "contradictions", "--corpus", "in.txt", "--out", "{sidecar}"],
        "file",
    ),
    "build-contradictions-parsed": (
        ["build", "contradictions", "--corpus", "in.txt", "--out", "c.csv", "--parsed", "{out}"],
        "file",
    ),
    "build-translated-sts": (
        ["build", "translated-sts", "--input", "in.txt", "--translator", "m:f", "--out", "{out}"],
        "folder",
    ),
}


@pytest.mark.parametrize("kind", ["chardev", "fifo", "link", "loop"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_an_output_that_is_not_a_file_or_folder(
    tmp_path, monkeypatch, capsys, no_model, command, kind
):
    argv, expects = COMMANDS[command]
    if command == "build-contradictions-parsed" and kind == "link":
        pytest.skip("an existing --parsed file is read, not written: a link to one is an input")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a\nb\n")
    (tmp_path / "in2.txt").write_text("c\nd\n")
    name = "out.csv"  # a name every command takes (contradictions wants .csv or .jsonl)
    if "{sidecar}" in argv:  # the TSV or rows are fine: their sidecar is the node
        node = tmp_path / (f"{name}.json" if argv[0] == "mine" else f"{name}.manifest.json")
    else:
        node = tmp_path / name
    if kind == "loop":
        (tmp_path / "loop").symlink_to("loop")
        name, node = f"loop/{name}", tmp_path / "loop"
    else:
        _make({"link": f"link-to-{expects}"}.get(kind, kind), node, tmp_path)
    before, tree = _state(node), _tree(tmp_path)
    args = [a.replace("{out}", name).replace("{sidecar}", name) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sentkit: error: "), err
    if kind == "loop":
        assert "Too many levels of symbolic links" in err
    else:
        assert f"{node.name}: is a {'symbolic link' if kind == 'link' else ''}" in err
    assert _state(node) == before and _tree(tmp_path) == tree


def test_export_overwrite_refuses_a_link_to_an_earlier_export(tmp_path, monkeypatch, capsys, no_model):
    monkeypatch.chdir(tmp_path)
    export = tmp_path / "exports" / "minilm"
    export.mkdir(parents=True)
    (export / "model.onnx").write_bytes(b"graph")
    (export / "sentkit_onnx.json").write_text('{"files": ["model.onnx"]}')
    (tmp_path / "current").symlink_to(export)
    tree = _tree(tmp_path)
    assert main(["export", "--out", "current", "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"sentkit: error: current: is a symbolic link (to {export}); outputs are never written through a "
        "link: give the real path of the folder\n"
    )
    assert (tmp_path / "current").is_symlink() and _tree(tmp_path) == tree  # no folder, no `.current.old`


def test_the_relevant_words_figure_is_written_atomically_and_never_through_a_link(tmp_path):
    """The JCSE analysis figure goes through the one output rule: a link named as the figure is refused and
    the file it points to is left as it was; a plain path gets a PNG."""
    from sentkit.analysis.relevant_words import plot_distribution

    target = tmp_path / "elsewhere.png"
    target.write_bytes(b"keep")
    link = tmp_path / "pos.png"
    link.symlink_to(target)
    with pytest.raises(OutputPathError, match="symbolic link"):
        plot_distribution({"base": {"NOUN": 100.0}}, link)
    assert target.read_bytes() == b"keep" and link.is_symlink()
    png = plot_distribution({"base": {"NOUN": 100.0}}, tmp_path / "ok.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_build_ease_processes_are_bounded_by_the_cpus(capsys):
    from sentkit.cli import main
    from sentkit.corpus.cpu_limits import usable_cpus

    too_many = usable_cpus() + 1
    with pytest.raises(SystemExit) as stop:
        main(["build", "ease", "--dump", "x.xml.bz2", "--out", "o", "--processes", str(too_many)])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"give 1 to {usable_cpus()}" in err
