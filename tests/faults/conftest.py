"""Fixtures of the fault catalogue: a perflab runner bound to a fresh database per test, and a
directory the unprivileged user can reach."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.helpers import NOBODY, Perflab


@pytest.fixture
def perflab(tmp_path: Path) -> Perflab:
    """``perflab(*args)`` runs the real CLI in a subprocess against ``tmp_path/results.sqlite``."""
    return Perflab(tmp_path / "results.sqlite", cwd=tmp_path)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory ``nobody`` can reach (pytest's tmp_path is private to root), holding ``cache``
    and ``data``, both nobody's own."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run perflab as an unprivileged user")
    d = Path(tempfile.mkdtemp(prefix="perflab-faults-"))
    d.chmod(0o755)
    for sub in ("cache", "data"):
        (d / sub).mkdir(mode=0o700)
        os.chown(d / sub, NOBODY, NOBODY)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)

