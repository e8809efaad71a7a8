"""mkdocs hooks of the documentation site (mkdocs.yml `hooks:`); the pages stay plain GitHub markdown.

- A nav entry that is a glob (`lab/*.md`) becomes the pages it matches, sorted, an `index.md` or
  `README.md` first, so a new lab note joins the site without an edit here.
- A page's link to a repository file outside docs/ (`../examples/train_emu.py`, `../bench/README.md`) works
  in the site: the file is copied under `_repo/` with its repository path (a markdown file becomes a page
  there, not in the nav, whose own links are treated the same way) and the link is pointed at the copy. A
  folder link goes to the folder's README.md when it has one. A link outside docs/ to nothing is a warning,
  so `mkdocs build --strict` fails on it as on a broken link between pages.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files, InclusionLevel

log = logging.getLogger("mkdocs.hooks.sentkit")

REPO_PREFIX = "_repo"
# inline links and images outside code: [text](target "title") / ![alt](target); reference definitions
LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?)([^)\s>]+)(>?(?:\s+\"[^\"]*\")?\s*\))")
REFERENCE = re.compile(r"^(\s*\[[^\]]+\]:\s*<?)(\S+?)(>?(?:\s+\"[^\"]*\")?\s*)$", re.MULTILINE)
FENCE = re.compile(r"^\s*(```+|~~~+)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:|^/|^#", re.IGNORECASE)


def expand_nav(nav: list, docs_dir: Path) -> list:
    """The nav with each glob entry replaced by the pages it matches under docs_dir."""
    expanded: list = []
    for entry in nav:
        if isinstance(entry, str) and any(c in entry for c in "*?["):
            pages = sorted(p.relative_to(docs_dir).as_posix() for p in docs_dir.glob(entry))
            first = [p for p in pages if posixpath.basename(p) in ("index.md", "README.md")]
            expanded += first + [p for p in pages if p not in first]
        elif isinstance(entry, dict):
            expanded.append(
                {k: expand_nav(v, docs_dir) if isinstance(v, list) else v for k, v in entry.items()}
            )
        else:
            expanded.append(entry)
    return expanded


def nav_pages(nav: list) -> list[str]:
    """Every page path a nav names (URLs left out)."""
    pages: list[str] = []
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            if isinstance(value, list):
                pages += nav_pages(value)
            elif isinstance(value, str) and "://" not in value:
                pages.append(value)
    return pages


def on_config(config):
    if config.nav:
        config.nav = expand_nav(config.nav, Path(config.docs_dir))
    return config


def _prose(markdown: str) -> list[tuple[bool, str]]:
    """The text cut into (is prose, chunk) lines, fenced code marked so that links in it are left alone."""
    chunks, fence = [], None
    for line in markdown.splitlines(keepends=True):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            chunks.append((False, line))
        elif fence is not None:
            if line.strip() and not line.strip().strip(fence[0]) and len(line.strip()) >= len(fence):
                fence = None
            chunks.append((False, line))
        else:
            chunks.append((True, line))
    return chunks


def _targets(markdown: str) -> list[str]:
    found = []
    for prose, line in _prose(markdown):
        if prose:
            found += [m.group(2) for m in LINK.finditer(line)]
            found += [m.group(2) for m in REFERENCE.finditer(line)]
    return [t for t in found if not EXTERNAL.match(t)]


class _RepoLinks:
    """Which repository files outside docs/ the site copies, and where each page's source lies."""

    def __init__(self, config):
        self.docs = Path(config.docs_dir).resolve()
        self.root = Path(config.config_file_path).resolve().parent
        self.copied: dict[Path, str] = {}  # repository file -> its src_uri in the site

    def src_uri(self, path: Path) -> str | None:
        if path == self.docs or self.docs in path.parents:
            return path.relative_to(self.docs).as_posix()
        return self.copied.get(path)

    def resolve(self, page: Path, target: str) -> Path | None:
        """The repository file a relative link of `page` names (a folder's README.md), or None."""
        path = (page.parent / target.partition("#")[0]).resolve()
        if path.is_dir() and (path / "README.md").is_file():
            path = path / "README.md"
        return path if path.is_file() else None

    def collect(self, page: Path, files: Files, config) -> None:
        """Copy every file outside docs/ that `page` links to, and what the markdown ones link to in turn."""
        for target in _targets(page.read_text(encoding="utf-8")):
            path = self.resolve(page, target.partition("#")[0] or ".")
            outside = (page.parent / target.partition("#")[0]).resolve()
            if self.docs == outside or self.docs in outside.parents:
                continue  # mkdocs checks links between pages itself
            if path is None:
                if not outside.exists():
                    log.warning("%s links to %r, which does not exist", self.shown(page), target)
                continue  # a folder without a README: left as is (an unrecognized link, info)
            if path in self.copied or self.root not in path.parents:
                continue
            uri = posixpath.join(REPO_PREFIX, path.relative_to(self.root).as_posix())
            self.copied[path] = uri
            files.append(
                File.generated(config, uri, abs_src_path=str(path), inclusion=InclusionLevel.NOT_IN_NAV)
            )
            if path.suffix == ".md":
                self.collect(path, files, config)

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if self.root in path.parents else str(path)

    def rewrite(self, markdown: str, src_uri: str) -> str:
        """Point the links of the page at `src_uri` that leave docs/ at their copies in the site."""
        page = self.docs / src_uri
        for path, uri in self.copied.items():
            if uri == src_uri:
                page = path

        def repl(match: re.Match) -> str:
            target = match.group(2)
            if EXTERNAL.match(target):
                return match.group(0)
            file_part, hash_, anchor = target.partition("#")
            path = self.resolve(page, file_part)
            uri = self.src_uri(path) if path is not None else None
            if uri is None or (path == page and not file_part):
                return match.group(0)
            relative = posixpath.relpath(uri, posixpath.dirname(src_uri) or ".")
            if relative == posixpath.normpath(file_part):
                return match.group(0)
            return match.group(1) + relative + hash_ + anchor + match.group(3)

        out = []
        for prose, line in _prose(markdown):
            if prose:
                line = REFERENCE.sub(repl, LINK.sub(repl, line))
            out.append(line)
        return "".join(out)


_links: _RepoLinks | None = None


def on_files(files: Files, config) -> Files:
    global _links
    _links = _RepoLinks(config)
    for page in [f for f in files.documentation_pages()]:
        if page.abs_src_path:
            _links.collect(Path(page.abs_src_path).resolve(), files, config)
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    return _links.rewrite(markdown, page.file.src_uri) if _links is not None else markdown
