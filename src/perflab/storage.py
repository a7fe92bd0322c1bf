"""The result store: every run's raw samples with the environment they were measured in.

SQLAlchemy Core gives one schema for SQLite (the embedded default, one file under the user's
data directory) and PostgreSQL (a fleet's shared store: pass a ``postgresql://`` URL).

Runs are written while they are measured: the runner hands ``add_rounds`` the runs of each
chunk of a launcher batch (about a quarter of a second of runs), stored in one transaction and
acknowledged once committed, so an interrupted measurement keeps every chunk committed before
the interruption.

The schema carries a version (table ``perflab_meta``).  Creating it is idempotent and safe when
several processes open a new database at once: on PostgreSQL under a transaction-scoped advisory
lock (DDL is transactional there), on SQLite by re-checking after an "already exists" race.  A
SQLite file is created on first use; a server database is created only by ``perflab fleet init``
(a shared store is set up on purpose, not by whichever client touches it first).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs
import sqlalchemy as sa
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError, ProgrammingError

from perflab import jobcontext
from perflab import notes as said
from perflab.errors import PerflabError
from perflab.format import redact_url
from perflab.model import (
    Configuration,
    Fingerprint,
    Owner,
    PrimaryChoice,
    ResultSet,
    Run,
    Settings,
)
from perflab.owner import effective_status, stamp_owner
from perflab.quickread import check_sqlite_integrity as _check_sqlite_integrity
from perflab.quickread import default_path, result_from_rows
from perflab.quickwrite import (
    acknowledge,
    config_row,
    result_row,
    result_update,
    run_row,
    stored_already,
)
from perflab.schema import (
    SCHEMA_VERSION,
    chunks,
    configurations,
    machines,
    meta,
    metadata,
    profiles,
    results,
    runs,
)
from perflab.storefaults import (
    Outage,
    host_port_problem,
    ride_out,
    schema_problem,
    server_error,
    sqlite_fault,
)
from perflab.storefaults import StoreUnreachable as StoreUnreachable  # the store's callers catch it


def default_db_path() -> Path:
    return default_path()


def _server_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 (the `fleet` extra), not SQLAlchemy's psycopg2 default."""
    if re.match(r"^postgres(ql)?://", url):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def url_without_password(url: str) -> str:
    """A server URL as a user would type it (postgresql://, not the driver's name), without
    its password."""
    u = sa.engine.make_url(url)
    return sa.engine.URL.create(u.get_backend_name(), u.username, None, u.host, u.port,
                                u.database, u.query).render_as_string(hide_password=False)


def _check_host_port(url: str, shown: str) -> None:
    """A server URL's HOST[:PORT] part must parse (SQLAlchemy raises a bare ValueError for a
    port that is not a number): one line naming that part and the fix."""
    try:
        sa.engine.make_url(url)
    except ValueError as e:
        if isinstance(e, sa.exc.ArgumentError):
            return  # not a URL at all: said where the engine is made
        raise host_port_problem(url, shown) from None


class Store:
    """Read and write result sets.  ``url`` is a SQLAlchemy URL or a path to a SQLite file."""

    def __init__(self, url: str | Path | None = None, lock_timeout: float = 10.0,
                 create: bool | None = None, read_only: bool = False,
                 client: str | None = None) -> None:
        """``create``: make the schema when it is missing (default: for SQLite files only; a
        server database is set up by ``perflab fleet init``, which passes True).
        ``read_only``: for the verbs that only read (results list/show, history, detect,
        dashboard): a SQLite file is opened without writing anything, so an archive on a
        read-only mount, or one the user may not write, can still be read.
        ``client``: a long-lived client of a server (a fleet worker): its connections carry
        this application_name (pg_stat_activity) and none is kept open between uses (NullPool),
        so the connections it holds are only its queue's.  A fleet job's measuring process
        (jobcontext.current() a job's) is such a client too, as ``perflab-job:NAME``:
        it holds a connection only while it reads or writes, not through its measuring, so 50
        workers fit PostgreSQL's default max_connections (docs/fleet.md)."""
        if url is None:
            url = default_db_path()
        url_s = str(url)
        # A URL that went through pathlib (a --db option typed Path) lost one slash of "://".
        url_s = re.sub(r"^([a-z][a-z0-9+]*):/(?!/)", r"\1://", url_s)
        fleet_job = False
        if "://" not in url_s:
            path = Path(url_s)
            self.location = str(path)
            # none yet: made, as by any verb; an older one this user may write: upgraded
            read_only = read_only and path.is_file() and not _older_writable_sqlite(path)
            if read_only:
                url_s = _read_only_sqlite_url(path)
            else:
                _prepare_sqlite_path(path)
                url_s = f"sqlite:///{path}"
            # A busy timeout rides out short locks from a concurrent perflab.
            self.engine = sa.create_engine(url_s, connect_args={"timeout": lock_timeout})
        else:
            self.location = redact_url(url_s)
            _check_host_port(url_s, self.location)
            self.url = _server_url(url_s)
            job = jobcontext.current()
            fleet_job = bool(job is not None and job.client and self.url.startswith("postgresql"))
            if client is None and fleet_job:
                client = job.client if job is not None else None
            try:
                connect_args: dict[str, Any] = (
                    {"connect_timeout": max(1, int(lock_timeout))}
                    if self.url.startswith("postgresql") else {})
                pooling: dict[str, Any] = {"pool_pre_ping": True}
                if client is not None:
                    connect_args["application_name"] = client
                    pooling = {"poolclass": sa.pool.NullPool}
                self.engine = sa.create_engine(self.url, connect_args=connect_args, **pooling)
            except ModuleNotFoundError as e:
                raise PerflabError(
                    f"the database driver for {self.location} is not installed ({e.name})",
                    "pip install 'perflab[fleet]' (psycopg 3) in perflab's environment") from e
            except sa.exc.ArgumentError as e:
                raise PerflabError(f"{self.location} is not a database URL ({e})",
                                   "pass --db PATH for a SQLite file or "
                                   "--db postgresql://USER@HOST/DB") from e
        if not hasattr(self, "url"):
            self.url = url_s
        if self.engine.dialect.name == "sqlite":
            # Before anything writes to it (the WAL pragma, the schema): a damaged file is
            # refused untouched rather than written into.
            _check_sqlite_integrity(Path(self.location))
            if not read_only:
                sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        # A server reached once and then lost (a restart, a blip) is waited for by every read
        # and write (ride_out), and said once in lines through ``outage`` when a caller gives
        # it a voice; a server never reached is one line at once.
        self.outage = Outage()
        # A fleet job's process waits from its first connection: its worker reached the
        # server, so a refusal now (a restart, every slot taken for a moment) is an outage.
        self._reached = fleet_job
        if create is None:
            create = self.is_sqlite and not read_only
        self.ensure_schema(create=create)
        try:
            self._check_columns()
        except DatabaseError as e:
            raise self._db_error(e) from e
        self._reached = not self.is_sqlite

    @property
    def pasteable(self) -> str:
        """The store as a fix line's --db names it: the file, or the server URL a user types
        (postgresql://) with its user and without its password."""
        if self.is_sqlite:
            return self.location
        return redact_url(url_without_password(self.url), keep_user=True)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    # -- schema -------------------------------------------------------------------------------
    def schema_version(self) -> int | None:
        """The version recorded in the database; 1 for a pre-versioning perflab database, None
        for a database without perflab's tables."""
        def go(conn: sa.Connection) -> int | None:
            insp = sa.inspect(conn)
            if insp.has_table("perflab_meta"):
                v = conn.execute(sa.select(meta.c.value).where(
                    meta.c.key == "schema_version")).scalar()
                if v is not None:
                    return int(v)
            return 1 if insp.has_table("results") else None

        return self.read(go)

    def ensure_schema(self, create: bool = True) -> None:
        """Check (and with ``create``, make or upgrade) the schema.  Idempotent; safe when several
        processes do it at once."""
        version = self.schema_version()
        if version == SCHEMA_VERSION:
            return
        problem = schema_problem(self.location, self.pasteable, version, create)
        if problem is not None:
            raise problem
        for attempt in range(20):
            try:
                self.write(self._create_schema)
                return
            except PerflabError as e:
                # Two processes created the same table at once (SQLite has no lock to take
                # first): the other one won; look again, the tables are there now.
                cause = e.__cause__
                if not _is_create_race(cause) or attempt == 19:
                    raise
                time.sleep(0.02 * (attempt + 1))

    def _create_schema(self, conn: sa.Connection) -> None:
        if conn.dialect.name == "postgresql":
            # One creator at a time; the others wait here, then find the tables made.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})
        metadata.create_all(conn, checkfirst=True)
        if conn.dialect.name == "sqlite":
            # SQLite's lock for the same purpose: the write lock, taken (by a write that changes
            # nothing) before the version is read, so a second opener waits here and then finds
            # the schema current; a migration of stored values (5) runs once.
            conn.execute(meta.update().where(meta.c.key == "schema_version")
                         .values(value=meta.c.value))
        current = conn.execute(sa.select(meta.c.value).where(
            meta.c.key == "schema_version")).scalar()
        if current is not None and int(current) > SCHEMA_VERSION:
            return  # a newer perflab got here first; ensure_schema's next check names it
        from perflab.migrations import migrate

        migrate(conn, int(current) if current is not None else 1)
        values = {"key": "schema_version", "value": str(SCHEMA_VERSION)}
        if current is None:
            conn.execute(upsert_stmt(conn, meta).values(**values)
                         .on_conflict_do_nothing(index_elements=["key"]))
        conn.execute(meta.update().where(meta.c.key == "schema_version")
                     .values(value=str(SCHEMA_VERSION)))

    def _check_columns(self) -> None:
        """Every column this perflab writes must exist: a table from another version (or
        altered by hand) is named here, not at the first insert after measuring."""
        names = [t.name for t in metadata.sorted_tables]

        def columns() -> dict[str, set[str]]:
            # All tables' columns at once: on PostgreSQL one catalog query, not one per table.
            found = sa.inspect(self.engine).get_multi_columns(filter_names=names)
            return {table: {c["name"] for c in cols} for (_, table), cols in found.items()}

        tables = columns()
        lacking = [name for name in names if name not in tables]
        if lacking and not self.is_sqlite:
            raise PerflabError(f"the database {self.location} lacks perflab's table(s) "
                               f"{', '.join(lacking)}",
                               f"run 'perflab fleet init --db {self.pasteable}' once")
        if lacking:
            # A table dropped by hand, or added in this version: make it (data stays).
            self.write(lambda conn: metadata.create_all(conn, checkfirst=True))
            tables = columns()
        for table in metadata.sorted_tables:
            have = tables.get(table.name, set())
            missing = [c.name for c in table.columns if c.name not in have]
            if missing:
                raise PerflabError(
                    f"the result database {self.location} has a table {table.name} without "
                    f"the column(s) {', '.join(missing)} this perflab needs (written by another "
                    "perflab version, or altered)",
                    "move it aside (mv it to a .bak file) and run again, pass --db with another "
                    "file, or use the perflab version that wrote it")

    # -- errors -------------------------------------------------------------------------------
    def _db_error(self, e: Exception) -> PerflabError:
        text = str(getattr(e, "orig", e)).strip()
        first = text.splitlines()[0] if text else type(e).__name__
        if not self.is_sqlite:
            return server_error(self.location, text, first)
        return sqlite_fault(self.location, text)

    def write(self, fn: Any, wait: bool = True) -> Any:
        """Run ``fn(conn)`` in one transaction; database faults become one PerflabError line.
        Other stages use this (and ``read``) for queries on their own tables.  A server lost
        after it was reached is waited for (``ride_out``; ``wait=False``: one try): a
        transaction cut by the loss is run again.  The one case that can apply twice is a
        commit whose acknowledgement was lost with the connection; the runs, the bulk of what
        is written, are guarded against it (``add_rounds(again=True)``)."""
        return self._run(self.engine.begin, fn, wait)

    def read(self, fn: Any, wait: bool = True) -> Any:
        """Run ``fn(conn)`` on a connection; database faults become one PerflabError line.
        A server lost after it was reached is waited for, as by ``write``."""
        return self._run(self.engine.connect, fn, wait)

    def _run(self, open_conn: Callable[[], Any], fn: Any, wait: bool) -> Any:
        """``fn`` on a connection from ``open_conn`` (a transaction or not), its faults one
        PerflabError line, a lost server waited for (write, read)."""
        def once() -> Any:
            try:
                with open_conn() as conn:
                    return fn(conn)
            except (OperationalError, DatabaseError) as e:
                raise self._db_error(e) from e

        return ride_out(once, self.outage) if self._reached and wait else once()

    # -- writing ------------------------------------------------------------------------------
    def machine_id(self, conn: sa.Connection, fp: Fingerprint) -> int:
        """The machine's row id, made on first sight.  Insert-if-absent then select, so two
        processes meeting a new machine at once get one row, not a duplicate-key error."""
        h = fp.identity_hash()
        q = sa.select(machines.c.id).where(machines.c.fingerprint_hash == h)
        row = conn.execute(q).first()
        if row:
            return int(row[0])
        conn.execute(upsert_stmt(conn, machines).values(
            fingerprint_hash=h, hostname=fp.hostname, fingerprint=fp.identity())
            .on_conflict_do_nothing(index_elements=["fingerprint_hash"]))
        return int(conn.execute(q).scalar_one())

    def machine_names(self) -> dict[int, str]:
        """Every machine row's id -> its name for people (Fingerprint.label)."""
        rows = self.read(lambda c: c.execute(sa.select(machines.c.id, machines.c.fingerprint))
                         .all())
        return {int(mid): Fingerprint.from_json(fp).label(mid) for mid, fp in rows}

    def _insert_result(self, conn: sa.Connection, rs: ResultSet) -> int:
        row = result_row(rs, self.machine_id(conn, rs.fingerprint))
        return int(conn.execute(results.insert().values(row)).inserted_primary_key[0])

    def begin_result(self, rs: ResultSet) -> int:
        """Insert the result set header (status 'running'); sets and returns ``rs.id``."""
        stamp_owner(rs)
        rs.id = self.write(lambda conn: self._insert_result(conn, rs))
        return rs.id

    def _insert_row(self, table: sa.Table, row: dict[str, Any]) -> int:
        """Insert one row in a transaction of its own; its id."""
        return int(self.write(
            lambda conn: conn.execute(table.insert().values(row)).inserted_primary_key[0]))

    def add_configuration(self, result_id: int, cfg: Configuration) -> int:
        cfg.id = self._insert_row(configurations, config_row(result_id, cfg))
        return cfg.id

    def add_run(self, configuration_id: int, run: Run) -> int:
        run.id = self._insert_row(runs, run_row(configuration_id, run))
        return run.id

    def add_rounds(self, rounds: list[list[tuple[int, Run]]],
                   committed: Callable[[list[Run]], None] | None = None,
                   again: bool = False) -> None:
        """Store each round's runs in a transaction of its own, in order, on one connection
        (a checkout per round cost as much as the commit: the runner stores the rounds of a
        launcher batch together).  A fault leaves the rounds before it stored.  ``committed``
        hears of each round's runs (ids set) as soon as its transaction is committed.
        ``again``: these rounds are stored again after a fault: the first may have been
        committed with its acknowledgement lost (the connection broke at the commit), so it
        is looked up first (by configuration and seq) and not stored twice.

        Why the driver's cursor: a round is often one run (stat), and SQLAlchemy Core's
        execution of one INSERT cost 0.11 ms of a round's 0.24 ms on this 2-vCPU guest
        (600 rounds of one run), a tenth of a run of `true`, which counts in a comparison with
        hyperfine.  The statement is still SQLAlchemy's (compiled once for the
        store's dialect, with its paramstyle) and so is the transaction; only the binding is
        done here: the JSON column serialised with json.dumps, as SQLAlchemy's JSON type
        does by default."""
        compiled = runs.insert().returning(runs.c.id).compile(
            dialect=self.engine.dialect, column_keys=[c.key for c in runs.c if c.key != "id"])
        sql, order = str(compiled), compiled.positiontup if compiled.positional else None
        driver_error = self.engine.dialect.loaded_dbapi.Error
        try:
            with self.engine.connect() as conn:
                for items in rounds:
                    if not items:
                        continue
                    if again:
                        again = False
                        if stored_already(items, _stored_runs(conn, items), committed):
                            continue
                    with conn.begin():
                        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                        try:
                            ids = []
                            for cid, run in items:
                                row = run_row(cid, run)
                                row["values"] = json.dumps(run.values)  # bound by hand, above
                                cur.execute(sql, tuple(row[k] for k in order) if order else row)
                                ids.append(int(cur.fetchone()[0]))
                        finally:
                            cur.close()
                    acknowledge(items, ids, committed)
        except (OperationalError, DatabaseError, driver_error) as e:
            raise self._db_error(e) from e

    def update_result(self, rs: ResultSet, wait: bool = True) -> None:
        """Record status, metrics, notes and the environment as they stand (called at the end,
        or on Ctrl-C; the runs add the runtimes they ran on to the environment).
        ``wait=False``: a lost server is not waited for (the user is leaving)."""
        assert rs.id is not None
        stamp_owner(rs)

        def go(conn: sa.Connection) -> None:
            conn.execute(results.update().where(results.c.id == rs.id).values(result_update(rs)))

        self.write(go, wait=wait)

    def save(self, rs: ResultSet, progress: Callable[[int], None] | None = None,
             batch: int = 5000) -> int:
        """Store a complete in-memory result set (imports, tests) in ONE transaction: all of it
        or nothing, so an interrupted import stores nothing rather than a 'complete' part.
        Runs go in batches, each one executemany of the driver's own (``_insert_runs``);
        ``progress(n)`` is told after each.  A SQLite store's log is emptied after (an import
        of millions of runs wrote as much to it)."""
        stamp_owner(rs)

        def go(conn: sa.Connection) -> int:
            rid = self._insert_result(conn, rs)
            for cfg in rs.configurations:
                res = conn.execute(configurations.insert().values(config_row(rid, cfg)))
                cid = int(res.inserted_primary_key[0])
                for i in range(0, len(cfg.runs), batch):
                    chunk = cfg.runs[i:i + batch]
                    _insert_runs(conn, [run_row(cid, r) for r in chunk])
                    if progress is not None:
                        progress(len(chunk))
                cfg.id = cid
            return rid

        rs.id = self.write(go)
        self.checkpoint()
        return rs.id

    def checkpoint(self) -> None:
        """Move a SQLite store's write-ahead log into the file and truncate it, so no -wal as
        large as the last big write is left beside the store (SQLite's own checkpoints reuse
        the log but never shrink it); a reader holding the log open defers it, harmlessly."""
        if self.engine.dialect.name == "sqlite":
            self.read(lambda conn: conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)"))

    # -- reading ------------------------------------------------------------------------------
    def count_results(self) -> int:
        return int(self.read(lambda conn: conn.execute(
            sa.select(sa.func.count()).select_from(results)).scalar_one()))

    def list_results(self, limit: int | None = 50) -> list[dict[str, Any]]:
        """The newest ``limit`` results (None: all), newest first."""
        def go(conn: sa.Connection) -> list[dict[str, Any]]:
            q = (sa.select(results.c.id, results.c.kind, results.c.label, results.c.created_at,
                           results.c.status, results.c.commit, results.c.machine_id,
                           # the owner alone: the whole Settings would import stats (its Plan)
                           results.c.settings["owner"].label("owner"),
                           sa.func.count(sa.distinct(configurations.c.id)).label("configs"),
                           # measured runs, as results show and stat count them (warm-up
                           # runs made 36 of an import's 20)
                           sa.func.count(runs.c.id).filter(
                               sa.not_(sa.func.coalesce(runs.c.warmup, False))).label("runs"))
                 .select_from(results.outerjoin(configurations).outerjoin(runs))
                 .group_by(results.c.id).order_by(results.c.id.desc()).limit(limit))
            out = []
            for row in conn.execute(q).mappings():
                d = dict(row)
                owner = d.pop("owner")
                d["status"] = effective_status(
                    d["status"], Owner.from_dict(owner) if isinstance(owner, dict) else None)
                names = conn.execute(sa.select(configurations.c.name).distinct()
                                     .where(configurations.c.result_id == d["id"])).scalars()
                d["names"] = list(names)
                out.append(d)
            return out

        return self.read(go)

    def reports_dir(self) -> Path:
        """Where reports of this store's results go by default.  Report folders are named by
        result id (run-3), so two stores must never share one folder: the default database's
        reports stay in <data dir>/reports, another SQLite file's go beside it
        (<folder>/<stem>-reports), a server database's under <data dir>/reports/<host-port-db>."""
        data = Path(platformdirs.user_data_dir("perflab"))
        if "://" not in self.location:
            db = Path(self.location).resolve()
            if db == (data / "results.sqlite").resolve():
                return data / "reports"
            return db.with_name(f"{db.stem}-reports")
        u = sa.engine.make_url(self.url)
        tag = re.sub(r"[^A-Za-z0-9._-]", "_", f"{u.host or 'local'}-{u.port or 5432}-{u.database}")
        return data / "reports" / tag

    def load(self, result_id: int) -> ResultSet:
        def go(conn: sa.Connection) -> ResultSet:
            q = sa.select(results).where(results.c.id == result_id)
            row = conn.execute(q).mappings().first()
            if row is None:
                raise PerflabError(f"no result with id {result_id} in {self.location}",
                                   "list the stored results with 'perflab results list'")
            cfg_rows = list(conn.execute(sa.select(configurations).where(
                configurations.c.result_id == result_id).order_by(configurations.c.id))
                .mappings())
            run_rows = conn.execute(sa.select(runs).where(runs.c.configuration_id.in_(
                [c["id"] for c in cfg_rows])).order_by(runs.c.seq, runs.c.id)).mappings()
            rs = result_from_rows(row, cfg_rows, run_rows)
            rs.status = effective_status(rs.status, rs.settings.owner)
            if rs.status != row["status"]:
                pid = rs.settings.owner.pid if rs.settings.owner else None
                rs.notes.add(said.ended_unfinished(pid))
            return rs

        return self.read(go)

    # -- pruning ------------------------------------------------------------------------------
    def prune_plan(self, before: float, keep: int,
                   out_of_series: tuple[str, ...] = ("bisect",)) -> tuple[list[int], int, int]:
        """The result sets created before ``before`` that may go, as (ids, their measured
        runs, results kept although older).  Kept: every result holding one of the newest
        ``keep`` points of a series (benchmark, cell, configuration, machine), however old, so
        each series keeps the points detect compares its next result with; and results still
        running.  ``out_of_series`` kinds (bisect) are in no series: only their age counts."""
        def go(conn: sa.Connection) -> tuple[list[int], int, int]:
            in_series = ((results.c.kind.notin_(out_of_series))
                         & (results.c.status != "abandoned"))
            rank = sa.func.row_number().over(
                partition_by=(configurations.c.benchmark, configurations.c.cell,
                              configurations.c.name, results.c.machine_id),
                order_by=(results.c.created_at.desc(), results.c.id.desc())).label("rank")
            ranked = (sa.select(results.c.id.label("rid"), rank)
                      .select_from(results.join(configurations)).where(in_series).subquery())
            newest = sa.select(ranked.c.rid).where(ranked.c.rank <= keep).distinct()
            old = ((results.c.created_at < before) & (results.c.status != "running"))
            ids = [int(x) for x in conn.execute(
                sa.select(results.c.id).where(old, results.c.id.notin_(newest))
                .order_by(results.c.id)).scalars()]
            kept = int(conn.execute(sa.select(sa.func.count()).select_from(results).where(
                old, results.c.id.in_(newest))).scalar() or 0)
            n_runs = 0
            for chunk in chunks(ids):
                n_runs += int(conn.execute(
                    sa.select(sa.func.count()).select_from(runs.join(configurations))
                    .where(configurations.c.result_id.in_(chunk),
                           runs.c.warmup.is_(False))).scalar() or 0)
            return ids, n_runs, kept

        return self.read(go)  # type: ignore[no-any-return]

    def delete_results(self, ids: list[int]) -> None:
        """Remove these result sets with their configurations and runs (profiles keep their
        files and lose the link), a chunk per transaction."""
        for chunk in chunks(ids):
            def go(conn: sa.Connection, chunk: list[int] = chunk) -> None:
                cfgs = sa.select(configurations.c.id).where(
                    configurations.c.result_id.in_(chunk)).scalar_subquery()
                conn.execute(profiles.update().where(profiles.c.result_id.in_(chunk))
                             .values(result_id=None, configuration_id=None))
                conn.execute(runs.delete().where(runs.c.configuration_id.in_(cfgs)))
                conn.execute(configurations.delete().where(
                    configurations.c.result_id.in_(chunk)))
                conn.execute(results.delete().where(results.c.id.in_(chunk)))

            self.write(go)

    def result_ids(self, kind: str | None = None) -> list[int]:
        def go(conn: sa.Connection) -> list[int]:
            q = sa.select(results.c.id).order_by(results.c.id)
            if kind:
                q = q.where(results.c.kind == kind)
            return [int(x) for x in conn.execute(q).scalars()]

        return self.read(go)

    def primary_choices(self, fp: Fingerprint, keys: list[tuple[str, str]], default: str,
                        *, before: int | None = None) -> dict[tuple[str, str], PrimaryChoice]:
        """The primary metric last chosen by measuring each (benchmark, cell) on the machine of
        ``fp`` against the same ``default`` (runner.choose_primary), with ``from_result`` set to
        the result whose runs made it.  Results older than this version stored no default and
        are passed over; so are choices given with --metric (not stored as a choice) and
        results still running (``before``: the result being measured)."""
        def go(conn: sa.Connection) -> dict[tuple[str, str], PrimaryChoice]:
            mid = conn.execute(sa.select(machines.c.id).where(
                machines.c.fingerprint_hash == fp.identity_hash())).scalar()
            if mid is None:
                return {}
            out: dict[tuple[str, str], PrimaryChoice] = {}
            for bench, cell in dict.fromkeys(keys):
                q = (sa.select(results.c.id, results.c.settings)
                     .select_from(results.join(configurations))
                     .where(results.c.machine_id == mid, configurations.c.benchmark == bench,
                            configurations.c.cell == cell,
                            results.c.status.in_(("complete", "interrupted")))
                     .order_by(results.c.id.desc()).limit(20))
                if before is not None:
                    q = q.where(results.c.id < before)
                for rid, stored in conn.execute(q):
                    pc = Settings.from_dict(stored).primary_choice
                    if pc and pc.default == default and pc.cpu_bound is not None:
                        pc.from_result = pc.from_result or int(rid)
                        out[(bench, cell)] = pc
                        break
            return out

        return self.read(go)


_SCHEMA_LOCK_KEY = 0x7065_7266_6C61_62  # "perflab": the advisory lock schema creation takes


def _insert_runs(conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
    """Insert run rows (run_row's) with the driver's executemany on the dialect's compiled
    INSERT, the JSON of ``values`` encoded here: SQLAlchemy's per-row parameter and type
    processing cost about three times the driver's own insert (an import of 150,000 runs:
    4.4 s of its 11 s)."""
    compiled = runs.insert().compile(dialect=conn.dialect, column_keys=list(rows[0]))
    enc = json.dumps
    if compiled.positional:
        order = compiled.positiontup or []
        params: list[Any] = [tuple(enc(r[k]) if k == "values" else r[k] for k in order)
                             for r in rows]
    else:
        params = [{**r, "values": enc(r["values"])} for r in rows]
    conn.exec_driver_sql(str(compiled), params)


def _stored_runs(conn: sa.Connection, items: list[tuple[int, Run]]) -> dict[tuple[int, int], int]:
    """(configuration id, seq) -> run id for those of ``items`` already in the store."""
    q = (sa.select(runs.c.configuration_id, runs.c.seq, runs.c.id)
         .where(runs.c.configuration_id.in_({cid for cid, _ in items}))
         .where(runs.c.seq.in_({run.seq for _, run in items})))
    with conn.begin():
        return {(int(c), int(q_)): int(i) for c, q_, i in conn.execute(q)}


def upsert_stmt(conn: sa.Connection, table: sa.Table) -> Any:
    """The dialect's INSERT, which has ON CONFLICT DO NOTHING / DO UPDATE (SQLite and PostgreSQL
    alike): for inserts that may meet a row already there (the fleet's store uses it too)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def _is_create_race(e: BaseException | None) -> bool:
    text = str(getattr(e, "orig", e) or "")
    return isinstance(e, OperationalError | IntegrityError | ProgrammingError) and (
        "already exists" in text or "duplicate key" in text or "UNIQUE constraint" in text)




def _older_writable_sqlite(path: Path) -> bool:
    """``path`` is a SQLite file of an older perflab schema that this user may write: opened
    for writing even by a verb that only reads, and brought up to date once (perflab.migrations),
    since schemas 5 and 6 changed what stored values mean (task_clock's unit) and a reader
    cannot skip that."""
    import sqlite3
    from urllib.parse import quote

    if not os.access(path, os.W_OK):
        return False
    # immutable=1: no lock, no -wal/-shm made beside a file not yet checked (a damaged file is
    # refused untouched by _check_sqlite_integrity after this).  A newer version still in the
    # -wal is missed, and the file opened for writing finds it current: no harm.
    try:
        with contextlib.closing(sqlite3.connect(
                f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True)) as c:
            row = c.execute("SELECT value FROM perflab_meta WHERE key = 'schema_version'"
                            ).fetchone()
    except sqlite3.Error:
        return False  # not perflab's, or before versioning: ensure_schema names it
    return row is not None and int(row[0]) < SCHEMA_VERSION


def _read_only_sqlite_url(path: Path) -> str:
    """A SQLite URL that opens ``path`` without writing: mode=ro, and where SQLite could not
    make the WAL's -shm index beside it (a read-only mount or directory) and no -wal file holds
    unmerged pages, immutable=1 (no locks, no -shm: the file is taken as it is)."""
    from urllib.parse import quote

    d = path.parent if str(path.parent) else Path(".")
    wal = Path(f"{path}-wal")
    wal_pages = wal.exists() and wal.stat().st_size > 32
    shm_ok = Path(f"{path}-shm").exists() or os.access(d, os.W_OK)
    query = "mode=ro" if shm_ok or wal_pages else "mode=ro&immutable=1"
    return f"sqlite:///file:{quote(str(path.resolve()))}?{query}&uri=true"


def _prepare_sqlite_path(path: Path) -> None:
    """Refuse a path that cannot be a database file, and create its directory."""
    if path.is_dir():
        raise PerflabError(f"the result database path {path} is a directory",
                           f"pass --db with a file name, e.g. --db {path / 'results.sqlite'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = e.strerror or str(e)
        blocker = next((p for p in [path.parent, *path.parent.parents]
                        if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            why = f"{blocker} is a file, not a directory"
        raise PerflabError(
            f"cannot create the directory {path.parent} for the result database ({why})",
            "create it yourself, or pass --db with a file in a writable directory") from None


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    import sqlite3

    cur = dbapi_conn.cursor()
    # WAL lets a report read while a measurement writes; foreign keys make deletes cascade.
    # WAL is stored in the file: once set, reading it needs no lock.  Setting it does, and
    # several processes first opening one new file can find it locked beyond the busy
    # timeout on a loaded machine: retry a few times rather than fail the first use.
    if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        for attempt in range(5):
            try:
                cur.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
    # In WAL mode, NORMAL syncs at checkpoints, not at every commit: a commit is in the OS
    # before it returns, so it survives perflab being killed (SIGKILL, Ctrl-C, a crash), though
    # not a power cut.  FULL cost 8 ms a commit here, twice the whole run of `true`.
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
