"""The fleet's database as ``fleet status`` and ``fleet submit`` use it: one psycopg connection,
no SQLAlchemy.

perflab.storage's Store opens every database through SQLAlchemy, whose import alone costs more
CPU than numpy's whole import (``python -c "import sqlalchemy"``: 240-300 ms of task-clock
against numpy's 136-168 ms on a 2-CPU EPYC), and reflects every table's columns at each open.
A status is four queries and a submission one row per machine, so these two verbs speak to
PostgreSQL through psycopg alone: the driver procrastinate (the queue) needs anyway, so
nothing is added to what a fleet installs.  They check the schema version and the queue's table,
not every column.  The worker, ``fleet init``, prune and the measuring verbs keep the Store
(the schema made or upgraded, writes that ride out a lost server).

Every statement here is plain SQL with psycopg's ``%(name)s`` parameters; the worker writes a
job's row through its Store with the same text (JOB_ROW, fleet.store.ensure_job_row).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from perflab.errors import PerflabError
from perflab.format import redact_url
from perflab.storefaults import Outage, host_port_problem, ride_out, schema_problem, server_error

# The queue's job (procrastinate_jobs, the truth for its state) beside our row of it.
JOB_SELECT = (
    "SELECT f.job_id, f.submission, f.machine, f.argv, f.submitted_at, f.started_at, "
    "f.finished_at, f.error, f.result_ids, f.state AS own_state, "
    # Tries: the queue counts the attempts that ended (retried, failed or done); one running
    # is a try too.  Ours (the attempt the worker last started) when the queue lost the job.
    "p.status::text AS status, COALESCE(p.attempts + CASE WHEN p.status::text IN "
    "('doing', 'aborting') THEN 1 ELSE 0 END, f.attempts) AS attempts "
    "FROM fleet_jobs f LEFT JOIN procrastinate_jobs p ON p.id = f.job_id ")
# The queue's state when it still has the job, else ours: a job is failed when either says so.
_FAILED = ("(p.status::text IN ('failed', 'aborted') "
           "OR (p.status IS NULL AND f.state = 'failed'))")
# The fleet_jobs row of a queued job, made once by the submitter or the worker (whoever comes
# first: a worker may take the job before its submitter writes the row).
JOB_ROW = (
    "INSERT INTO fleet_jobs (job_id, submission, machine, argv, submitted_at, attempts, state, "
    "result_ids) VALUES (%(job_id)s, %(submission)s, %(machine)s, CAST(%(argv)s AS json), "
    "%(submitted_at)s, 0, 'queued', CAST('[]' AS json)) ON CONFLICT (job_id) DO NOTHING")


def job_row_params(job_id: int, submission: str, machine: str, argv: list[str],
                   submitted_at: float) -> dict[str, Any]:
    return {"job_id": job_id, "submission": submission, "machine": machine,
            "argv": json.dumps(argv), "submitted_at": submitted_at}


def fleet_url(db: str | None) -> str:
    """The fleet's database URL, which must be PostgreSQL's (the queue lives there too)."""
    if db is None:
        raise PerflabError("the fleet needs its PostgreSQL database",
                           "pass --db postgresql://USER@HOST/DB (or set PERFLAB_DB)")
    # A URL that went through pathlib lost one slash of "://".
    text = re.sub(r"^([a-z][a-z0-9+]*):/(?!/)", r"\1://", str(db))
    if "://" not in text or text.startswith("sqlite:"):
        raise PerflabError(
            f"the fleet needs a PostgreSQL store, not the SQLite file {db}",
            "pass --db postgresql://USER@HOST/DB (see docs/fleet.md to set one up)")
    return text


def libpq_url(url: str) -> str:
    """The URL as libpq takes it: ``postgresql://``, without a SQLAlchemy driver's name
    (``postgresql+psycopg://``)."""
    return re.sub(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql://", url)


def no_queue(location: str) -> PerflabError:
    return PerflabError(f"the database {location} has no job queue yet",
                        f"run 'perflab fleet init --db {location}' once")


class FleetConn:
    """One autocommit psycopg connection to the fleet's database, its perflab schema (the
    version) and the queue's table checked; database faults are one PerflabError line, as the
    Store's are (perflab.storefaults)."""

    def __init__(self, db: str | None, connect_timeout: int = 10) -> None:
        self.url = fleet_url(db)
        self.location = redact_url(self.url)
        self.conninfo = libpq_url(self.url)
        if not self.conninfo.startswith("postgresql://"):
            raise PerflabError(f"the fleet needs a PostgreSQL store, not {self.location}",
                               "pass --db postgresql://USER@HOST/DB")
        try:
            urlsplit(self.conninfo).port  # noqa: B018 (a port that is not a number raises)
        except ValueError:
            raise host_port_problem(self.conninfo, self.location) from None
        import psycopg

        self._psycopg = psycopg
        self._timeout = connect_timeout
        self.outage = Outage()
        # A server never reached is one line at once; once reached, a lost one is waited for
        # by every statement (ride_out), as the Store does.
        self._conn = self._connect()
        self._check_schema()

    def _connect(self) -> Any:
        from psycopg.rows import dict_row

        try:
            return self._psycopg.connect(self.conninfo, autocommit=True, row_factory=dict_row,
                                         connect_timeout=self._timeout)
        except self._psycopg.Error as e:
            raise self._fault(e) from e

    def _fault(self, e: Exception) -> PerflabError:
        text = str(e).strip()
        return server_error(self.location, text, text.splitlines()[0] if text
                            else type(e).__name__)

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one statement (autocommit), as dicts by column name.  A server lost is
        waited for and the statement run again on a new connection: every statement here is
        a read or an idempotent write."""
        out: list[dict[str, Any]] = ride_out(lambda: self._once(sql, params), self.outage)
        return out

    def _once(self, sql: str, params: dict[str, Any] | None) -> list[dict[str, Any]]:
        if self._conn.closed or self._conn.broken:
            self._conn = self._connect()
        try:
            cur = self._conn.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []
        except self._psycopg.Error as e:
            raise self._fault(e) from e

    def _check_schema(self) -> None:
        """perflab's schema at this perflab's version (as perflab.storage.Store reads it: no
        perflab_meta but a results table is version 1), and procrastinate's jobs table."""
        (found,) = self.rows("SELECT to_regclass('perflab_meta') IS NOT NULL AS meta, "
                             "to_regclass('results') IS NOT NULL AS results, "
                             "to_regclass('procrastinate_jobs') IS NOT NULL AS queue")
        version = 1 if found["results"] else None
        if found["meta"]:
            got = self.rows("SELECT value FROM perflab_meta WHERE key = 'schema_version'")
            version = int(got[0]["value"]) if got else version
        problem = schema_problem(self.location, redact_url(self.conninfo, keep_user=True),
                                 version, may_create=False)
        if problem is not None:
            raise problem
        if not found["queue"]:
            raise no_queue(self.location)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> FleetConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the verbs read and write ------------------------------------------------------
    def worker_rows(self) -> list[dict[str, Any]]:
        return self.rows("SELECT name, tags, hostname, fingerprint, last_heartbeat, state, "
                         "current_job, pid FROM fleet_workers ORDER BY name")

    def ensure_job_row(self, job_id: int, submission: str, machine: str, argv: list[str],
                       submitted_at: float) -> None:
        self.rows(JOB_ROW, job_row_params(job_id, submission, machine, argv, submitted_at))

    def job_rows(self, submission: str | None, limit: int | None) -> list[dict[str, Any]]:
        """Our job rows with the queue's status and attempts: the newest ``limit`` (None: all),
        or those of one ``submission`` in machine order."""
        where = ("WHERE f.submission = %(s)s ORDER BY f.machine, f.job_id " if submission
                 else "ORDER BY f.job_id DESC ")
        return self.rows(JOB_SELECT + where + ("LIMIT %(n)s" if limit is not None else ""),
                         {"s": submission, "n": limit})

    def failed_job_rows(self, among: list[str], limit: int) -> list[dict[str, Any]]:
        """The failed jobs of these submissions, newest first, at most ``limit``."""
        return self.rows(JOB_SELECT + f"WHERE f.submission = ANY(%(ids)s) AND {_FAILED} "
                         "ORDER BY f.job_id DESC LIMIT %(n)s", {"ids": among, "n": limit})

    def submission_rows(self, limit: int) -> tuple[list[dict[str, Any]],
                                                   dict[str, list[dict[str, Any]]], bool]:
        """The newest ``limit`` submissions (by id, which begins with its time of submission):
        the first job row of each (submission, argv, submitted_at), (submission, st, n) rows
        (st: the queue's status, else ours), and whether older ones exist.  The ids come from a
        walk down the index on fleet_jobs.submission, one probe per submission, so the cost
        does not grow with the jobs stored; the counts read only the chosen submissions'
        jobs."""
        ids = [r["sub"] for r in self.rows(
            "WITH RECURSIVE s(sub) AS ("
            " SELECT MAX(submission) FROM fleet_jobs"
            " UNION ALL SELECT (SELECT MAX(submission) FROM fleet_jobs WHERE submission < s.sub)"
            " FROM s WHERE s.sub IS NOT NULL) "
            "SELECT sub FROM s WHERE sub IS NOT NULL LIMIT %(n)s", {"n": limit + 1})]
        more, ids = len(ids) > limit, ids[:limit]
        if not ids:
            return [], {}, False
        first = {r["submission"]: r for r in self.rows(
            "SELECT f.submission, f.argv, f.submitted_at FROM fleet_jobs f WHERE f.job_id IN "
            "(SELECT MIN(job_id) FROM fleet_jobs WHERE submission = ANY(%(ids)s) "
            "GROUP BY submission)", {"ids": ids})}
        counts: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
        for r in self.rows(
                "SELECT f.submission, COALESCE(p.status::text, f.state) AS st, COUNT(*) AS n "
                "FROM fleet_jobs f LEFT JOIN procrastinate_jobs p ON p.id = f.job_id "
                "WHERE f.submission = ANY(%(ids)s) GROUP BY f.submission, st", {"ids": ids}):
            counts[r["submission"]].append(r)
        return [first[i] for i in ids], counts, more
