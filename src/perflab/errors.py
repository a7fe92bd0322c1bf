"""One error type for everything a user can cause: it carries the problem and the fix.

The CLI prints it as a single line (``perflab: <problem> -- <fix>``) and exits with its code,
so every bad input gets one clear line, never a traceback.
"""

from __future__ import annotations


class PerflabError(Exception):
    """A problem the user can act on."""

    def __init__(self, problem: str, fix: str = "", exit_code: int = 2) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.exit_code = exit_code

    def line(self) -> str:
        return f"{self.problem} -- {self.fix}" if self.fix else self.problem
