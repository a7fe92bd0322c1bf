"""The fleet's queries through perflab.storage's Store (SQLAlchemy): every SQL statement of the
queue (queue.py), the worker (worker.py) and retention (prune), on perflab's fleet tables
(schema.workers, schema.fleet_jobs) and procrastinate's.  What ``fleet status`` and ``fleet
submit`` read and write is fleet.conn's (psycopg alone, no SQLAlchemy to load).  The others
call these functions and hold no SQL of their own."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from perflab.fleet.conn import JOB_ROW, job_row_params
from perflab.model import Fingerprint
from perflab.schema import fleet_jobs, results, workers
from perflab.storage import Store, upsert_stmt

# A lock taken before procrastinate's schema is created, so two `fleet init` wait for each other.
_INIT_LOCK = 7065727166002


# -- the queue's schema ---------------------------------------------------------------------------
def has_queue_schema(store: Store) -> bool:
    return store.read(lambda c: c.execute(
        sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar()) is not None


def create_queue_schema(store: Store, schema_sql: str) -> None:
    """procrastinate's schema, once (concurrent callers wait on an advisory lock)."""
    def go(conn: sa.Connection) -> None:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _INIT_LOCK})
        exists = conn.execute(sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar()
        if exists is None:
            # Straight to psycopg without parameters, so the schema's '%' signs stay literal.
            with conn.connection.dbapi_connection.cursor() as cur:  # type: ignore[union-attr]
                cur.execute(schema_sql)

    store.write(go)


def reach(store: Store) -> None:
    """Raises StoreUnreachable unless the server takes a new connection now (one try)."""
    store.read(lambda c: c.execute(sa.text("SELECT 1")), wait=False)


def ping(store: Store) -> bool:
    """Does the server take a new connection now (one try, no waiting)?"""
    from perflab.errors import PerflabError

    try:
        reach(store)
        return True
    except PerflabError:
        return False


# -- workers --------------------------------------------------------------------------------------
# The machine name's session advisory lock (key: hashtext(name), as a bigint), held by this
# session, or taken now; true if this session holds it after the query.  Held already: pg_locks
# shows it for pg_backend_pid() (a bigint key is classid = high 32 bits, objid = low 32 bits,
# objsubid = 1), and it is not taken again (a session lock taken twice needs two unlocks).
_NAME_LOCK = (
    "SELECT CASE WHEN EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND pid = pg_backend_pid() AND objsubid = 1"
    " AND classid = ((hashtext(%(key)s)::bigint >> 32) & 4294967295)::oid"
    " AND objid = (hashtext(%(key)s)::bigint & 4294967295)::oid)"
    " THEN true ELSE pg_try_advisory_lock(hashtext(%(key)s)) END AS held")


async def take_name_lock(conn: Any, key: str) -> bool:
    """The name lock on ``conn`` (a psycopg AsyncConnection: the worker's pool calls this on
    each connection it opens), held or taken; False when another session holds it."""
    cur = await conn.execute(_NAME_LOCK, {"key": key})
    row = await cur.fetchone()
    if not conn.autocommit:
        await conn.commit()  # a session lock outlives the transaction it was taken in
    return bool(row and row[0])


async def name_lock_held(app: Any, key: str) -> bool:
    """The name lock, checked (and taken again if its session lost it) on the worker's pooled
    connection: False when another session holds it."""
    row = await app.connector.execute_query_one_async(_NAME_LOCK, key=key)
    return bool(row and row["held"])


def worker_host(store: Store, name: str) -> tuple[str | None, int | None] | None:
    """(host, pid) of the worker row ``name``, if any."""
    row = store.read(lambda c: c.execute(
        sa.select(workers.c.hostname, workers.c.pid).where(workers.c.name == name)).first())
    return (row[0], row[1]) if row else None


def upsert_worker(store: Store, fp: Fingerprint, row: dict[str, Any]) -> None:
    """The worker's row, made or refreshed (``row`` holds every column but machine_id)."""
    def go(conn: sa.Connection) -> None:
        mid = store.machine_id(conn, fp)
        stmt = upsert_stmt(conn, workers).values(machine_id=mid, **row)
        conn.execute(stmt.on_conflict_do_update(
            index_elements=["name"], set_={k: v for k, v in row.items() if k != "name"}
            | {"machine_id": mid}))

    store.write(go)


def set_state(store: Store, name: str, state: str, job: int | None = None,
              wait: bool = True) -> None:
    store.write(lambda c: c.execute(workers.update().where(workers.c.name == name).values(
        state=state, current_job=job, last_heartbeat=time.time())), wait=wait)


async def beat(app: Any, machine: str, state: str, job: int | None) -> None:
    """The worker's heartbeat, through the queue's pool: the beat and what it is doing."""
    await app.connector.execute_query_async(
        "UPDATE fleet_workers SET last_heartbeat = %(now)s, state = %(state)s, "
        "current_job = %(job)s WHERE name = %(name)s",
        now=time.time(), state=state, job=job, name=machine)


def jobs_done(store: Store, machine: str, wait: bool = True) -> int:
    return int(store.read(lambda c: c.execute(
        sa.select(sa.func.count()).select_from(fleet_jobs)
        .where(fleet_jobs.c.machine == machine).where(fleet_jobs.c.state == "done"))
        .scalar(), wait=wait))


# -- jobs -----------------------------------------------------------------------------------------
def ensure_job_row(store: Store, job_id: int, submission: str, machine: str, argv: list[str],
                   submitted_at: float | None) -> None:
    """The fleet_jobs row of a queued job, made once by the submitter or the worker (the
    statement is fleet.conn's, which the submitter runs through psycopg)."""
    params = job_row_params(job_id, submission, machine, argv, submitted_at or time.time())
    store.write(lambda c: c.exec_driver_sql(JOB_ROW, params))


def job_state(store: Store, job_id: int) -> str | None:
    return store.read(lambda c: c.execute(
        sa.select(fleet_jobs.c.state).where(fleet_jobs.c.job_id == job_id)).scalar())


def update_job(store: Store, job_id: int, **values: Any) -> None:
    store.write(lambda c: c.execute(fleet_jobs.update().where(fleet_jobs.c.job_id == job_id)
                                    .values(**values)))


def unfinished_results(store: Store, job_id: int) -> list[tuple[int, str, str]]:
    """(id, kind, status) of a job's result sets neither complete nor abandoned."""
    return [(int(r[0]), r[1], r[2]) for r in store.read(lambda c: c.execute(
        sa.select(results.c.id, results.c.kind, results.c.status)
        .where(results.c.fleet_job == job_id).where(results.c.status != "complete")
        .where(results.c.status != "abandoned").order_by(results.c.id)).all())]


def abandon_result(store: Store, result_id: int) -> None:
    store.write(lambda c: c.execute(
        results.update().where(results.c.id == result_id).values(status="abandoned")))


def complete_results(store: Store, job_id: int) -> list[int]:
    return store.read(lambda c: [int(x) for x in c.execute(
        sa.select(results.c.id).where(results.c.fleet_job == job_id)
        .where(results.c.status == "complete").order_by(results.c.id)).scalars()])


def complete_result_ids(store: Store, submission: str) -> list[int]:
    """The complete result sets a submission produced (in result order)."""
    return store.read(lambda c: [int(x) for x in c.execute(
        sa.select(results.c.id).where(results.c.fleet_submission == submission)
        .where(results.c.status == "complete").order_by(results.c.id)).scalars()])


# -- retention ------------------------------------------------------------------------------------
_FINISHED = ("done", "failed", "cancelled")
# procrastinate's states of a job not finished: such a job is kept whatever our row says.
_UNFINISHED_QUEUE = ("todo", "doing", "aborting")


# procrastinate's states of a finished job.
_FINISHED_QUEUE = ("succeeded", "failed", "cancelled", "aborted")


def _has_queue(conn: sa.Connection) -> bool:
    return conn.dialect.name == "postgresql" and conn.execute(
        sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar() is not None


def finished_jobs_before(store: Store, before: float) -> list[int]:
    """The fleet jobs finished (done, failed, cancelled) before ``before`` (epoch seconds; a
    job that never started counts from its submission); queued and running ones are kept,
    and so is any job the queue still has as to do or doing.  With them, the queue's finished
    jobs that have no fleet_jobs row (left by an older perflab's prune) whose last event is
    before then."""
    def go(conn: sa.Connection) -> list[int]:
        q = (sa.select(fleet_jobs.c.job_id)
             .where(fleet_jobs.c.state.in_(_FINISHED),
                    sa.func.coalesce(fleet_jobs.c.finished_at, fleet_jobs.c.submitted_at)
                    < before)
             .order_by(fleet_jobs.c.job_id))
        if not _has_queue(conn):
            return [int(x) for x in conn.execute(q).scalars()]
        q = q.where(sa.text(
            "NOT EXISTS (SELECT 1 FROM procrastinate_jobs p WHERE p.id = fleet_jobs.job_id "
            "AND p.status::text IN :unfinished)").bindparams(
            sa.bindparam("unfinished", _UNFINISHED_QUEUE, expanding=True)))
        ours = [int(x) for x in conn.execute(q).scalars()]
        orphans = conn.execute(sa.text(
            "SELECT p.id FROM procrastinate_jobs p WHERE p.status::text IN :finished "
            "AND NOT EXISTS (SELECT 1 FROM fleet_jobs f WHERE f.job_id = p.id) "
            "AND COALESCE((SELECT MAX(e.at) FROM procrastinate_events e WHERE e.job_id = p.id),"
            " 'epoch'::timestamptz) < to_timestamp(:before)").bindparams(
            sa.bindparam("finished", _FINISHED_QUEUE, expanding=True), before=before)).scalars()
        return sorted({*ours, *(int(x) for x in orphans)})

    return store.read(go)


def delete_jobs(store: Store, ids: list[int]) -> None:
    """Remove these jobs: their fleet_jobs rows and the queue's own rows of them, when the
    queue has them finished (procrastinate's events of a job go with it)."""
    def go(conn: sa.Connection, chunk: list[int]) -> None:
        conn.execute(fleet_jobs.delete().where(fleet_jobs.c.job_id.in_(chunk)))
        if _has_queue(conn):
            conn.execute(sa.text(
                "DELETE FROM procrastinate_jobs WHERE id IN :ids AND status::text IN :finished"
            ).bindparams(sa.bindparam("ids", chunk, expanding=True),
                         sa.bindparam("finished", _FINISHED_QUEUE, expanding=True)))

    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        store.write(lambda c, chunk=chunk: go(c, chunk))
