"""Shared fixtures: an isolated result database and small C programs with known work."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

pytest_plugins = ["tiers"]

if TYPE_CHECKING:
    from perflab.fleet.localpg import LocalPostgres

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


# -- PostgreSQL: one real server per test session, a fresh database per test ---------------------
@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    """A real PostgreSQL server (initdb + pg_ctl in a temp dir, private port), shared by the
    session's PostgreSQL tests.  fsync off: these tests are about behaviour, not durability."""
    from perflab.fleet.localpg import LocalPostgres, pg_bindir

    if pg_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed: make setup installs it (scripts/setup.d)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with LocalPostgres(fsync=False) as pg:
        yield pg


@pytest.fixture
def own_pg() -> Iterator[LocalPostgres]:
    """A real PostgreSQL server of the test's own, for a test that stops and starts it
    (LocalPostgres.stop_server/start_server); the session's server is shared."""
    from perflab.fleet.localpg import LocalPostgres, pg_bindir

    if pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with LocalPostgres(fsync=False) as pg:
        yield pg


_db_counter = itertools.count()


@pytest.fixture
def pg_url(pg_server: LocalPostgres) -> Iterator[str]:
    """The URL of a new, empty database on the session's server, dropped afterwards."""
    name = f"t{os.getpid()}_{next(_db_counter)}"
    url = pg_server.create_database(name)
    yield url
    pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store tests run on both backends: a SQLite file and a PostgreSQL database (with
    perflab's schema, as `perflab fleet init` leaves it)."""
    if request.param == "sqlite":
        return str(tmp_path / "r.sqlite")
    from perflab.storage import Store

    url: str = request.getfixturevalue("pg_url")
    Store(url, create=True).engine.dispose()
    return url
