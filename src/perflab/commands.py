"""Verbs of the measurement core: stat, compare, results."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
