"""The result store: every run's raw samples with the environment they were measured in.

SQLAlchemy Core gives one schema for SQLite (the embedded default, one file under the user's
data directory) and PostgreSQL (a fleet's shared store: pass a ``postgresql://`` URL).

Writes happen run by run, each in its own transaction, so an interrupted measurement keeps
every run finished before the interruption.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import platformdirs
import sqlalchemy as sa
from sqlalchemy.exc import DatabaseError, OperationalError

from perflab.errors import PerflabError
from perflab.model import Configuration, MetricInfo, ResultSet, Run

metadata = sa.MetaData()

machines = sa.Table(
    "machines", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("fingerprint_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("hostname", sa.String(255)),
    sa.Column("fingerprint", sa.JSON, nullable=False),
)

results = sa.Table(
    "results", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("label", sa.Text, default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("machine_id", sa.ForeignKey("machines.id")),
    # The environment as measured at the start of this result set (load, governor...), which
    # varies per result even on one machine; the machine row holds the stable part.
    sa.Column("fingerprint", sa.JSON),
    sa.Column("commit", sa.String(64)),
    sa.Column("dirty", sa.Boolean),
    sa.Column("repo", sa.Text),
    sa.Column("perflab_version", sa.String(32)),
    sa.Column("settings", sa.JSON),
    sa.Column("metrics", sa.JSON),  # name -> MetricInfo dict
    sa.Column("notes", sa.JSON),
)

configurations = sa.Table(
    "configurations", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("result_id", sa.ForeignKey("results.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("command", sa.JSON, nullable=False),
    sa.Column("shell", sa.Boolean, default=False),
    sa.Column("env", sa.JSON),
    sa.Column("benchmark", sa.Text, nullable=False, index=True),
    sa.Column("params", sa.JSON),
    sa.Column("cell", sa.Text, nullable=False),  # canonical params, for grouping and series
    sa.Column("is_baseline", sa.Boolean, default=False),
    sa.Column("commit", sa.String(64)),
)

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("configuration_id", sa.ForeignKey("configurations.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("warmup", sa.Boolean, default=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("exit_code", sa.Integer),
    sa.Column("started_at", sa.Float),
    sa.Column("load1", sa.Float),
    sa.Column("error", sa.Text),
    sa.Column("values", sa.JSON, nullable=False),  # metric -> value
)

profiles = sa.Table(
    "profiles", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("result_id", sa.ForeignKey("results.id", ondelete="SET NULL"), index=True),
    sa.Column("configuration_id", sa.ForeignKey("configurations.id", ondelete="SET NULL")),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("machine_id", sa.ForeignKey("machines.id")),
    sa.Column("name", sa.Text),
    sa.Column("command", sa.JSON),
    sa.Column("sampler", sa.String(64)),  # perf event used (cpu-clock, cycles)
    sa.Column("call_graph", sa.String(16)),  # fp | dwarf | none
    sa.Column("data_path", sa.Text),  # where perf.data / folded stacks live
    sa.Column("summary", sa.JSON),  # top symbols, sample count, warnings
)


def default_db_path() -> Path:
    env = os.environ.get("PERFLAB_DB")
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("perflab")) / "results.sqlite"


def fingerprint_hash(fp: dict[str, Any]) -> str:
    """Hash of the stable machine identity (not load or time), so one machine gets one row."""
    stable = {k: fp.get(k) for k in MACHINE_IDENTITY_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


# What identifies a machine for comparison purposes; the rest (load) is per result set.
MACHINE_IDENTITY_KEYS = (
    "hostname", "cpu_model", "cpu_count", "kernel", "arch", "governor", "smt", "thp",
    "pmu", "perf_event_paranoid",
)


class Store:
    """Read and write result sets.  ``url`` is a SQLAlchemy URL or a path to a SQLite file."""

    def __init__(self, url: str | Path | None = None, lock_timeout: float = 10.0) -> None:
        if url is None:
            url = default_db_path()
        url_s = str(url)
        if "://" not in url_s:
            path = Path(url_s)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.location = str(path)
            url_s = f"sqlite:///{path}"
            # A busy timeout rides out short locks from a concurrent perflab.
            self.engine = sa.create_engine(url_s, connect_args={"timeout": lock_timeout})
        else:
            self.location = url_s
            self.engine = sa.create_engine(url_s)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            metadata.create_all(self.engine)
        except DatabaseError as e:
            raise self._db_error(e) from e

    # -- errors -------------------------------------------------------------------------------
    def _db_error(self, e: Exception) -> PerflabError:
        text = str(getattr(e, "orig", e))
        if "locked" in text:
            return PerflabError(
                f"the result database {self.location} is locked by another process",
                "wait for the other perflab to finish, or pass --db with another file",
            )
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return PerflabError(
                f"the result database {self.location} is corrupt ({text})",
                "move it aside (mv it to a .bak file) and run again, or pass --db with another "
                "file",
            )
        return PerflabError(f"the result database {self.location} failed: {text}",
                            "check the path and its permissions, or pass --db")

    def write(self, fn: Any) -> Any:
        """Run ``fn(conn)`` in one transaction; database faults become one PerflabError line.
        Other stages use this (and ``read``) for queries on their own tables."""
        try:
            with self.engine.begin() as conn:
                return fn(conn)
        except (OperationalError, DatabaseError) as e:
            raise self._db_error(e) from e

    def read(self, fn: Any) -> Any:
        """Run ``fn(conn)`` on a connection; database faults become one PerflabError line."""
        try:
            with self.engine.connect() as conn:
                return fn(conn)
        except (OperationalError, DatabaseError) as e:
            raise self._db_error(e) from e

    # -- writing ------------------------------------------------------------------------------
    def machine_id(self, conn: sa.Connection, fp: dict[str, Any]) -> int:
        h = fingerprint_hash(fp)
        row = conn.execute(sa.select(machines.c.id).where(machines.c.fingerprint_hash == h)).first()
        if row:
            return int(row[0])
        stable = {k: fp.get(k) for k in MACHINE_IDENTITY_KEYS}
        res = conn.execute(machines.insert().values(
            fingerprint_hash=h, hostname=fp.get("hostname"), fingerprint=stable))
        return int(res.inserted_primary_key[0])

    def begin_result(self, rs: ResultSet) -> int:
        """Insert the result set header (status 'running'); sets and returns ``rs.id``."""
        from perflab import __version__

        def go(conn: sa.Connection) -> int:
            mid = self.machine_id(conn, rs.fingerprint)
            res = conn.execute(results.insert().values(
                kind=rs.kind, label=rs.label, created_at=rs.created_at or time.time(),
                status=rs.status, machine_id=mid, fingerprint=rs.fingerprint, commit=rs.commit,
                dirty=rs.dirty, repo=rs.repo, perflab_version=__version__, settings=rs.settings,
                metrics={k: v.to_dict() for k, v in rs.metrics.items()}, notes=rs.notes))
            return int(res.inserted_primary_key[0])

        rs.id = self.write(go)
        return rs.id

    def add_configuration(self, result_id: int, cfg: Configuration) -> int:
        def go(conn: sa.Connection) -> int:
            res = conn.execute(configurations.insert().values(
                result_id=result_id, name=cfg.name, command=cfg.command, shell=cfg.shell,
                env=cfg.env, benchmark=cfg.benchmark or " ".join(cfg.command), params=cfg.params,
                cell=cfg.cell, is_baseline=cfg.is_baseline,
                commit=cfg.commit))
            return int(res.inserted_primary_key[0])

        cfg.id = self.write(go)
        return cfg.id

    def add_run(self, configuration_id: int, run: Run) -> int:
        def go(conn: sa.Connection) -> int:
            res = conn.execute(runs.insert().values(
                configuration_id=configuration_id, seq=run.seq, warmup=run.warmup,
                status=run.status, exit_code=run.exit_code, started_at=run.started_at,
                load1=run.load1, error=run.error, values=run.values))
            return int(res.inserted_primary_key[0])

        run.id = self.write(go)
        return run.id

    def update_result(self, rs: ResultSet) -> None:
        """Record status, metrics and notes as they stand (called at the end, or on Ctrl-C)."""
        assert rs.id is not None

        def go(conn: sa.Connection) -> None:
            conn.execute(results.update().where(results.c.id == rs.id).values(
                status=rs.status, metrics={k: v.to_dict() for k, v in rs.metrics.items()},
                notes=rs.notes, settings=rs.settings, label=rs.label))

        self.write(go)

    def save(self, rs: ResultSet) -> int:
        """Store a complete in-memory result set (imports, tests) in one go."""
        rid = self.begin_result(rs)
        for cfg in rs.configurations:
            cid = self.add_configuration(rid, cfg)
            for run in cfg.runs:
                self.add_run(cid, run)
        self.update_result(rs)
        return rid

    # -- reading ------------------------------------------------------------------------------
    def list_results(self, limit: int = 50) -> list[dict[str, Any]]:
        def go(conn: sa.Connection) -> list[dict[str, Any]]:
            q = (sa.select(results.c.id, results.c.kind, results.c.label, results.c.created_at,
                           results.c.status, results.c.commit, results.c.machine_id,
                           sa.func.count(sa.distinct(configurations.c.id)).label("configs"),
                           sa.func.count(runs.c.id).label("runs"))
                 .select_from(results.outerjoin(configurations).outerjoin(runs))
                 .group_by(results.c.id).order_by(results.c.id.desc()).limit(limit))
            out = []
            for row in conn.execute(q).mappings():
                d = dict(row)
                names = conn.execute(sa.select(configurations.c.name).distinct()
                                     .where(configurations.c.result_id == d["id"])).scalars()
                d["names"] = list(names)
                out.append(d)
            return out

        return self.read(go)

    def load(self, result_id: int) -> ResultSet:
        def go(conn: sa.Connection) -> ResultSet:
            q = sa.select(results).where(results.c.id == result_id)
            row = conn.execute(q).mappings().first()
            if row is None:
                raise PerflabError(f"no result with id {result_id} in {self.location}",
                                   "list the stored results with 'perflab results list'")
            rs = ResultSet(
                kind=row["kind"], label=row["label"] or "", created_at=row["created_at"],
                status=row["status"], fingerprint=row["fingerprint"] or {}, commit=row["commit"],
                dirty=row["dirty"], repo=row["repo"], settings=row["settings"] or {},
                metrics={k: MetricInfo.from_dict(k, v) for k, v in (row["metrics"] or {}).items()},
                notes=list(row["notes"] or []), id=row["id"])
            rs.fingerprint.setdefault("machine_id", row["machine_id"])
            cfg_rows = conn.execute(sa.select(configurations).where(
                configurations.c.result_id == result_id).order_by(configurations.c.id)).mappings()
            by_id: dict[int, Configuration] = {}
            for c in cfg_rows:
                cfg = Configuration(
                    name=c["name"], command=list(c["command"]), benchmark=c["benchmark"],
                    params=c["params"] or {}, is_baseline=bool(c["is_baseline"]),
                    commit=c["commit"], shell=bool(c["shell"]), env=c["env"] or {}, id=c["id"],
                    cell=c["cell"])
                by_id[c["id"]] = cfg
                rs.configurations.append(cfg)
            if by_id:
                run_rows = conn.execute(sa.select(runs).where(
                    runs.c.configuration_id.in_(list(by_id))).order_by(runs.c.seq)).mappings()
                for r in run_rows:
                    by_id[r["configuration_id"]].runs.append(Run(
                        seq=r["seq"], values=dict(r["values"]), status=r["status"],
                        exit_code=r["exit_code"], warmup=bool(r["warmup"]),
                        started_at=r["started_at"] or 0.0, load1=r["load1"],
                        error=r["error"] or "", id=r["id"]))
            return rs

        return self.read(go)

    def result_ids(self, kind: str | None = None) -> list[int]:
        def go(conn: sa.Connection) -> list[int]:
            q = sa.select(results.c.id).order_by(results.c.id)
            if kind:
                q = q.where(results.c.kind == kind)
            return [int(x) for x in conn.execute(q).scalars()]

        return self.read(go)

    # Older spellings, kept for callers written before read/write were public.
    _read = read
    _write = write


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets a report read while a measurement writes; foreign keys make deletes cascade.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
