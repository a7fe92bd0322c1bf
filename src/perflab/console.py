"""The consoles every verb prints to.

Piped output (files, CI logs) gets wide tables rather than tables folded to 80 columns, which
would break every number across lines.
"""

from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 160


def stdout_console() -> Console:
    return Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
