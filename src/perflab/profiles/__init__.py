"""perflab.profiles (being built; see the issue tracker)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this stage's verbs to the perflab command line."""
