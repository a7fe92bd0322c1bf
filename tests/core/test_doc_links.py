"""Every relative link in README.md and docs/**/*.md leads somewhere on GitHub.

A link's target is read relative to the file that holds it (as GitHub resolves it); the file or
folder must exist inside the repository, and a ``#anchor`` must be the id GitHub gives one of the
target file's headings.  Links are read with markdown-it (CommonMark), so code spans and code
blocks are not links; web and mail links (any URL scheme) are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MD = MarkdownIt("commonmark").enable("table")


def doc_files(root: Path) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("**/*.md"))]


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of each link and image in ``text``."""
    found = []
    for block in MD.parse(text):
        line = (block.map or [0])[0] + 1
        for tok in block.children or []:
            line += tok.type in ("softbreak", "hardbreak")
            target = tok.attrGet("href") if tok.type == "link_open" else tok.attrGet("src")
            if tok.type in ("link_open", "image") and isinstance(target, str):
                found.append((line, target))
    return found


def github_slug(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def heading_text(inline: Token) -> str:
    """A heading's text as shown: text and code spans, without the Markdown markers."""
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def anchors(text: str) -> set[str]:
    """The ids of the headings in ``text``; a repeated id gets -1, -2, ... as on GitHub."""
    tokens = MD.parse(text)
    ids: set[str] = set()
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type != "heading_open":
            continue
        slug = base = github_slug(heading_text(inline))
        n = 0
        while slug in ids:
            n += 1
            slug = f"{base}-{n}"
        ids.add(slug)
    return ids


def broken_links(path: Path, root: Path) -> list[str]:
    """``file:line: target (why)`` for each relative link in ``path`` that leads nowhere."""
    broken = []
    where = path.relative_to(root)
    for line, target in links(path.read_text()):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue
        dest = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not dest.is_relative_to(root) or not dest.exists():
            broken.append(f"{where}:{line}: {target} (no such file)")
        elif parts.fragment and dest.suffix == ".md" and \
                unquote(parts.fragment) not in anchors(dest.read_text()):
            broken.append(f"{where}:{line}: {target} (no such heading)")
    return broken


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.json").write_text("{}")
    (tmp_path / "README.md").write_text("# Perf lab\n\nSee [stats](docs/stats.md#the-u-test).\n")
    (tmp_path / "docs" / "stats.md").write_text(
        "# Stats\n\n## The `U` test!\n\n## Notes\n\n## Notes\n\n"
        "[up](../README.md#perf-lab) [data](../bench/a.json) [dir](../bench) "
        "[again](#notes-1) [web](https://example.org/x.md) [mail](mailto:a@b.c)\n\n"
        "`[code](nowhere.md)`\n\n"
        "[root-path](docs/stats.md) [gone](../bench/b.json)\n[heading](#nothing-here) "
        "![img](img/p.png) [out](../../elsewhere.md)\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == []
    assert broken_links(tmp_path / "docs" / "stats.md", tmp_path) == [
        "docs/stats.md:13: docs/stats.md (no such file)",
        "docs/stats.md:13: ../bench/b.json (no such file)",
        "docs/stats.md:14: #nothing-here (no such heading)",
        "docs/stats.md:14: img/p.png (no such file)",
        "docs/stats.md:14: ../../elsewhere.md (no such file)",
    ]


def test_github_slugs() -> None:
    assert anchors("# A tour\n## `--metric`, and CPU time (per op)\n## A tour\n") == {
        "a-tour", "--metric-and-cpu-time-per-op", "a-tour-1"}


def test_every_relative_link_in_the_docs_leads_somewhere() -> None:
    files = doc_files(ROOT)
    assert len(files) > 10 and sum(len(links(f.read_text())) for f in files) > 50
    broken = [b for f in files for b in broken_links(f, ROOT)]
    assert not broken, "\n".join(broken)
