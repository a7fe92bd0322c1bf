"""What a measurement stores (the result, its configurations and runs) written to a SQLite
store with the standard library's sqlite3, for ``perflab stat`` and ``perflab compare``.

perflab.storage writes every store through SQLAlchemy, whose import (engine, SQL compiler,
schema) the stat verb cannot afford: importing it beside typer, rich and numpy cost 190-240 ms
of CPU (1.5-1.8 times `python -c "import numpy"`, 133 ms), and `perflab stat -r 1 -w 0 --
true` through it cost 619 ms, 4.6 times numpy, against a goal of 2.5 (benchmarks/startup.py,
task-clock, 2 vCPUs at load 3).  A measurement writes a few rows, so they are written here
with sqlite3 (5 ms to import; the same call then cost 306 ms, 2.3 times numpy) when the store
is a SQLite file that exists, is writable, sound, in WAL mode and of this perflab's schema
(perflab.quickread.SCHEMA_VERSION) with exactly the columns below.
Anything else (a new file, an older or newer schema, a server URL, a file in a read-only
place, a table altered by hand) is left to perflab.storage, which creates, upgrades, checks
and explains as always.

One schema: the tables are defined in perflab.schema alone; the rows are made by the
functions below for both stores (perflab.storage writes them through SQLAlchemy), and
test_quickwrite checks that these column lists are schema.py's and that both stores write the
same rows.  Each write is one transaction (BEGIN IMMEDIATE: the write lock is taken before
anything is read, so a concurrent perflab waits its busy timeout instead of failing), with the
pragmas perflab.storage sets on a SQLite connection (WAL, synchronous NORMAL, foreign keys).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from perflab.model import Configuration, Fingerprint, PrimaryChoice, ResultSet, Run, Settings
from perflab.owner import stamp_owner
from perflab.quickread import SCHEMA_VERSION, check_sqlite_integrity, default_path
from perflab.storefaults import Outage, sqlite_fault

# The columns of the tables written here, in perflab.schema's order ("id" is the row id SQLite
# gives); those holding JSON are bound as json.dumps of the value, as SQLAlchemy's JSON type
# does.  The other tables must exist (perflab.storage makes a missing one) and are not touched.
COLUMNS: dict[str, tuple[str, ...]] = {
    "machines": ("id", "fingerprint_hash", "hostname", "fingerprint"),
    "results": ("id", "kind", "label", "created_at", "status", "machine_id", "fingerprint",
                "commit", "dirty", "repo", "perflab_version", "settings", "metrics", "notes",
                "fleet_job", "fleet_submission"),
    "configurations": ("id", "result_id", "name", "command", "shell", "env", "benchmark",
                       "params", "cell", "is_baseline", "commit"),
    "runs": ("id", "configuration_id", "seq", "warmup", "status", "exit_code", "started_at",
             "load1", "error", "values"),
}
JSON_COLUMNS = {("machines", "fingerprint"), ("results", "fingerprint"),
                ("results", "settings"), ("results", "metrics"), ("results", "notes"),
                ("configurations", "command"), ("configurations", "env"),
                ("configurations", "params"), ("runs", "values")}
OTHER_TABLES = ("perflab_meta", "fleet_workers", "fleet_jobs", "profiles")


# -- the rows (both stores write these) ----------------------------------------------------------
def result_row(rs: ResultSet, machine_id: int) -> dict[str, Any]:
    """THE row of the results table for a result set about to be measured or saved."""
    from perflab import __version__

    return {"kind": rs.kind, "label": rs.label, "created_at": rs.created_at or time.time(),
            "status": rs.status, "machine_id": machine_id,
            "fingerprint": rs.fingerprint.to_json(), "commit": rs.commit, "dirty": rs.dirty,
            "repo": rs.repo, "perflab_version": __version__,
            "settings": rs.settings.to_dict(),
            "metrics": {k: v.to_dict() for k, v in rs.metrics.items()}, "notes": rs.notes,
            "fleet_job": rs.fingerprint.fleet_job,
            "fleet_submission": rs.fingerprint.fleet_submission}


def result_update(rs: ResultSet) -> dict[str, Any]:
    """What update_result writes of a result as it stands: status, metrics, notes, settings,
    label and the environment (the runs add the runtimes they ran on)."""
    return {"status": rs.status, "metrics": {k: v.to_dict() for k, v in rs.metrics.items()},
            "notes": rs.notes, "settings": rs.settings.to_dict(), "label": rs.label,
            "fingerprint": rs.fingerprint.to_json()}


def config_row(result_id: int, cfg: Configuration) -> dict[str, Any]:
    """THE row of the configurations table for one configuration (add_configuration, save)."""
    return {"result_id": result_id, "name": cfg.name, "command": cfg.command,
            "shell": cfg.shell, "env": cfg.env, "benchmark": cfg.benchmark_key,
            "params": cfg.params, "cell": cfg.cell, "is_baseline": cfg.is_baseline,
            "commit": cfg.commit}


def acknowledge(items: list[tuple[int, Run]], ids: list[int],
                committed: Callable[[list[Run]], None] | None) -> None:
    """A stored round's runs get their ids, and ``committed`` hears of them."""
    for (_, run), rid in zip(items, ids, strict=True):
        run.id = rid
    if committed:
        committed([run for _, run in items])


def stored_already(items: list[tuple[int, Run]], found: dict[tuple[int, int], int],
                   committed: Callable[[list[Run]], None] | None) -> bool:
    """Whether every run of a round stored again after a fault is ``found`` in the store
    ((configuration id, seq) -> run id): its commit went through with the acknowledgement
    lost; then the runs are acknowledged with the ids found."""
    if len(found) != len(items):
        return False
    acknowledge(items, [found[(cid, run.seq)] for cid, run in items], committed)
    return True


def run_row(configuration_id: int, run: Run) -> dict[str, Any]:
    """THE row of the runs table for one run (add_run, add_rounds and save all store this)."""
    return {"configuration_id": configuration_id, "seq": run.seq, "warmup": run.warmup,
            "status": run.status, "exit_code": run.exit_code, "started_at": run.started_at,
            "load1": run.load1, "error": run.error, "values": run.values}


# -- what a measurement writes through -------------------------------------------------------------
class ResultWriter(Protocol):
    """What the runner and the measuring verbs need of a store: perflab.storage.Store gives
    it for every store, QuickStore for a current SQLite file."""

    location: str
    outage: Outage

    def begin_result(self, rs: ResultSet) -> int: ...

    def add_configuration(self, result_id: int, cfg: Configuration) -> int: ...

    def add_rounds(self, rounds: list[list[tuple[int, Run]]],
                   committed: Callable[[list[Run]], None] | None = None,
                   again: bool = False) -> None: ...

    def update_result(self, rs: ResultSet, wait: bool = True) -> None: ...

    def primary_choices(self, fp: Fingerprint, keys: list[tuple[str, str]], default: str,
                        *, before: int | None = None
                        ) -> dict[tuple[str, str], PrimaryChoice]: ...


def open_quick(db: str | Path | None, lock_timeout: float = 10.0) -> QuickStore | None:
    """A QuickStore on ``db`` (None: the default store), or None when it is not one this
    module writes (see the module).  A damaged file is refused here with perflab.storage's
    line, untouched."""
    text = str(db) if db is not None else ""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", text):
        return None  # a URL (or a path written like one): perflab.storage reads it
    path = Path(text) if db is not None else default_path()
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
    except OSError:
        return None
    folder = path.parent if str(path.parent) else Path(".")
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(folder, os.W_OK):
        return None
    check_sqlite_integrity(path)
    try:
        conn = sqlite3.connect(path, timeout=lock_timeout, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        if _current(conn):
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            return QuickStore(conn, str(path))
    except sqlite3.Error:
        pass
    conn.close()
    return None


def _current(conn: sqlite3.Connection) -> bool:
    """Is the store in WAL mode, of this perflab's schema, its tables the ones written here?"""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        return False
    version = conn.execute("SELECT value FROM perflab_meta WHERE key = 'schema_version'"
                           ).fetchone()
    if version is None or str(version[0]) != str(SCHEMA_VERSION):
        return False
    found: dict[str, set[str]] = {}
    for table, column in conn.execute(
            "SELECT m.name, c.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c "
            "WHERE m.type = 'table'"):
        found.setdefault(table, set()).add(column)
    return (all(found.get(t) == set(cols) for t, cols in COLUMNS.items())
            and all(t in found for t in OTHER_TABLES))


def _insert_sql(table: str) -> str:
    cols = [c for c in COLUMNS[table] if c != "id"]
    return (f"INSERT INTO {table} ({', '.join(_q(c) for c in cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})")


def _q(column: str) -> str:
    return f'"{column}"'  # commit and values are SQL words


def _bind(table: str, row: dict[str, Any],
          columns: tuple[str, ...] | None = None) -> tuple[Any, ...]:
    """``row``'s values in the order of ``columns`` (the table's, without its id), JSON
    columns as json.dumps gives them."""
    cols = columns or tuple(c for c in COLUMNS[table] if c != "id")
    return tuple(json.dumps(row[c]) if (table, c) in JSON_COLUMNS else row[c] for c in cols)


class QuickStore:
    """A current SQLite store written with sqlite3 (ResultWriter); made by open_quick."""

    def __init__(self, conn: sqlite3.Connection, location: str) -> None:
        self.conn = conn
        self.location = location
        self.outage = Outage()  # a file is never lost as a server is; kept for the runner

    @contextmanager
    def _faults(self) -> Iterator[None]:
        """sqlite3's errors as perflab.storage's one line with the fix."""
        try:
            yield
        except sqlite3.Error as e:
            raise sqlite_fault(self.location, str(e).strip()) from e

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """``fn(conn)`` in one transaction, committed whole or rolled back."""
        conn = self.conn
        with self._faults():
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return out

    def _machine_id(self, conn: sqlite3.Connection, fp: Fingerprint) -> int:
        """The machine's row id, made on first sight (as Store.machine_id)."""
        h = fp.identity_hash()
        q = "SELECT id FROM machines WHERE fingerprint_hash = ?"
        row = conn.execute(q, (h,)).fetchone()
        if row is None:
            conn.execute(_insert_sql("machines") + " ON CONFLICT (fingerprint_hash) DO NOTHING",
                         _bind("machines", {"fingerprint_hash": h, "hostname": fp.hostname,
                                            "fingerprint": fp.identity()}))
            row = conn.execute(q, (h,)).fetchone()
        return int(row[0])

    def begin_result(self, rs: ResultSet) -> int:
        """Insert the result set header (status 'running'); sets and returns ``rs.id``."""
        stamp_owner(rs)

        def go(conn: sqlite3.Connection) -> int:
            row = result_row(rs, self._machine_id(conn, rs.fingerprint))
            return int(conn.execute(_insert_sql("results"), _bind("results", row)).lastrowid
                       or 0)

        rs.id = self._write(go)
        return rs.id

    def add_configuration(self, result_id: int, cfg: Configuration) -> int:
        row = config_row(result_id, cfg)
        cfg.id = int(self._write(lambda conn: conn.execute(
            _insert_sql("configurations"), _bind("configurations", row)).lastrowid or 0))
        return cfg.id

    def add_rounds(self, rounds: list[list[tuple[int, Run]]],
                   committed: Callable[[list[Run]], None] | None = None,
                   again: bool = False) -> None:
        """Store each round's runs in a transaction of its own, in order (as
        Store.add_rounds, whose ``again`` looks for a round already stored first)."""
        sql = _insert_sql("runs")
        for items in rounds:
            if not items:
                continue
            if again:
                again = False
                if stored_already(items, self._stored_runs(items), committed):
                    continue

            def go(conn: sqlite3.Connection, items: list[tuple[int, Run]] = items) -> list[int]:
                return [int(conn.execute(sql, _bind("runs", run_row(cid, run))).lastrowid or 0)
                        for cid, run in items]

            acknowledge(items, self._write(go), committed)

    def _stored_runs(self, items: list[tuple[int, Run]]) -> dict[tuple[int, int], int]:
        """(configuration id, seq) -> run id for those of ``items`` already in the store."""
        with self._faults():
            return {(int(c), int(s)): int(i) for cid, run in items for c, s, i in
                    self.conn.execute("SELECT configuration_id, seq, id FROM runs WHERE "
                                      "configuration_id = ? AND seq = ?", (cid, run.seq))}

    def update_result(self, rs: ResultSet, wait: bool = True) -> None:
        """Record status, metrics, notes and the environment as they stand (Store's)."""
        assert rs.id is not None
        stamp_owner(rs)
        row = result_update(rs)
        cols = tuple(row)
        sql = (f"UPDATE results SET {', '.join(f'{_q(c)} = ?' for c in cols)} WHERE id = ?")
        self._write(lambda conn: conn.execute(sql, (*_bind("results", row, cols), rs.id)))

    def primary_choices(self, fp: Fingerprint, keys: list[tuple[str, str]], default: str,
                        *, before: int | None = None) -> dict[tuple[str, str], PrimaryChoice]:
        """The primary metric last chosen on this machine for each (benchmark, cell), as
        Store.primary_choices gives it."""
        with self._faults():
            mid = self.conn.execute("SELECT id FROM machines WHERE fingerprint_hash = ?",
                                    (fp.identity_hash(),)).fetchone()
            if mid is None:
                return {}
            out: dict[tuple[str, str], PrimaryChoice] = {}
            for bench, cell in dict.fromkeys(keys):
                q = ("SELECT r.id, r.settings FROM results AS r JOIN configurations AS c "
                     "ON r.id = c.result_id WHERE r.machine_id = ? AND c.benchmark = ? "
                     "AND c.cell = ? AND r.status IN ('complete', 'interrupted')"
                     + (" AND r.id < ?" if before is not None else "")
                     + " ORDER BY r.id DESC LIMIT 20")
                args = (mid[0], bench, cell) + ((before,) if before is not None else ())
                for rid, stored in self.conn.execute(q, args):
                    pc = Settings.from_dict(json.loads(stored) if stored else None).primary_choice
                    if pc and pc.default == default and pc.cpu_bound is not None:
                        pc.from_result = pc.from_result or int(rid)
                        out[(bench, cell)] = pc
                        break
            return out
