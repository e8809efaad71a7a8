"""The README and docs/ stay true to the repository: every relative link and image resolves (anchors to a
heading of the target page, GitHub's slugs), every command in the README names a real `sentkit`
subcommand, script and flags, the command-line page's table lists every subcommand, and the README stays
short with `make run` / `make test` on its first screen. tests/test_docs_run.py runs the blocks.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# notes waiting to be merged into the pages are not part of the guide
PENDING = DOCS / "pending"

README_MAX_LINES = 200
FIRST_SCREEN_LINES = 40
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_TARGET = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def markdown_files() -> list[Path]:
    pages = [p for p in sorted(DOCS.rglob("*.md")) if PENDING not in p.parents]
    return [README, *pages]


def split_fences(text: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """(prose lines with their 1-based numbers, code blocks as (info string, body)); fences excluded."""
    prose, blocks = [], []
    fence, info, body = None, "", []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, info, body = match.group(1), match.group(2).lower(), []
        elif (
            fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip(fence[0])
        ):
            blocks.append((info, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((number, line))
    return prose, blocks


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: the rendered text, lower-cased, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown page, with GitHub's -1, -2 ... suffixes for repeated headings."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def link_targets(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link, image and reference definition outside code."""
    prose, _ = split_fences(path.read_text(encoding="utf-8"))
    targets = []
    for number, line in prose:
        reference = REFERENCE.match(line)
        if reference:
            targets.append((number, reference.group(1)))
            continue
        line = INLINE_CODE.sub("", line)
        targets += [(number, m.group(1)) for m in LINK.finditer(line)]
        targets += [(number, m.group(1)) for m in HTML_TARGET.finditer(line)]
    return targets


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)


def broken_links(path: Path) -> list[str]:
    """One message per relative link of `path` whose file, or whose #anchor in that file, does not exist."""
    problems = []
    for number, target in link_targets(path):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{shown(path)}:{number}: link {target!r}"
        if not resolved.exists():
            problems.append(f"{where}: no such file {resolved}")
        elif anchor:
            if resolved.suffix != ".md" or resolved.is_dir():
                problems.append(f"{where}: an anchor into a file that is not a markdown page")
            elif anchor not in anchors(resolved):
                problems.append(f"{where}: no heading with anchor #{anchor} in {shown(resolved)}")
    return problems


# ---- commands in code blocks -------------------------------------------------------------------------------
def shell_commands(path: Path) -> list[list[str]]:
    """Each command (as words) of the shell code blocks of a page: continuations joined, comments, prompts,
    leading VAR=value assignments dropped, `&&`/`;`/`|` chains split."""
    _, blocks = split_fences(path.read_text(encoding="utf-8"))
    commands = []
    for info, body in blocks:
        if info not in SHELL_BLOCKS:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"^\s*\$\s+", "", line)
            words: list[str] = []
            for word in shlex.split(line, comments=True) + [";"]:
                if word in {"&&", "||", ";", "|"}:
                    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                        words.pop(0)
                    if words:
                        commands.append(as_script_path(words))
                    words = []
                else:
                    words.append(word)
    return commands


def as_script_path(words: list[str]) -> list[str]:
    """`python -m bench.research.x ...` (the repository's own packages) read as `python bench/research/x.py ...`,
    so its script and flags are checked like a script given by path; `python -m pytest` is left as it is."""
    if len(words) >= 3 and words[0] in {"python", "python3"} and words[1] == "-m":
        if words[2].split(".")[0] in {"bench", "examples"}:
            return [words[0], "/".join(words[2].split(".")) + ".py", *words[3:]]
    return words


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def sentkit_parser(words: list[str]) -> tuple[argparse.ArgumentParser, list[str], str]:
    """The parser that handles `sentkit <words>`, the words left for it, and the command's name."""
    from sentkit.cli import _parser, train_parser

    if words and words[0] == "train":  # `sentkit train` parses its own flags (generated from TrainConfig)
        return train_parser(), words[1:], "sentkit train"
    parser, name = _parser(), "sentkit"
    while True:
        choices = subparsers(parser)
        if not choices:
            return parser, words, name
        if not words or words[0] not in choices:
            given = words[0] if words else "(nothing)"
            raise AssertionError(f"`{name}` has no subcommand {given!r}; it has {sorted(choices)}")
        parser, name, words = choices[words[0]], f"{name} {words[0]}", words[1:]


def flags(words: list[str]) -> list[str]:
    """The --flags of a command, also out of synopsis brackets such as `[--k 4]`."""
    found = []
    for word in words:
        word = word.strip("[]")
        if word.startswith("--") and len(word) > 2:
            found.append(word.split("=", 1)[0])
    return found


def unknown_sentkit_flags(words: list[str]) -> list[str]:
    parser, rest, name = sentkit_parser(words)
    return [
        f"`{name}` has no option {flag}" for flag in flags(rest) if flag not in parser._option_string_actions
    ]


def script_texts(script: Path) -> str:
    """A script's text and that of the modules it imports from its own folder (the examples' shared flags)."""
    text = script.read_text(encoding="utf-8")
    local = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", text, flags=re.MULTILINE)
    for module in dict.fromkeys(local):
        for sibling in (script.parent / f"{module}.py", ROOT / ("/".join(module.split(".")) + ".py")):
            if sibling.is_file() and sibling != script:
                text += "\n" + sibling.read_text(encoding="utf-8")
    return text


def unknown_script_flags(words: list[str]) -> list[str]:
    """`python path/to/script.py --flag ...`: the script exists and defines each flag."""
    script = ROOT / words[1]
    if not script.is_file():
        return [f"no script {words[1]}"]
    text = script_texts(script)
    return [
        f"{words[1]} defines no option {flag}"
        for flag in flags(words[2:])
        if not re.search(rf"[\"']{re.escape(flag)}[\"']", text)
    ]


def is_script_command(words: list[str]) -> bool:
    return len(words) >= 2 and words[0] in {"python", "python3"} and words[1].endswith(".py")


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, flags=re.MULTILINE))


README_COMMANDS = shell_commands(README)


def command_id(words: list[str]) -> str:
    return " ".join(words)[:60]


# ---- tests -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_reported(tmp_path):
    (tmp_path / "target.md").write_text("# Target page\n## What `make run` does\n## Same\n## Same\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](target.md#what-make-run-does) [ok](target.md#same-1) ![img](target.md)\n"
        "[missing](nowhere.md) [bad anchor](target.md#nope) `[in code](nowhere.md)`\n"
        "```bash\n[in a block](nowhere.md)\n```\n[ref]: gone.md\n",
        encoding="utf-8",
    )
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert "'nowhere.md'" in problems[0] and "#nope" in problems[1] and "'gone.md'" in problems[2]


def test_github_slugs():
    assert github_slug("What `make run` does") == "what-make-run-does"
    assert github_slug("The paper's numbers") == "the-papers-numbers"
    assert github_slug("Default suite on e5-small-m (the `make run` model)") == (
        "default-suite-on-e5-small-m-the-make-run-model"
    )
    assert github_slug("Bitext mining at 100k x 100k") == "bitext-mining-at-100k-x-100k"
    assert github_slug("5. Stage-2 data") == "5-stage-2-data"


def test_readme_is_short_with_both_make_commands_on_the_first_screen():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    first_screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert "make run" in first_screen and "make test" in first_screen


def test_readme_quick_start_covers_each_job():
    used = {words[1] for words in README_COMMANDS if words[0] == "sentkit" and len(words) > 1}
    assert {"eval", "encode", "train", "export", "report", "build"} <= used
    scripts = {words[1] for words in README_COMMANDS if is_script_command(words)}
    for method in ("train_ease.py", "train_emu.py", "train_jcse.py", "amr_retrofit.py"):
        assert f"examples/{method}" in scripts


@pytest.mark.parametrize("words", [w for w in README_COMMANDS if w[0] == "sentkit"], ids=command_id)
def test_readme_sentkit_command_parses(words, capsys):
    assert unknown_sentkit_flags(words[1:]) == []
    parser, rest, name = sentkit_parser(words[1:])
    try:
        parser.parse_args(rest)
    except SystemExit as stop:
        pytest.fail(f"{' '.join(words)}: {name} refuses it: {capsys.readouterr().err.strip()} ({stop.code})")


@pytest.mark.parametrize("words", [w for w in README_COMMANDS if is_script_command(w)], ids=command_id)
def test_readme_script_command_names_real_flags(words):
    assert unknown_script_flags(words) == []


@pytest.mark.parametrize("words", [w for w in README_COMMANDS if w[0] == "make"], ids=command_id)
def test_readme_make_targets_exist(words):
    targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
    assert set(targets) <= makefile_targets()


@pytest.mark.parametrize("page", markdown_files()[1:], ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_commands_name_real_subcommands_and_flags(page):
    problems = []
    for words in shell_commands(page):
        if words[0] == "sentkit":
            try:
                problems += unknown_sentkit_flags(words[1:])
            except AssertionError as err:
                problems.append(str(err))
        elif is_script_command(words):
            problems += unknown_script_flags(words)
    assert problems == []


def test_a_wrong_subcommand_or_flag_is_reported():
    assert unknown_sentkit_flags(["eval", "--model", "x", "--no-such-flag", "1"]) == [
        "`sentkit eval` has no option --no-such-flag"
    ]
    assert unknown_sentkit_flags(["train", "--lr", "1e-5", "--learning-rate", "1"]) == [
        "`sentkit train` has no option --learning-rate"
    ]
    assert unknown_sentkit_flags(["build", "contradictions", "[--k", "4]", "--out", "x"]) == []
    with pytest.raises(AssertionError, match="no subcommand 'evaluate'"):
        unknown_sentkit_flags(["evaluate", "--model", "x"])
    assert unknown_script_flags(["python", "examples/train_jcse.py", "--quick", "--out", "x"]) == []
    assert unknown_script_flags(["python", "examples/train_jcse.py", "--fast"]) == [
        "examples/train_jcse.py defines no option --fast"
    ]
    assert unknown_script_flags(["python", "examples/nothing.py"]) == ["no script examples/nothing.py"]


# ---- the command table of docs/cli.md ----------------------------------------------------------------------
CLI_PAGE = DOCS / "cli.md"
TABLE_ROW = re.compile(r"^\|\s*\[`sentkit ([\w-]+)`\]\(#([\w-]+)\)\s*\|(.*)\|\s*$")


def command_table(page: Path) -> dict[str, str]:
    """`sentkit <command>` -> its row's text, from the table rows that link a command to its section."""
    rows = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        match = TABLE_ROW.match(line)
        if match:
            rows[match.group(1)] = match.group(3)
    return rows


def test_cli_page_table_lists_every_subcommand():
    from sentkit.cli import _parser

    commands = subparsers(_parser())
    rows = command_table(CLI_PAGE)
    assert sorted(set(commands) - set(rows)) == [], "docs/cli.md's command table lacks these subcommands"
    assert sorted(set(rows) - set(commands)) == [], "docs/cli.md's command table lists commands sentkit lacks"
    kinds = subparsers(commands["build"])
    assert [k for k in kinds if f"`{k}`" not in rows["build"]] == [], "the build row lacks these kinds"


def test_a_missing_table_row_is_found(tmp_path):
    page = tmp_path / "cli.md"
    page.write_text(
        "| command | what |\n|---|---|\n| [`sentkit eval`](#sentkit-eval) | evaluate |\n"
        "| `sentkit mine` | not a link, not a row |\n",
        encoding="utf-8",
    )
    assert command_table(page) == {"eval": " evaluate "}
