"""console.warning is the one way a verb prints a warning: yellow 'warning:' and the text as
written, brackets and all (the text names users' commands, sources and labels)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from perflab.console import SafeConsole, warning

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"


def printed(markup: str) -> str:
    out = io.StringIO()
    SafeConsole(file=out, width=200, color_system=None).print(markup, highlight=False)
    return out.getvalue()


def test_a_warning_prints_its_text_as_written() -> None:
    text = "result 1: pyperf [bold]x[/bold], cell [n=3] of sh -c 'a [b]'"
    assert printed(warning(text)) == f"warning: {text}\n"


def test_every_terminal_warning_goes_through_console_warning() -> None:
    # A line printed as 'warning: ...' anywhere else would be a second home (and the places
    # that wrote it by hand did not all escape the text).  Markdown's '- warning:' is a file's.
    by_hand = re.compile(r"""["'](\[yellow\])?warning:""")
    found = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py") if p.name != "console.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if by_hand.search(line)]
    assert found == []
