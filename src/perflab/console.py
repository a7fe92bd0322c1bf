"""The consoles every verb prints to.

Output is fitted to the width the user has: a terminal's own (rich follows it as it is
resized); piped or redirected output takes ``COLUMNS`` when set, else the width of the
controlling terminal (``perflab compare ... | less``), else 80 (a CI log, a cron job), as
``shutil.get_terminal_size`` and ``git`` do.  Tables too wide for it stack their cells
(perflab.table.fit) rather than break numbers across lines.

Every string these consoles print shows its control characters as ``\\xNN`` escapes: names,
labels, commands, parameters and imported text come from users and files, and an ESC in a
``--label`` or in a hyperfine file's command must not recolour, retitle or clear the user's
terminal.  Rich keeps ESC (it strips only BEL, BS, VT, FF and CR), so the one place that turns
a string into printed text, ``render_str``, escapes them; perflab's own colours are markup and
reach the terminal as rich's styles, not as characters in the string.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.text import Text

from perflab.errors import printable

# The width of output that reaches no terminal and names none (COLUMNS unset)
DEFAULT_WIDTH = 80


class SafeConsole(Console):
    """A rich Console whose every printed string has its control characters escaped."""

    def __init__(self, *args: Any, width: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, width=width, **kwargs)
        # rich fixes COLUMNS as it was when the console was made; read it as each line prints
        self._width = width

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text, lines=True), **kwargs)

    @property
    def size(self) -> ConsoleDimensions:
        """rich's size, except that output to no terminal, without a width given, takes
        output_width() as it prints (COLUMNS may change after the console is made)."""
        size = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(output_width(), size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def warning(text: str) -> str:
    """A warning as every verb prints it: 'warning:' in yellow, then the text, escaped (it
    names users' commands, sources and labels, whose brackets are not markup)."""
    return f"[yellow]warning:[/] {escape(text)}"


def output_width() -> int:
    """The width for output that is not a terminal: ``COLUMNS``, else the terminal of any
    standard stream or the controlling terminal (/dev/tty), else DEFAULT_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (sys.__stdout__, sys.__stderr__, sys.__stdin__):
        try:
            width = os.get_terminal_size(fd.fileno()).columns if fd else 0
        except (OSError, ValueError):
            continue
        if width > 0:
            return width
    try:
        tty = os.open("/dev/tty", os.O_RDONLY | getattr(os, "O_NOCTTY", 0))
    except OSError:  # no controlling terminal
        return DEFAULT_WIDTH
    try:
        return os.get_terminal_size(tty).columns or DEFAULT_WIDTH
    except OSError:
        return DEFAULT_WIDTH
    finally:
        os.close(tty)


def stdout_console() -> Console:
    return SafeConsole()


def stderr_console() -> Console:
    return SafeConsole(stderr=True)
