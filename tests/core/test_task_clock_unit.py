"""Issue 24: task_clock is stored in seconds, as every other time (schema 5; it was ms).

A store an earlier perflab wrote is brought to seconds once when it is opened, under the
store's schema lock, on SQLite and PostgreSQL alike; what it showed stays as it was
(test_stored_results); history across the migration compares like with like; an old export
imports in seconds too."""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest

from perflab.history.imports import import_file
from perflab.history.series import load_series
from perflab.migrations import migrate
from perflab.model import (
    BUILTIN_METRICS,
    PERF_SW,
    Configuration,
    MetricInfo,
    ResultSet,
    Run,
    in_today_unit,
)
from perflab.storage import SCHEMA_VERSION, Store, meta

pytestmark = pytest.mark.system

FIXTURE = Path(__file__).parent.parent / "fixtures" / "core" / "schema4"
NS = [350_062, 295_455, 1_234_567, 999, 4_000_000_001]  # the launcher's task_clock readings


def _result(commit: str, ns: list[int], old: bool, at: float = 1000.0) -> ResultSet:
    """A result as schema 4 stored it (``old``: task_clock in ms, the launcher's ns / 1e6) or
    as today's collector does (ns / 1e9 s)."""
    unit = MetricInfo("task_clock", "ms", PERF_SW) if old else BUILTIN_METRICS["task_clock"]
    rs = ResultSet(kind="stat", commit=commit, dirty=False, status="complete", created_at=at,
                   fingerprint={"hostname": "h", "cpu_model": "X", "cpu_count": 2},
                   metrics={"task_clock": unit, "wall_time": BUILTIN_METRICS["wall_time"]})
    cfg = Configuration(name="A", command=["prog"], benchmark="prog", cell="{}")
    cfg.runs = [Run(seq=i, values={"task_clock": n / (1e6 if old else 1e9), "wall_time": 0.5})
                for i, n in enumerate(ns)]
    rs.configurations.append(cfg)
    return rs


def _schema_4(url: str, results: list[ResultSet]) -> list[int]:
    """``results`` in a store that says schema 4, as an earlier perflab left it."""
    store = Store(url, create=True)
    ids = [store.save(rs) for rs in results]
    store.write(lambda c: c.execute(meta.update().values(value="4")))
    store.engine.dispose()
    return ids


def _task_clock(store: Store, rid: int) -> list[float]:
    rs = store.load(rid)
    assert rs.metrics["task_clock"].unit == "s"
    assert rs.configurations[0].samples("wall_time") == [0.5] * len(NS)  # untouched
    return rs.configurations[0].samples("task_clock")


def test_an_old_store_reads_task_clock_in_seconds_once(store_url: str) -> None:
    (rid,) = _schema_4(store_url, [_result("c1", NS, old=True)])
    store = Store(store_url, create=True)  # what any verb (SQLite) or `fleet init` does
    assert store.schema_version() == SCHEMA_VERSION
    # exactly what today's collector stores for the same readings, not ms / 1e3 one ulp off
    assert _task_clock(store, rid) == [n / 1e9 for n in NS]
    # a second pass (an opener that read version 4 before the first committed) changes nothing
    store.write(lambda c: migrate(c, 4))
    for _ in range(2):
        Store(store_url, create=True).ensure_schema(create=True)
    assert _task_clock(store, rid) == [n / 1e9 for n in NS]


def _open(url: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()  # every process meets the schema-4 store at the same moment
    Store(url, create=True).engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_openers_migrate_once_under_the_schema_lock(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Six processes open one schema-4 store at once: the values are divided once, not six
    times (on SQLite the write lock is taken before the version is read; on PostgreSQL the
    advisory lock)."""
    url = (str(tmp_path / "c.sqlite") if backend == "sqlite"
           else request.getfixturevalue("pg_url"))
    ids = _schema_4(url, [_result(f"c{i}", NS, old=True) for i in range(20)])
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_open, args=(url, barrier)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 6
    store = Store(url)
    assert store.schema_version() == SCHEMA_VERSION
    for rid in ids:
        assert _task_clock(store, rid) == [n / 1e9 for n in NS]


def test_history_across_the_migration_compares_like_with_like(store_url: str) -> None:
    """One series: a point stored in ms before the migration, one in s after it; 10% apart,
    not 1000x."""
    _schema_4(store_url, [_result("old", [1_000_000] * 5, old=True, at=1000.0)])
    store = Store(store_url, create=True)
    store.save(_result("new", [1_100_000] * 5, old=False, at=2000.0))
    (series,) = load_series(store, metric="task_clock")
    assert series.unit == "s"
    assert [p.commit for p in series.points] == ["old", "new"]
    assert [p.median for p in series.points] == [0.001, 0.0011]


@pytest.mark.unit
def test_the_schema_4_fixture_reads_in_seconds(tmp_path: Path) -> None:
    """The database perflab stored at schema 4: each task_clock sample (ms) reads back as the
    same reading in s, exactly as today's collector would store it."""
    db = tmp_path / "results.db"
    shutil.copy(FIXTURE / "results.db", db)
    with sqlite3.connect(FIXTURE / "results.db") as c:
        before = [float(v) for (v,) in c.execute(
            "SELECT json_extract(r.\"values\", '$.task_clock') FROM runs r JOIN configurations "
            "g ON g.id = r.configuration_id WHERE g.result_id = 2 ORDER BY g.id, r.seq")]
    store = Store(db)
    rs = store.load(2)
    after = [x for cfg in rs.configurations for r in cfg.runs
             for x in [r.values["task_clock"]]]
    assert rs.metrics["task_clock"].unit == "s" and len(after) == len(before) > 0
    assert after == [round(ms * 1e6) / 1e9 for ms in before]
    assert after == [in_today_unit(ms, 1e3) for ms in before]


@pytest.mark.unit
def test_an_old_export_imports_in_seconds() -> None:
    """perflab's JSON export written at schema 4 (task_clock "unit": "ms")."""
    rs = import_file(FIXTURE / "golden" / "report-2" / "result.json", "perflab")
    assert rs.metrics["task_clock"].unit == "s"
    base = rs.configurations[0].samples("task_clock")
    assert base[0] == 0.000296141 and max(base) < 0.001
