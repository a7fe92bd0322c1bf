"""The store's migrations: each step brings a database from one schema version to the next.

storage._create_schema runs ``migrate`` inside its transaction, under the schema lock (an
advisory lock on PostgreSQL, the write lock on SQLite), once per database; new tables are made
by create_all before it.  A step that rewrites stored values does it in Python rather than in
each dialect's JSON functions (SQLite's json_set and PostgreSQL's float8 -> jsonb print 15
significant digits, which would round stored samples), in decimal (model.in_today_unit), and
leaves a mark so that a second pass changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from perflab.metrics import BUILTIN_METRICS, FORMER_UNITS, MetricInfo, in_today_unit
from perflab.schema import GROWING, chunks, configurations, results, runs

# The unit each metric of FORMER_UNITS had up to schema 4, whatever its result's header says:
# the collectors and imports of schema 4 stored it so, and a result whose header was never
# written (its perflab killed, the disk full) holds it so too.
SCHEMA_4_UNITS: dict[str, tuple[str, float]] = {
    name: (unit, divisor) for (name, unit), divisor in FORMER_UNITS.items()}

# Schema 6's evidence that a task_clock sample is still in ms: the sample read as seconds is
# more than WALL_FACTOR times the run's wall time on every CPU of the machine (impossible for
# CPU time), or more than CPU_FACTOR times the run's user + system time (the same CPU time
# counted by wait4; read in the right unit the two agree within a few %, in ms they differ
# 1000-fold).  CPU_FLOOR: below 10 µs of rusage time the comparison says nothing.
WALL_FACTOR = 10.0
CPU_FACTOR = 50.0
CPU_FLOOR = 1e-5


def migrate(conn: sa.Connection, version: int) -> None:
    """Bring a database from ``version`` up to the current schema, one step per version."""
    if version < 3:
        _fleet_columns(conn)
    if version < 4 and conn.dialect.name == "postgresql":
        _growing_ids(conn)
    if version < 5:
        _former_units_to_current(conn)
    elif version < 6:
        # Schema 5 as an earlier perflab made it skipped the results whose header did not name
        # task_clock's unit; a store older than 5 had every result converted just above.
        _task_clock_left_in_ms(conn)


def _fleet_columns(conn: sa.Connection) -> None:
    """Schema 3: results.fleet_job and results.fleet_submission, indexed."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("results")}
    if "fleet_job" not in have:
        conn.execute(sa.text("ALTER TABLE results ADD COLUMN fleet_job BIGINT"))
    if "fleet_submission" not in have:
        conn.execute(sa.text("ALTER TABLE results ADD COLUMN fleet_submission VARCHAR(32)"))
    for col in ("fleet_job", "fleet_submission"):
        conn.execute(sa.text(f"CREATE INDEX IF NOT EXISTS ix_results_{col} ON results ({col})"))


def _growing_ids(conn: sa.Connection) -> None:
    """Schema 4: 64-bit ids and their sequences (SQLite's INTEGER PRIMARY KEY is 64-bit
    already).  Each ALTER rewrites its table under an exclusive lock: minutes for a large
    store, during which the fleet's writers wait."""
    for table, col in GROWING:
        conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {col} TYPE BIGINT"))
        if col == "id":
            seq = conn.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"),
                               {"t": table}).scalar()
            if seq:  # AS BIGINT also lifts the maximum from 2^31-1 to 2^63-1
                conn.execute(sa.text(f"ALTER SEQUENCE {seq} AS BIGINT"))


def _former_units_to_current(conn: sa.Connection) -> None:
    """Schema 5: values stored in a former unit (model.FORMER_UNITS: task_clock in ms) are
    brought to today's, in every result: one whose header names the former unit, and one whose
    header does not name the metric (an interrupted result: its header was written before any
    run).  The header then names today's unit, the mark a second pass finds: a metric whose
    header names another unit is left alone."""
    headers: dict[int, dict[str, Any]] = {}
    divisors: dict[int, dict[str, float]] = {}
    for rid, stored in conn.execute(sa.select(results.c.id, results.c.metrics)).all():
        headers[int(rid)] = stored = dict(stored or {})
        found = {name: divisor for name, (unit, divisor) in SCHEMA_4_UNITS.items()
                 if name not in stored or MetricInfo.from_dict(name, stored[name]).unit == unit}
        if found:
            divisors[int(rid)] = found
    converted: dict[int, set[str]] = {}
    for ids in chunks(sorted(divisors)):
        rows = []
        for run_id, rid, _, values in _runs_of(conn, ids):
            d = {k: v for k, v in divisors[rid].items() if _number(values.get(k))}
            if d:
                converted.setdefault(rid, set()).update(d)
                rows.append({"run_id": run_id, "now": {
                    k: in_today_unit(v, d[k]) if k in d else v for k, v in values.items()}})
        _set_values(conn, rows)
    for rid, d in divisors.items():
        stored = headers[rid]
        names = {k for k in d if k in stored} | converted.get(rid, set())
        if names:
            now = {**stored, **{k: _today(k, stored.get(k)) for k in sorted(names)}}
            conn.execute(results.update().where(results.c.id == rid).values(metrics=now))


def _task_clock_left_in_ms(conn: sa.Connection) -> None:
    """Schema 6: the task_clock samples an earlier schema-5 migration left in ms (it converted
    only the results whose header said ms, so an interrupted result kept its ms) are found
    from the runs' own evidence (``_in_ms``) a configuration at a time (one configuration's
    runs were measured by one perflab process, so they share a unit) and converted: a
    configuration is converted when more than half of its runs that can tell show ms; one
    whose runs cannot tell is left as it is.  Converted samples read as seconds, where the
    evidence shows no ms: a second pass changes nothing."""
    cpus = {int(rid): _cpu_count(fp) for rid, fp in conn.execute(
        sa.select(results.c.id, results.c.fingerprint)).all()}
    for ids in chunks(sorted(cpus)):
        by_config: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        said: dict[int, list[bool]] = {}
        for run_id, rid, cid, values in _runs_of(conn, ids):
            if not _number(values.get("task_clock")):
                continue
            by_config.setdefault(cid, []).append((run_id, values))
            ms = _in_ms(values, cpus[rid])
            if ms is not None:
                said.setdefault(cid, []).append(ms)
        _set_values(conn, [
            {"run_id": run_id,
             "now": {**values, "task_clock": in_today_unit(values["task_clock"], 1e3)}}
            for cid, votes in said.items() if sum(votes) * 2 > len(votes)
            for run_id, values in by_config[cid]])


def _in_ms(values: dict[str, Any], cpus: int | None) -> bool | None:
    """Whether one run's task_clock sample is in ms (True) or in s (False); None when the run
    cannot tell (no rusage and a wall time that allows either)."""
    t = float(values["task_clock"])
    wall = values.get("wall_time")
    if cpus and _number(wall) and 0 < wall and t > WALL_FACTOR * float(wall) * cpus:
        return True  # more CPU time than the machine had in the run: not seconds
    user, sys_ = values.get("user_time"), values.get("sys_time")
    if _number(user) and _number(sys_) and float(user) + float(sys_) >= CPU_FLOOR:
        ratio = t / (float(user) + float(sys_))
        return True if ratio > CPU_FACTOR else False if ratio < CPU_FACTOR / 10 else None
    return None


def _cpu_count(fingerprint: Any) -> int | None:
    n = fingerprint.get("cpu_count") if isinstance(fingerprint, dict) else None
    return n if isinstance(n, int) and n > 0 else None


def _runs_of(conn: sa.Connection,
             result_ids: list[int]) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """(run id, result id, configuration id, values) of these results' runs."""
    q = (sa.select(runs.c.id, configurations.c.result_id, configurations.c.id,
                   runs.c["values"])
         .join(configurations, configurations.c.id == runs.c.configuration_id)
         .where(configurations.c.result_id.in_(result_ids))
         .order_by(configurations.c.id, runs.c.seq))
    for run_id, rid, cid, values in conn.execute(q).all():
        yield int(run_id), int(rid), int(cid), dict(values or {})


def _set_values(conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(runs.update().where(runs.c.id == sa.bindparam("run_id"))
                     .values({runs.c["values"]: sa.bindparam("now")}), rows)


def _today(name: str, said: dict[str, Any] | None) -> dict[str, Any]:
    """A header entry naming today's unit: the stored one with its unit changed, or the
    built-in metric's when the header had none."""
    if said is None:
        return BUILTIN_METRICS[name].to_dict()
    return {**said, "unit": BUILTIN_METRICS[name].unit}


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
