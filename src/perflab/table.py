"""The one table model of perflab, and its renderers: the terminal (rich, fitted to the
terminal's width), GitHub Markdown (THE Markdown table writer), HTML and CSV.

A table holds text already formatted (every number through perflab.format): the renderers only
lay it out and escape it for their medium.  Light to import (the CLI's start-up budget,
tests/core/test_cli_startup.py): rich is imported only inside the terminal renderer.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from perflab.errors import printable
from perflab.format import md_text

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table as RichTable

Align = Literal["left", "right"]


class Cell(NamedTuple):
    """One cell: its text, its terminal style (a rich style: "bold red"), its HTML class
    (the page's stylesheet: "slower regression") and where it links to (a relative URL, in
    HTML and Markdown); a plain str is a cell with none of them."""
    text: str
    style: str = ""
    cls: str = ""
    href: str = ""


CellLike = str | tuple[str, str, str] | Cell


def _cell(c: CellLike) -> Cell:
    return Cell(c) if isinstance(c, str) else Cell(*c)


@dataclass(frozen=True)
class Column:
    """A column: its header, how its cells align (text left, figures right), whether the
    terminal may wrap its cells (``wrap``) or fold a long word (``fold``), and its role:
    "verdict" cells get HTML classes from their words (faster, slower, regression, ...),
    "code" cells (commits, parameters) are set as code in HTML."""
    header: str
    align: Align = "right"
    wrap: bool = True
    fold: bool = False
    role: Literal["", "verdict", "code"] = ""


@dataclass
class Table:
    """A titled table of formatted text, with notes shown under it."""
    title: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    show_lines: bool = False
    # a matrix of short figures drawn narrow: no outer edge, no cell padding, a space between
    # columns and a rule under the header (a dozen configurations across 120 columns)
    compact: bool = False

    def add_row(self, *cells: CellLike) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([_cell(c) for c in cells])

    @classmethod
    def of(cls, title: str, headers: Iterable[str | Column], **kw: Any) -> Table:
        """A table with these columns (a bare header is a right-aligned column)."""
        return cls(title, [h if isinstance(h, Column) else Column(h) for h in headers], **kw)

    @classmethod
    def from_dicts(cls, rows: Sequence[Mapping[str, object]], title: str = "", *,
                   left: Collection[str] = (), no_wrap: Collection[str] = (),
                   fold: bool = False, verdict: str = "verdict",
                   styles: Sequence[str] | None = None) -> Table:
        """Rows of one shape as a table: the first row's keys are the columns (a key missing
        in a later row is an empty cell, None too); ``styles`` colour each row's ``verdict``
        cell in the terminal."""
        keys = list(rows[0]) if rows else []
        t = cls(title, [Column(k, "left" if k in left else "right", k not in no_wrap, fold,
                               "verdict" if k == verdict else "") for k in keys])
        for i, r in enumerate(rows):
            style = styles[i] if styles else ""
            t.rows.append([Cell(_text(r.get(k)), style if k == verdict else "")
                           for k in keys])
        return t

    def natural_width(self) -> int:
        """How wide the terminal table is with every cell on one line: each column as wide as
        its longest text, plus the cell padding and the borders."""
        from rich.cells import cell_len

        widths = [max((cell_len(line) for text in (col.header, *(r[i].text for r in self.rows))
                       for line in text.splitlines() or [""]), default=0)
                  for i, col in enumerate(self.columns)]
        return sum(widths) + _frame(len(widths), self.compact)

    def rich_table(self) -> RichTable:
        """The table as rich draws it (rich imported here only: the CLI's start-up budget)."""
        from rich.table import Table as RichTable
        from rich.text import Text

        def text(s: str, style: str = "") -> Text:
            # shown as written (not read as markup), control characters as \xNN: a name
            # cannot clear or retitle the terminal (what console.SafeConsole does for str)
            return Text(printable(s, lines=True), style=style)

        from rich import box

        t = RichTable(title=text(self.title, "table.title") if self.title else None,
                      title_justify="left", header_style="bold", show_lines=self.show_lines,
                      **({"box": box.SIMPLE_HEAD, "padding": 0, "show_edge": False,
                          "pad_edge": False} if self.compact else {}))
        for c in self.columns:
            t.add_column(text(c.header), justify=c.align, no_wrap=not c.wrap,
                         overflow="fold" if c.fold else "ellipsis")
        for row in self.rows:
            t.add_row(*(text(c.text, c.style) for c in row))
        if not self.columns:
            t.add_column("(no data)")
        return t

    def __rich__(self) -> RichTable:
        """console.print(table) draws it (unfitted: to_rich fits it to the console)."""
        return self.rich_table()

    def to_rich(self, console: Console) -> RenderableType:
        """The terminal table, fitted to the console's width (fit)."""
        return fit(self.rich_table(), console)

    def print(self, console: Console) -> None:
        """The fitted table, then its notes, one line each (indented, never wrapped)."""
        console.print(self.to_rich(console))
        for n in self.notes:
            console.print(printable(f"  {n}", lines=True), highlight=False, soft_wrap=True,
                          markup=False)

    def to_markdown(self) -> str:
        """GitHub Markdown: a ### title and one table, then its notes as a list; every cell
        escaped (md_text); left columns aligned left, the others (figures) right."""
        out = [f"### {md_text(self.title)}", ""] if self.title else []
        if not self.columns:
            return "\n".join(out + ["(no data)", ""])
        out.append("| " + " | ".join(md_text(c.header) for c in self.columns) + " |")
        out.append("|" + "|".join("---" if c.align == "left" else "---:"
                                  for c in self.columns) + "|")
        out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in self.rows]
        if self.notes:
            out += [""] + [f"- {md_text(n)}" for n in self.notes]
        out.append("")
        return "\n".join(out)

    def to_html(self, *, wrap: bool = False) -> str:
        """An HTML table in a box that scrolls sideways (a wide matrix scrolls inside the page
        instead of stretching it past 1,400 px), then its notes; the classes are those of
        reports.html.CSS (l: left, wrap: text that wraps, v: the verdict column, which stays in
        view as the rest scrolls, and the verdict's words)."""
        if not self.columns:
            return "<p class='muted'>(no data)</p>"
        head = "".join(_tag("th", c.header, " ".join(
            ["l"] * (c.align == "left") + ["v"] * (c.role == "verdict"))) for c in self.columns)
        body = "".join("<tr>" + "".join(
            _td(col, c)
            for col, c in zip(self.columns, row, strict=True)) + "</tr>" for row in self.rows)
        cls = " class='wrap'" if wrap else ""
        notes = "".join(_tag("p", n, "summary") for n in self.notes)
        return (f"<div class='scroll'><table{cls}><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></div>{notes}")

    def to_csv(self) -> str:
        """The table as CSV (a header line, then one line per row)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([csv_cell(c.header) for c in self.columns])
        w.writerows([csv_cell(c.text) for c in row] for row in self.rows)
        return buf.getvalue()


def csv_cell(v: object) -> object:
    """A CSV cell: a string's control characters shown as \\xNN (a cell opened in a terminal,
    `cat results.csv`, must not clear or retitle it); a newline is kept (the writer quotes it)."""
    return printable(v, lines=True) if isinstance(v, str) else v


def _md_cell(c: Cell) -> str:
    return f"[{md_text(c.text)}]({c.href})" if c.href and c.text else md_text(c.text)


def _text(v: object) -> str:
    return "" if v is None else str(v)


def _tag(tag: str, text: str, cls: str) -> str:
    attr = f" class='{cls}'" if cls else ""
    return f"<{tag}{attr}>{html.escape(text)}</{tag}>"


def _td(col: Column, c: Cell) -> str:
    inner = html.escape(c.text)
    if col.role == "code" and c.text:
        inner = f"<code>{inner}</code>"
    if c.href:
        inner = f"<a href='{html.escape(c.href)}'>{inner}</a>"
    cls = _html_class(col, c)
    return f"<td class='{cls}'>{inner}</td>" if cls else f"<td>{inner}</td>"


def _html_class(col: Column, c: Cell) -> str:
    cls = "l" if col.align == "left" else ""
    if col.role == "verdict":
        cls += " " + c.text.split(" ")[0]
        # memory and counts read larger/smaller: colour by regression/improvement
        cls += "".join(f" {w}" for w in ("regression", "improvement") if w in c.text)
    if c.cls:
        cls += " " + c.cls
    if col.role == "verdict":  # v: the column kept in view on a narrow screen (html.CSS)
        cls += " v"
    return " ".join(cls.split())


def _unbroken_width(table: RichTable) -> int:
    """The narrowest the table can be without breaking a word inside a cell: each column as
    wide as its longest word, plus the cell padding and the borders."""
    from rich.text import Text

    widths = [max((len(w) for c in (col.header, *col.cells)
                   for w in (c.plain if isinstance(c, Text) else
                             Text.from_markup(str(c)).plain).split()), default=1)
              for col in table.columns]
    return sum(widths) + _frame(len(widths), not table.show_edge)


def _frame(columns: int, compact: bool) -> int:
    """The width of a table's borders and padding: a bordered table's column has a space each
    side and a line between; a compact one's only a space between (Table.compact)."""
    return columns - 1 if compact else 3 * columns + 1


def _markup(cell: object) -> Any:
    """A rich cell as Text: Text as it is, a str read as markup."""
    from rich.text import Text

    return cell if isinstance(cell, Text) else Text.from_markup(str(cell))


def fit(table: RichTable | Table, console: Console) -> RenderableType:
    """``table`` as it is when it fits the terminal; at widths where rich would have to cut its
    cells to "…" (COLUMNS=40) or break words (an 80-column terminal squeezed a suite's verdict
    column to "slowe / r / (regr / essio / n)"), the same cells stacked: one block per row,
    one line per column ("header: value"), so every figure and verdict stays readable."""
    from rich.text import Text

    if isinstance(table, Table):
        table = table.rich_table()
    if console.width >= _unbroken_width(table):
        # wide enough for every word: drawn as it is unless rich cut a cell to "…" (drawing
        # it to see costs as much as printing it, so only where it can fit)
        cells = "".join(_markup(c).plain for col in table.columns
                        for c in (col.header, *col.cells))
        rendered = "".join(seg.text for line in console.render_lines(table, pad=False)
                           for seg in line)
        if "\u2026" not in rendered or "\u2026" in cells:
            return table
    headers = [" ".join(_markup(c.header).plain.split()) for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    out = Text()
    if table.title:
        title = table.title
        out.append(f"{title.plain if isinstance(title, Text) else title}\n", style="bold")
    for i in range(table.row_count):
        first = columns[0][i] if columns else ""
        head = (Text.assemble(first, style="bold") if isinstance(first, Text) else
                Text.from_markup(str(first), style="bold"))
        if head.plain.strip():
            out.append_text(head)
            out.append("\n")
        for h, col in zip(headers[1:], columns[1:], strict=True):
            cell = _markup(col[i])
            if cell.plain.strip():
                out.append(f"  {h}: ")
                out.append_text(cell)
                out.append("\n")
    return out
