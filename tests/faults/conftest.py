"""Fixtures of the fault catalogue: a perflab runner bound to a fresh database per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults.helpers import Perflab


@pytest.fixture
def perflab(tmp_path: Path) -> Perflab:
    """``perflab(*args)`` runs the real CLI in a subprocess against ``tmp_path/results.sqlite``."""
    return Perflab(tmp_path / "results.sqlite", cwd=tmp_path)
