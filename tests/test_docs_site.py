"""The documentation site (mkdocs.yml, `make docs`) builds with `--strict`: a broken link or anchor between
pages, a page the nav names that does not exist, a page the nav leaves out, a docstring mkdocstrings cannot
render or a link out of docs/ to a missing file fails it. The nav lists every user page and lab note.

Needs the `docs` extra (mkdocs, mkdocs-material, mkdocstrings-python), which `make test` installs; without it
the tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# pages the site renders without naming them in the nav: the files behind the claims (mkdocs.yml not_in_nav)
NOT_IN_NAV = ("results",)
# notes waiting to be merged into the pages (mkdocs.yml exclude_docs; tests/test_docs.py leaves them out too)
EXCLUDED = ("pending",)

pytestmark = pytest.mark.docs_site

if not os.environ.get("CI"):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")
    pytest.importorskip("material", reason="the docs extra is not installed")


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT / "src"))
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def warnings(result: subprocess.CompletedProcess) -> list[str]:
    """mkdocs' warnings and errors, each with its indented continuation lines (the orphan pages' list)."""
    found: list[str] = []
    inside = False
    for line in result.stderr.splitlines():
        if line.startswith(("WARNING", "ERROR")):
            found.append(line)
            inside = True
        elif inside and line.startswith("  "):
            found[-1] += "\n" + line
        else:
            inside = False
    return found


def test_site_builds_with_no_warning(tmp_path):
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0 and not warnings(result), (
        "\n".join(warnings(result)) or result.stderr[-3000:]
    )
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    api = (site / "api" / "sentkit.html").read_text(encoding="utf-8")
    # mkdocstrings rendered the package root's docstrings, not just the page's heading
    assert "load_encoder" in api and "retrofit:" in api


def test_nav_lists_every_page():
    from mkdocs.config import load_config

    sys.path.insert(0, str(ROOT))
    try:
        import mkdocs_hooks
    finally:
        sys.path.remove(str(ROOT))
    config = load_config(str(ROOT / "mkdocs.yml"))
    listed = mkdocs_hooks.nav_pages(mkdocs_hooks.expand_nav(config.nav, DOCS))
    pages = {
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] not in NOT_IN_NAV + EXCLUDED
    }
    assert not pages - set(listed), f"pages missing from mkdocs.yml's nav: {sorted(pages - set(listed))}"
    assert not set(listed) - pages, f"nav entries with no page: {sorted(set(listed) - pages)}"
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"
    assert any(p.startswith("lab/") for p in listed) == (DOCS / "lab").is_dir()


def small_site(tmp_path: Path, pages: dict[str, str], nav: list[str]) -> Path:
    """A site that inherits mkdocs.yml's settings and hooks, without the API pages."""
    docs = tmp_path / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(textwrap.dedent(text), encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\n"
        "docs_dir: docs\n"
        f"hooks: [{ROOT / 'mkdocs_hooks.py'}]\n"
        "plugins: [search]\n"
        f"nav: {nav}\n",
        encoding="utf-8",
    )
    return config


def test_broken_links_a_missing_page_and_an_orphan_fail_the_build(tmp_path):
    config = small_site(
        tmp_path,
        {
            "index.md": """\
                # Home

                [a page](guide.md#no-such-heading), [gone](gone.md), [a script](../no_such_script.py)
            """,
            "guide.md": "# Guide\n\n## Real heading\n",
            "orphan.md": "# Not in the nav\n",
        },
        ["index.md", "guide.md", "missing.md"],
    )
    result = build(config, tmp_path / "site")
    found = "\n".join(warnings(result))
    assert result.returncode != 0
    assert "'gone.md'" in found and "no-such-heading" in found and "no_such_script.py" in found
    assert "orphan.md" in found and "missing.md" in found


def test_links_out_of_docs_reach_a_copy_in_the_site(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text("print('train')\n", encoding="utf-8")
    (tmp_path / "examples" / "README.md").write_text(
        "# Examples\n\n[the script](train.py), [the guide](../docs/guide.md#real-heading)\n", encoding="utf-8"
    )
    config = small_site(
        tmp_path,
        {
            "index.md": "# Home\n\n[train](../examples/train.py), [all examples](../examples/)\n",
            # a link after a closed code fence is prose again and is pointed at the copy too
            "guide.md": "# Guide\n\n## Real heading\n\n```bash\ncat [not a link](../nowhere.py)\n```\n\n"
            "[after the code](../examples/train.py)\n",
        },
        ["index.md", "guide.md"],
    )
    result = build(config, tmp_path / "site")
    assert result.returncode == 0 and not warnings(result), (
        "\n".join(warnings(result)) or result.stderr[-3000:]
    )
    site = tmp_path / "site"
    assert (site / "_repo/examples/train.py").read_text(encoding="utf-8") == "print('train')\n"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="_repo/examples/train.py"' in index and 'href="_repo/examples/index.html"' in index
    guide = (site / "guide.html").read_text(encoding="utf-8")
    assert 'href="_repo/examples/train.py"' in guide
    # mkdocs turns a README.md into its folder's index page
    readme = (site / "_repo/examples/index.html").read_text(encoding="utf-8")
    assert 'href="train.py"' in readme and 'href="../../guide.html#real-heading"' in readme
