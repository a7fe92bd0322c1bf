"""One error type for everything a user can cause: it carries the problem and the fix.

The CLI prints it as a single line (``perflab: <problem> -- <fix>``) and exits with its code,
so every bad input gets one clear line, never a traceback.
"""

from __future__ import annotations

# Exit codes a caller can act on (the fleet's worker decides on them; docs/reliability.md).
# A problem the user can fix (bad input, a refused store): the code of every PerflabError.
EXIT_PROBLEM = 2
# The database server could not be reached, or was lost for longer than perflab waits for it
# (PERFLAB_DB_WAIT): nothing is wrong with the command; run it again once the server is back
# (sysexits.h's EX_TEMPFAIL).
EXIT_STORE_UNREACHABLE = 75


class PerflabError(Exception):
    """A problem the user can act on."""

    def __init__(self, problem: str, fix: str = "", exit_code: int = EXIT_PROBLEM) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.exit_code = exit_code

    def line(self) -> str:
        return f"{self.problem} -- {self.fix}" if self.fix else self.problem


# C0 controls (ESC among them), DEL and C1 controls: a command's stderr copied into a message
# must not move the cursor, recolour or retitle the user's terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7f, 0xa0))
            if c not in (0x09,)}


_CONTROL_KEEP_LINES = {c: v for c, v in _CONTROL.items() if c != 0x0a}


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with control characters (ESC, CR, BEL...) shown as \\xNN escapes; ``lines``
    keeps newlines (text of several lines, such as a table's cells)."""
    return text.translate(_CONTROL_KEEP_LINES if lines else _CONTROL)
