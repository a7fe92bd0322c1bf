"""Comments and docstrings in src/perflab say what the code does now: no issue numbers of this
project, no "used to".  A reference to another project's issue names it as owner/repo#N
(dotnet/runtime#77568), which explains why the code is as it is: that one stays, and so does a
CSS colour (color:#222)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"

# "issue 24", "issues #14", "(#19)": this project's tracker; "it used to", "used to be": what
# the code did ("a key used to identify cells" describes a use, and is left alone).
HISTORY = re.compile(r"\bissues? #?\d+|(?<![\w/.:-])#\d{2,}\b|\bused to be\b"
                     r"|\b(?:it|they|this|that|which|we|perflab) used to\b", re.IGNORECASE)


def history_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if HISTORY.search(line)]


def test_no_comment_in_src_tells_history() -> None:
    found = [f"{p.relative_to(SRC)}: {line}" for p in sorted(SRC.rglob("*.py"))
             for line in history_lines(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_pattern_finds_history_and_leaves_the_rest() -> None:
    told = ("# the options were stored until issue 24", "x = 1  # (issue #14)",
            "it used to be rebuilt each time", "# as asked in #19")
    kept = ("after the dotnet/runtime#77568 graphs", "a key used to identify cells",
            "color:#222;background:#fff", "procrastinate/procrastinate#1108",
            "a value that is used to sort")
    assert [history_lines(t) for t in told] == [[t] for t in told]
    assert [history_lines(t) for t in kept] == [[] for _ in kept]
