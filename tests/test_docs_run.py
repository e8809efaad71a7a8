"""Every shell and Python block of README.md and docs/ runs as written, on tiny inputs.

Each ```bash / ```sh / ```console / ```python block runs in a fresh temporary folder (the repository's
`examples/`, `bench/` and `constraints.txt` linked in, so the README's "from the root of a clone" holds),
with the benchmark data of $SENTKIT_DATA. Shell blocks run in bash with `set -e`; their `sentkit`
commands run in this process through `sentkit.cli.main` (a bash function hands each one over), so the
packaged model names can stand for a tiny random BERT (`make_tiny_encoder`, named as the model it stands
for) and a long run can be cut short: SUBSTITUTIONS lists every change made to a command, and
TATOEBA_LANGS the languages Tatoeba runs when a block names none; nothing else is changed. A block that
cannot run here (a GPU, a hub download, minutes of training, a synopsis with placeholders) says why on
the line above it:

    <!-- docs-test: skip (a multi-GPU run) -->

and every other block must run. A failure names the page and the line its block starts on.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from test_docs import FENCE, ROOT, markdown_files, shown

RUN_INFOS = {"bash", "sh", "shell", "console", "python"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:(.*?)-->\s*$")
SKIP = re.compile(r"^\s*skip\s*\((.*)\)\s*$")
BLOCK_TIMEOUT_S = 240
# repository files a block may name from the root of a clone
LINKED = ("examples", "bench", "constraints.txt", "pyproject.toml")
# the packaged models and the seed of the tiny BERT that stands for each (distinct weights per model)
STAND_INS = {"minilm-en": 1, "e5-small-m": 2, "muse-m": 3}


@dataclass
class Block:
    path: Path
    line: int  # the opening fence's line, 1-based
    info: str
    body: str
    marker: str | None  # the text of a `<!-- docs-test: ... -->` comment directly above the fence

    @property
    def where(self) -> str:
        return f"{shown(self.path)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        match = SKIP.match(self.marker or "")
        return match.group(1).strip() if match else None


def code_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page with the line each starts on and the docs-test marker above it."""
    blocks, fence, start, info, body, above = [], None, 0, "", [], None
    previous = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            marker = MARKER.match(previous)
            fence, start, info, body = match.group(1), number, match.group(2).lower(), []
            above = marker.group(1) if marker else None
        elif (
            fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip(fence[0])
        ):
            blocks.append(Block(path, start, info, "\n".join(body), above))
            fence = None
        elif fence is not None:
            body.append(line)
        if fence is None:
            previous = line
    return blocks


def marker_problems(block: Block) -> list[str]:
    if block.marker is None:
        return []
    reason = block.skip_reason
    if reason is None:
        return [f"{block.where}: expected `<!-- docs-test: skip (reason) -->`, got {block.marker.strip()!r}"]
    if not reason:
        return [f"{block.where}: a skipped block needs its reason in the parentheses"]
    if block.info not in RUN_INFOS:
        return [f"{block.where}: a docs-test marker above a ```{block.info} block, which never runs"]
    return []


ALL_BLOCKS = [b for page in markdown_files() for b in code_blocks(page)]
RUNNABLE = [b for b in ALL_BLOCKS if b.info in RUN_INFOS]


# ---- substitutions: what keeps a documented command fast here ---------------------------------------------
def _set_option(argv: list[str], flag: str, value: str) -> list[str]:
    if flag in argv:
        i = argv.index(flag)
        return [*argv[: i + 1], value, *argv[i + 2 :]]
    return argv


def _replace_task(argv: list[str], old: str, new: str) -> list[str]:
    if "--tasks" not in argv:
        return argv
    i = argv.index("--tasks") + 1
    tasks = [new if t == old else t for t in argv[i].split(",")]
    return [*argv[:i], ",".join(tasks), *argv[i + 1 :]]


def _add_option(argv: list[str], flag: str, value: str, when: str) -> list[str]:
    return [*argv, flag, value] if when in argv and flag not in argv else argv


# (applies to, change, why): each a function of a `sentkit` command's words
SUBSTITUTIONS = [
    (
        "encode",
        partial(_add_option, flag="--engine", value="local", when="--shard-size"),
        "sharded encoding in process, not on a Ray cluster started for a thousand rows",
    ),
    ("train", partial(_set_option, flag="--max-steps", value="2"), "2 training steps"),
    ("train", partial(_set_option, flag="--eval-steps", value="1"), "a dev evaluation after each step"),
    ("build", partial(_set_option, flag="--max-lines", value="12"), "12 corpus lines for contradictions"),
    ("build", partial(_set_option, flag="--max-rows", value="200"), "200 EASE rows"),
    ("eval", partial(_replace_task, old="default", new="stsb,sts17"), "two tasks of the default suite"),
    (
        "eval",
        partial(_replace_task, old="bitext", new="tatoeba"),
        "the bitext suite without BUCC's 100k lines",
    ),
    ("eval", partial(_add_option, flag="--resamples", value="100", when="eval"), "100 bootstrap resamples"),
    (
        "train",
        partial(_add_option, flag="--max-steps", value="2", when="--config"),
        "a config's run: 2 steps",
    ),
]
# Tatoeba without --langs: these languages, not all 112
TATOEBA_LANGS = ["de", "fr", "ja"]


def substituted(argv: list[str]) -> list[str]:
    for command, change, _ in SUBSTITUTIONS:
        if argv and argv[0] == command:
            argv = change(argv)
    return argv


# ---- running -----------------------------------------------------------------------------------------------
# `sentkit` in a shell block: hand the words (and the folder) to this process over a FIFO and read the exit
# status from another, held open for the whole block (reopening a FIFO per reply races with its last writer)
SHELL_PROLOGUE = r"""
exec 3<"$DOCS_TEST_REPLY"
sentkit() {
  printf '%s\0' "$#" "$PWD" "$@" > "$DOCS_TEST_REQUEST"
  local rc
  read -r rc <&3
  return "$rc"
}
set -eo pipefail
"""


def run_sentkit(argv: list[str], cwd: str, log: io.StringIO) -> int:
    from sentkit.cli import main

    argv = substituted(argv)
    log.write(f"$ sentkit {shlex.join(argv)}\n")
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            try:
                return main(argv)
            except SystemExit as stop:  # argparse
                return stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(previous)


def read_request(fd: int, buffer: bytearray, proc: subprocess.Popen, deadline: float) -> list[str] | None:
    """The next `sentkit` call of the shell (its folder first), or None once the shell has ended."""
    while True:
        fields = bytes(buffer).split(b"\0")
        if len(fields) > 1:
            count = int(fields[0])
            if len(fields) > count + 2:
                del buffer[: sum(len(f) + 1 for f in fields[: count + 2])]
                return [f.decode() for f in fields[1 : count + 2]]
        if time.monotonic() > deadline:
            _kill_group(proc)
            raise AssertionError(f"the block ran past {BLOCK_TIMEOUT_S} s")
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            buffer += os.read(fd, 1 << 16)
        elif proc.poll() is not None:
            ready, _, _ = select.select([fd], [], [], 0)
            if not ready:
                return None


def run_shell(block: Block, work: Path, env: dict[str, str], log: io.StringIO) -> int:
    pipes = Path(tempfile.mkdtemp(prefix="pipes-", dir=work.parent))
    request, reply = pipes / "request.fifo", pipes / "reply.fifo"
    for fifo in (request, reply):
        os.mkfifo(fifo)
    env = {**env, "DOCS_TEST_REQUEST": str(request), "DOCS_TEST_REPLY": str(reply)}
    shell_log = pipes / "shell.log"
    # read-write: opening never blocks, and neither end sees EOF while the block runs
    fd = os.open(request, os.O_RDWR | os.O_NONBLOCK)
    reply_fd = os.open(reply, os.O_RDWR)
    proc = None
    try:
        with open(shell_log, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                ["bash", "-c", SHELL_PROLOGUE + shell_body(block.body)],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a timeout ends every program it started
            )
            buffer, deadline = bytearray(), time.monotonic() + BLOCK_TIMEOUT_S
            while (words := read_request(fd, buffer, proc, deadline)) is not None:
                cwd, argv = words[0], words[1:]
                start = time.perf_counter()
                rc = run_sentkit(argv, cwd, log)
                log.write(f"(exit {rc}, {time.perf_counter() - start:.1f} s)\n")
                os.write(reply_fd, f"{rc}\n".encode())
            rc = proc.wait()
    finally:
        if proc is not None:
            _kill_group(proc)
        os.close(fd)
        os.close(reply_fd)
    log.write("--- shell output ---\n" + shell_log.read_text(encoding="utf-8"))
    return rc


def _kill_group(proc: subprocess.Popen) -> None:
    """End the block's shell and whatever it left running (a program a block starts must not outlive it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def shell_body(body: str) -> str:
    """A ```console block's `$ ` prompts dropped (its other lines are output and are left out)."""
    lines = body.splitlines()
    if any(line.startswith("$ ") for line in lines):
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    return "\n".join(lines) + "\n"


def run_python(block: Block, work: Path, log: io.StringIO) -> None:
    # padded so that a traceback's line numbers are the page's own
    code = compile("\n" * block.line + block.body, str(block.path), "exec")
    previous = os.getcwd()
    os.chdir(work)
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            exec(code, {"__name__": "__docs__"})
    finally:
        os.chdir(previous)


def tiny_stand_in(name: str, seed: int, pooling: str | None = None, **_):
    from conftest import make_tiny_encoder

    encoder = make_tiny_encoder(pooling=pooling or "mean", seed=seed)
    encoder.name = name
    return encoder


@pytest.fixture(scope="module")
def docs_env(tmp_path_factory, data_root):
    """The process-wide settings of every block: stand-in models, a private cache, `python` on PATH."""
    import torch

    from sentkit.encoders import ENCODERS
    from sentkit.tasks import TASKS

    base = tmp_path_factory.mktemp("docs-run")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name in ("python", "python3"):  # a script, not a link: a link outside the venv loses its packages
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SENTKIT_CACHE": str(base / "cache"),
        "SENTKIT_DATA": str(data_root),
        "HF_HUB_OFFLINE": "1",
        "MPLBACKEND": "Agg",
        "BROWSER": "true",  # `python -m webbrowser` opens nothing
    }
    threads = torch.get_num_threads()
    # one thread: a tiny model gains nothing from two, and on a busy machine two threads run ten times slower
    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        for name, seed in STAND_INS.items():
            mp.setitem(ENCODERS._items, name, partial(tiny_stand_in, name, seed))
        tatoeba = TASKS.get("tatoeba")
        mp.setitem(
            TASKS._items, "tatoeba", lambda langs=None, **kw: tatoeba(langs=langs or TATOEBA_LANGS, **kw)
        )
        yield dict(os.environ)
    torch.set_num_threads(threads)


CONFIG_NAME = re.compile(r"^#\s*([\w.-]+\.ya?ml)\b")


def config_files(path: Path) -> dict[str, str]:
    """The config files a page shows whole: ```yaml blocks whose first line names the file (`# run.yaml: ...`)."""
    files = {}
    for block in code_blocks(path):
        named = CONFIG_NAME.match(block.body)
        if block.info in {"yaml", "yml"} and named:
            files[named.group(1)] = block.body + "\n"
    return files


def block_folder(tmp_path: Path, block: Block) -> Path:
    """A fresh folder standing for the root of a clone, with the config files the block's page shows."""
    work = tmp_path / "clone"
    work.mkdir()
    for name in LINKED:
        (work / name).symlink_to(ROOT / name)
    for name, text in config_files(block.path).items():
        (work / name).write_text(text, encoding="utf-8")
    return work


# ---- tests -------------------------------------------------------------------------------------------------
def test_every_marker_is_a_skip_with_a_reason():
    problems = [p for block in ALL_BLOCKS for p in marker_problems(block)]
    assert problems == []


def test_markers_are_read_from_the_line_above_the_fence(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: skip (needs a GPU) -->\n```bash\nnvidia-smi\n```\n\n"
        "<!-- docs-test: skip () -->\n```python\nx\n```\n"
        "<!-- docs-test: skip -->\n```bash\nls\n```\n"
        "```bash\necho ok\n```\n",
        encoding="utf-8",
    )
    blocks = code_blocks(page)
    assert [(b.line, b.skip_reason) for b in blocks] == [(2, "needs a GPU"), (7, ""), (11, None), (14, None)]
    assert [len(marker_problems(b)) for b in blocks] == [0, 1, 1, 0]
    assert "page.md:11" in marker_problems(blocks[2])[0]


def test_substitutions_touch_only_their_options():
    argv = ["train", "--model", "e5-small-m", "--max-steps", "30", "--eval-steps", "5", "--lr", "1e-5"]
    assert substituted(argv) == [
        "train",
        "--model",
        "e5-small-m",
        "--max-steps",
        "2",
        "--eval-steps",
        "1",
    ] + [
        "--lr",
        "1e-5",
    ]
    assert substituted(["eval", "--tasks", "default,sts:p.tsv"]) == [
        "eval",
        "--tasks",
        "stsb,sts17,sts:p.tsv",
        "--resamples",
        "100",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_block_runs_as_written(block, docs_env, tmp_path):
    if block.skip_reason:
        pytest.skip(f"{block.where}: {block.skip_reason}")
    run_block(block, block_folder(tmp_path, block), docs_env)


@pytest.mark.slow
def test_readme_compare_runs_again_beside_earlier_runs(docs_env, tmp_path):
    """The README's compare block runs a second time in the same folder, beside the first run's files."""
    (block,) = [b for b in RUNNABLE if b.path == ROOT / "README.md" and "sentkit compare" in b.body]
    work = block_folder(tmp_path, block)
    run_block(block, work, docs_env)
    run_block(block, work, docs_env)
    assert len(list((work / "results").glob("minilm-en__*.json"))) == 2


def run_block(block: Block, work: Path, env: dict[str, str]) -> None:
    log = io.StringIO()
    try:
        if block.info == "python":
            run_python(block, work, log)
            rc = 0
        else:
            rc = run_shell(block, work, env, log)
    except Exception as err:
        raise AssertionError(f"{block.where}: the block fails: {err!r}\n{log.getvalue()[-6000:]}") from err
    assert rc == 0, f"{block.where}: the block exits {rc}\n{log.getvalue()[-6000:]}"
