"""Shared fixtures: an isolated result database and small C programs with known work."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(autouse=True)
def _isolated_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes to the user's real result database."""
    monkeypatch.setenv("PERFLAB_DB", str(tmp_path / "results.sqlite"))


@pytest.fixture(scope="session")
def spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/programs/spin.c built once: `spin N [FAULT_PAGES] [EXIT_CODE]`."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("programs") / "spin"
    subprocess.run([cc, "-O1", "-g", "-fno-omit-frame-pointer", f"-I{ROOT / 'include'}", "-o",
                    str(out), str(PROGRAMS / "spin.c")], check=True)
    return out
