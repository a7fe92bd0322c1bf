"""The consoles every verb prints to.

Piped output (files, CI logs) gets wide tables rather than tables folded to 80 columns, which
would break every number across lines.

Every string these consoles print shows its control characters as ``\\xNN`` escapes: names,
labels, commands, parameters and imported text come from users and files, and an ESC in a
``--label`` or in a hyperfine file's command must not recolour, retitle or clear the user's
terminal.  Rich keeps ESC (it strips only BEL, BS, VT, FF and CR), so the one place that turns
a string into printed text, ``render_str``, escapes them; perflab's own colours are markup and
reach the terminal as rich's styles, not as characters in the string.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from perflab.errors import printable

PIPED_WIDTH = 160


class SafeConsole(Console):
    """A rich Console whose every printed string has its control characters escaped."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text, lines=True), **kwargs)


def warning(text: str) -> str:
    """A warning as every verb prints it: 'warning:' in yellow, then the text, escaped (it
    names users' commands, sources and labels, whose brackets are not markup)."""
    return f"[yellow]warning:[/] {escape(text)}"


def stdout_console() -> Console:
    return SafeConsole(width=None if sys.stdout.isatty() else PIPED_WIDTH)


def stderr_console() -> Console:
    return SafeConsole(stderr=True)
