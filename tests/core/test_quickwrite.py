"""perflab.quickwrite: what a measurement stores, written with sqlite3 alone, is row for row what
perflab.storage writes; its column lists are schema.py's; each write is whole or nothing; and
every store it cannot write as perflab.storage would is left to perflab.storage."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from perflab import quickwrite, schema
from perflab.errors import PerflabError
from perflab.metrics import MetricInfo
from perflab.model import Configuration, Fingerprint, PrimaryChoice, ResultSet, Run
from perflab.quickwrite import COLUMNS, JSON_COLUMNS, OTHER_TABLES, QuickStore, open_quick
from perflab.storage import Store

pytestmark = pytest.mark.unit


def test_the_column_lists_are_the_schemas() -> None:
    """A column added to (or removed from) a table in schema.py fails here until quickwrite
    writes it too."""
    tables = schema.metadata.tables
    assert set(COLUMNS) | set(OTHER_TABLES) == set(tables)
    assert not set(COLUMNS) & set(OTHER_TABLES)
    for name, cols in COLUMNS.items():
        assert cols == tuple(c.name for c in tables[name].columns), name
    assert JSON_COLUMNS == {(name, c.name) for name in COLUMNS for c in tables[name].columns
                            if isinstance(c.type, sa.JSON)}


def _result(fleet: bool = False) -> ResultSet:
    fp = Fingerprint.from_json({"hostname": "h1", "cpu_model": "EPYC", "cpu_count": 2,
                                "kernel": "6.1", "load1": 0.5, "python": "3.11"})
    if fleet:
        fp.fleet_job, fp.fleet_submission = 42, "s-1"
    rs = ResultSet(kind="compare", label="a label", commit="ab" * 20, dirty=True, repo="/src",
                   created_at=1.7e9, fingerprint=fp)
    a = Configuration(name="old", command=["./old", "-x"], benchmark="eh/cpp",
                      params={"depth": 10}, is_baseline=True, commit="cd" * 20)
    b = Configuration(name="new", command=["cd b && ./new"], shell=True, env={"K": "v"},
                      benchmark="eh/cpp", params={"depth": 10})
    rs.configurations = [a, b]
    return rs


def _runs(seq: int) -> list[Run]:
    return [Run(seq=seq, warmup=seq == 0, values={"wall_time": 0.01 + seq, "task_clock": 0.009},
                started_at=1.7e9 + seq, load1=0.25),
            Run(seq=seq + 1, status="failed", exit_code=3, error="exit 3", values={},
                started_at=1.7e9 + seq + 1, load1=None)]


def _measure(store: Any, rs: ResultSet) -> None:
    """The calls the runner makes of its store while it measures (runner.loop), in order."""
    store.begin_result(rs)
    for cfg in rs.configurations:
        store.add_configuration(rs.id, cfg)
    a, b = rs.configurations
    first = [(a.id, r) for r in _runs(0)] + [(b.id, r) for r in _runs(2)]
    store.add_rounds([first, [(a.id, r) for r in _runs(4)]])
    store.add_rounds([first], again=True)  # stored already: not twice
    rs.metrics = {"wall_time": MetricInfo("wall_time", "s", "monotonic clock")}
    rs.notes.add("a note")
    rs.settings.primary_metric = "task_clock"
    rs.settings.primary_choice = PrimaryChoice("task_clock", "CPU-bound", cpu_bound=True,
                                               default="wall_time", runs=3)
    store.update_result(rs)
    rs.status = "complete"
    store.update_result(rs)


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as c:
        names = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: c.execute(f'SELECT * FROM "{n}" ORDER BY rowid').fetchall() for n in names}


@pytest.mark.parametrize("fleet", [False, True])
def test_both_stores_write_the_same_rows(tmp_path: Path, fleet: bool) -> None:
    paths = [tmp_path / "sqlalchemy.sqlite", tmp_path / "sqlite3.sqlite"]
    for p in paths:
        Store(p).engine.dispose()  # a fresh store of this perflab's schema
    slow, quick = Store(paths[0]), open_quick(paths[1])
    assert quick is not None
    for store in (slow, quick):
        _measure(store, _result(fleet))
        _measure(store, _result(fleet))  # a second result on the machine row of the first
    slow.engine.dispose()
    quick.conn.close()
    written, expected = _rows(paths[1]), _rows(paths[0])
    assert len(expected["runs"]) == 12 and len(expected["results"]) == 2
    assert written == expected


def test_the_stored_primary_choice_is_read_alike(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    rs = _result()
    _measure(Store(path), rs)
    slow, quick = Store(path), open_quick(path)
    assert quick is not None
    keys = [(c.benchmark_key, c.cell) for c in rs.configurations]
    for before in (None, rs.id, (rs.id or 0) + 1):
        got = quick.primary_choices(rs.fingerprint, keys, "wall_time", before=before)
        assert got == slow.primary_choices(rs.fingerprint, keys, "wall_time", before=before)
    assert quick.primary_choices(rs.fingerprint, keys, "wall_time")[keys[0]].from_result == rs.id
    assert quick.primary_choices(rs.fingerprint, keys, "ns_per_op") == {}


@pytest.fixture
def current(tmp_path: Path) -> Path:
    path = tmp_path / "r.sqlite"
    Store(path).engine.dispose()
    return path


def test_a_write_is_whole_or_nothing(current: Path) -> None:
    """A round whose second run cannot be stored (no such configuration: foreign keys are on)
    leaves none of its runs; the rounds committed before it stay."""
    quick = open_quick(current)
    assert quick is not None
    rs = _result()
    quick.begin_result(rs)
    cid = quick.add_configuration(rs.id or 0, rs.configurations[0])
    acked: list[int] = []
    good, bad = _runs(0), _runs(2)
    with pytest.raises(PerflabError, match="FOREIGN KEY"):
        quick.add_rounds([[(cid, good[0])], [(cid, bad[0]), (cid + 99, bad[1])]],
                         committed=lambda runs: acked.extend(r.seq for r in runs))
    assert acked == [0]
    with sqlite3.connect(current) as c:
        assert c.execute("SELECT seq FROM runs").fetchall() == [(0,)]
    assert not quick.conn.in_transaction


def test_a_locked_store_is_one_line(current: Path) -> None:
    holder = sqlite3.connect(current, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        quick = open_quick(current, lock_timeout=0.05)
        assert quick is not None
        with pytest.raises(PerflabError, match="locked by another process") as e:
            quick.begin_result(_result())
        assert "wait for the other perflab" in e.value.fix
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _alter(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as c:
        c.execute(sql)


def test_what_it_leaves_to_the_store(current: Path, tmp_path: Path) -> None:
    assert isinstance(open_quick(current), QuickStore)
    assert open_quick(tmp_path / "missing.sqlite") is None
    (tmp_path / "empty.sqlite").touch()
    assert open_quick(tmp_path / "empty.sqlite") is None
    assert open_quick(tmp_path) is None
    for url in (f"sqlite:///{current}", "postgresql://u@localhost/db", "postgresql:/u@h/db"):
        assert open_quick(url) is None
    for version in (quickwrite.SCHEMA_VERSION - 1, quickwrite.SCHEMA_VERSION + 1):
        _alter(current, f"UPDATE perflab_meta SET value = '{version}'")
        assert open_quick(current) is None
    _alter(current, f"UPDATE perflab_meta SET value = '{quickwrite.SCHEMA_VERSION}'")
    assert open_quick(current) is not None


@pytest.mark.parametrize("change", [
    "ALTER TABLE runs DROP COLUMN load1", "ALTER TABLE results ADD COLUMN extra TEXT",
    "DROP TABLE profiles", "PRAGMA journal_mode=DELETE"])
def test_an_unusual_store_is_left_to_the_store(current: Path, change: str) -> None:
    _alter(current, change)
    assert open_quick(current) is None


def test_a_damaged_file_is_refused_untouched(tmp_path: Path) -> None:
    bad = tmp_path / "junk.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(PerflabError, match="corrupt"):
        open_quick(bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.sqlite"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only file")
def test_a_read_only_file_is_left_to_the_store(current: Path) -> None:
    current.chmod(0o444)
    assert open_quick(current) is None
