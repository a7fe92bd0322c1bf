"""Issue 24: task_clock is stored in seconds, as every other time (schema 5; it was ms).

A store an earlier perflab wrote is brought to seconds once when it is opened, under the
store's schema lock, on SQLite and PostgreSQL alike; what it showed stays as it was
(test_stored_results); history across the migration compares like with like; an old export
imports in seconds too."""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest

from perflab.history.series import SeriesFilter, load_series
from perflab.imports import import_file
from perflab.metrics import BUILTIN_METRICS, PERF_SW, MetricInfo, in_today_unit
from perflab.migrations import migrate
from perflab.model import Configuration, ResultSet, Run
from perflab.schema import SCHEMA_VERSION, meta
from perflab.storage import Store

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


def _schema_4(url: str, results: list[ResultSet], version: int = 4) -> list[int]:
    """``results`` in a store that says schema 4 (or ``version``), as an earlier perflab left
    it."""
    store = Store(url, create=True)
    ids = [store.save(rs) for rs in results]
    store.write(lambda c: c.execute(meta.update().values(value=str(version))))
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
    (series,) = load_series(store, SeriesFilter(metric="task_clock"))
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


INTERRUPTED = Path(__file__).parent.parent / "fixtures" / "core" / "interrupted"


def _stored_task_clock(db: Path, rid: int) -> list[float]:
    """Result ``rid``'s task_clock samples as the file holds them, read with plain sqlite3."""
    with contextlib.closing(sqlite3.connect(db)) as c:
        return [float(v) for (v,) in c.execute(
            "SELECT json_extract(r.\"values\", '$.task_clock') FROM runs r JOIN configurations "
            "g ON g.id = r.configuration_id WHERE g.result_id = ? ORDER BY g.id, r.seq", (rid,))]


def _loaded_task_clock(store: Store, rid: int) -> list[float]:
    return [r.values["task_clock"] for c in store.load(rid).configurations for r in c.runs]


@pytest.mark.unit
def test_an_interrupted_result_of_schema_4_reads_in_seconds(tmp_path: Path) -> None:
    """Result 2 was killed mid-run at schema 4: its header never named task_clock's unit, and
    its samples (ms) are converted like the complete result's, once."""
    db = tmp_path / "r.db"
    shutil.copy(INTERRUPTED / "schema4.db", db)
    stored = {rid: _stored_task_clock(db, rid) for rid in (1, 2)}
    assert len(stored[2]) == 87 and min(stored[2]) > 0.1  # spin 300000: about 0.33 ms
    store = Store(db)
    want = {rid: [in_today_unit(ms, 1e3) for ms in stored[rid]] for rid in (1, 2)}
    for _ in range(2):  # the second time: a second pass of step 5, which changes nothing
        assert {rid: _loaded_task_clock(store, rid) for rid in (1, 2)} == want
        assert store.load(2).metrics["task_clock"].unit == "s"
        store.write(lambda c: migrate(c, 4))


@pytest.mark.unit
def test_a_store_an_earlier_schema_5_left_in_ms_is_repaired(tmp_path: Path) -> None:
    """schema5.db: result 2 (interrupted at schema 4) left in ms by the earlier step 5, result
    1 converted by it, result 3 interrupted at schema 5 (in s).  Schema 6 converts result 2
    alone, once."""
    db = tmp_path / "r.db"
    shutil.copy(INTERRUPTED / "schema5.db", db)
    stored = {rid: _stored_task_clock(db, rid) for rid in (1, 2, 3)}
    store = Store(db)
    assert store.schema_version() == SCHEMA_VERSION
    want = {1: stored[1], 2: [in_today_unit(ms, 1e3) for ms in stored[2]], 3: stored[3]}
    for _ in range(2):
        assert {rid: _loaded_task_clock(store, rid) for rid in (1, 2, 3)} == want
        store.write(lambda c: migrate(c, 5))
    assert max(want[2] + want[3]) < 0.01 < min(stored[2])


# (task_clock as stored, wall_time, user_time + sys_time) of a configuration's runs: whether
# schema 6 reads it as ms (and converts it).
EVIDENCE = {
    "cpu-bound, ms": ([(0.9, 0.001, 0.0009)] * 5, True),
    "cpu-bound, s": ([(0.0009, 0.001, 0.0009)] * 5, False),
    "sleeping, ms": ([(1.0, 0.15, 0.001)] * 5, True),  # wall time allows it; rusage does not
    "sleeping, s": ([(0.001, 0.15, 0.001)] * 5, False),
    "no evidence": ([(1.0, None, None)] * 5, False),
    "one odd run of five": ([(0.05, 0.15, 0.0009)] + [(0.0009, 0.15, 0.0009)] * 4, False),
    "more CPU than the machine had": ([(5.0, 0.1, None)] * 5, True),
}


def test_schema_6_converts_a_configuration_on_the_evidence_of_its_runs(store_url: str) -> None:
    rs = ResultSet(kind="stat", status="running", created_at=1000.0,
                   fingerprint={"hostname": "h", "cpu_model": "X", "cpu_count": 2})
    for name, (runs, _) in EVIDENCE.items():
        cfg = Configuration(name=name, command=["prog"], benchmark="prog", cell="{}")
        for i, (t, wall, cpu) in enumerate(runs):
            v = {"task_clock": t} | ({"wall_time": wall} if wall else {}) | (
                {"user_time": cpu, "sys_time": 0.0} if cpu else {})
            cfg.runs.append(Run(seq=i, values=v))
        rs.configurations.append(cfg)
    (rid,) = _schema_4(store_url, [rs], version=5)
    store = Store(store_url, create=True)
    got = {c.name: c.samples("task_clock") for c in store.load(rid).configurations}
    for name, (runs, ms) in EVIDENCE.items():
        assert got[name] == [in_today_unit(t, 1e3) if ms else t for t, _, _ in runs], name
