"""The one table model (perflab.table): each renderer lays out the same cells, escaped for its
medium."""

from __future__ import annotations

import pytest
from rich.console import Console

from perflab.table import Cell, Column, Table

pytestmark = pytest.mark.unit


def sample() -> Table:
    t = Table("a | b <title>", [Column("configuration", "left"), Column("median"),
                                Column("verdict", "left", role="verdict")],
              notes=["2 of 3 <slower>"])
    t.add_row("base|line", "1.00 ms", Cell("slower (regression)", "bold red"))
    t.add_row("fast", "0.50 ms", ("faster", "bold green", "extra"))
    return t


def test_markdown_escapes_every_cell_and_aligns_text_left() -> None:
    assert sample().to_markdown() == (
        "### a \\| b \\<title>\n\n"
        "| configuration | median | verdict |\n"
        "|---|---:|---|\n"
        "| base\\|line | 1.00 ms | slower (regression) |\n"
        "| fast | 0.50 ms | faster |\n\n"
        "- 2 of 3 \\<slower>\n")
    assert Table("", []).to_markdown() == "(no data)\n"


def test_html_classes_follow_alignment_and_verdict_words() -> None:
    page = sample().to_html()
    assert page.startswith("<div class='scroll'><table><thead><tr><th class='l'>configuration"
                           "</th><th>median</th>")
    assert "<td class='l slower regression v'>slower (regression)</td>" in page
    assert "<td class='l faster extra v'>faster</td>" in page
    assert "<td class='l'>base|line</td>" in page
    assert page.endswith("</table></div><p class='summary'>2 of 3 &lt;slower&gt;</p>")
    assert "<table class='wrap'>" in sample().to_html(wrap=True)


def test_csv_and_rows_from_dicts() -> None:
    t = Table.from_dicts([{"cell": "n=1", "x": 1.5, "y": None}, {"cell": 'a,"b"'}],
                         left=["cell"])
    assert t.to_csv() == 'cell,x,y\nn=1,1.5,\n"a,""b""",,\n'
    with pytest.raises(ValueError):
        t.add_row("only one")


def test_the_terminal_shows_cells_as_written_and_stacks_when_too_narrow() -> None:
    wide = Console(record=True, width=120)
    sample().print(wide)
    out = wide.export_text()
    assert "base|line" in out and "[bold]" not in out and "  2 of 3 <slower>" in out
    t = Table("[x] narrow", [Column("name", "left"), Column("a long header here"),
                             Column("another long header")])
    t.add_row("[dim]row", "12,345,678 ns", "verdict words that are long")
    narrow = Console(record=True, width=30)
    narrow.print(t.to_rich(narrow))
    text = narrow.export_text()
    assert text.startswith("[x] narrow\n[dim]row\n  a long header here:") and "┃" not in text
