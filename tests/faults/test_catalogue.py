"""docs/reliability.md is the fault catalogue as tables (fault -> what perflab does -> test).
This keeps the tables honest both ways: every test a row names exists (with the parameter id it
names), every row names a test, and every test in tests/faults/ has a row.

A test is named in the last column in backticks, as ``test_x`` (in the file the section's
heading names, "### Commands (tests/faults/test_commands.py)"), ``file::test_x`` (a file of
tests/faults/) or ``tests/dir/file.py::test_x`` (elsewhere), optionally with ``[id]`` or
``[a/b]`` for parametrized ids.  "same" means the row above's test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
FAULTS = ROOT / "tests" / "faults"

NAME = re.compile(r"^(?:(?P<file>[\w/.]+?)(?:\.py)?::)?(?P<test>test_\w+)(?:\[(?P<ids>[^\]]+)\])?$")


def _cells(row: str) -> list[str]:
    """A GFM table row's cells: split on '|' not escaped as '\\|' (GFM splits on a bare '|'
    even inside a code span, so the doc must escape it there)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _rows() -> list[tuple[int, str | None, list[str]]]:
    """(line number, the section's default file, the test cell's backticked names)."""
    out = []
    default: str | None = None
    for n, line in enumerate(DOC.read_text().splitlines(), 1):
        if line.startswith("#"):
            m = re.search(r"\((tests/faults/test_\w+)\.py\)", line)
            default = m.group(1) if m else None
            continue
        if not line.startswith("|") or re.fullmatch(r"\|[\s|:-]+\|", line):
            continue
        cells = _cells(line)
        if cells[-1].lower() in ("test", ""):
            continue  # a header row
        out.append((n, default, cells))
    return out


def _file(name: str | None, default: str | None) -> Path:
    if name is None:
        assert default, "a test named without its file in a section whose heading names none"
        return ROOT / f"{default}.py"
    if "/" in name:
        return ROOT / f"{name}.py"
    return FAULTS / f"{name}.py"


def _tests(path: Path) -> dict[str, str]:
    """Test function name -> its source (decorators included, so parametrize ids are there)."""
    text = path.read_text()
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found[node.name] = "\n".join(text.splitlines()[start - 1:node.end_lineno])
    return found


def _named() -> list[tuple[int, Path, str, str | None]]:
    named = []
    last: list[tuple[int, Path, str, str | None]] = []
    for n, default, cells in _rows():
        cell = cells[-1]
        spans = re.findall(r"`([^`]+)`", cell)
        tests = []
        for s in spans:
            m = NAME.match(s)
            if m:
                tests.append((n, _file(m.group("file"), default), m.group("test"),
                              m.group("ids")))
        if not tests:
            assert cell.lower().startswith("same"), (
                f"docs/reliability.md:{n}: the row names no test ({cell!r})")
            tests = last
        named += tests
        last = tests
    return named


def test_every_test_the_catalogue_names_exists() -> None:
    named = _named()
    assert len(named) >= 100, "the catalogue tables were not found"
    cache: dict[Path, dict[str, str]] = {}
    for n, path, test, ids in named:
        assert path.is_file(), f"docs/reliability.md:{n}: no file {path.relative_to(ROOT)}"
        tests = cache.setdefault(path, _tests(path))
        assert test in tests, f"docs/reliability.md:{n}: {path.name} has no {test}"
        for one in (ids or "").split("/"):
            if one:
                assert re.search(rf"[\"']{re.escape(one)}[\"']", tests[test]), (
                    f"docs/reliability.md:{n}: {test} has no parameter id {one!r}")


def test_every_fault_test_has_a_row() -> None:
    named = {(path, test) for _, path, test, _ in _named()}
    missing = [f"{path.name}::{test}" for path in sorted(FAULTS.glob("test_*.py"))
               if path.name != Path(__file__).name
               for test in _tests(path) if (path, test) not in named]
    assert not missing, f"tests/faults/ tests with no row in docs/reliability.md: {missing}"


def test_table_rows_have_three_cells() -> None:
    # A bare '|' in a cell (even in `code`) splits the row in GFM: the test column shifts.
    bad = [n for n, _, cells in _rows() if len(cells) != 3]
    assert not bad, f"docs/reliability.md rows with other than 3 cells (escape '|' as '\\|'): {bad}"
