"""``perflab worker``: a benchmark host takes the jobs addressed to it, one at a time.

- One machine name, one live worker: the worker holds a PostgreSQL advisory lock on its name for
  its whole life (the server drops it the moment the process dies, even by SIGKILL).  So a job
  left ``doing`` in this machine's queue when a worker starts belongs to a dead worker: it is
  handed back to the queue (procrastinate's ``retry_job``) or, after MAX_ATTEMPTS tries, failed.
- Concurrency 1 and the per-machine lock of every job: a host never measures two things at once.
  While a job runs the worker only heartbeats (one row written every few seconds).
- The verb runs as ``python -m perflab VERB ...`` with the fleet's store as PERFLAB_DB and the
  machine's name, tags and job id in the environment (fingerprint.fleet_identity), so every run
  is written as it finishes, tagged with the machine.  The child dies with the worker
  (PR_SET_PDEATHSIG): a killed worker leaves no orphan still measuring.
- A retried job never stores a run twice: a suite run continues with ``--resume`` (finished
  cells are kept, not measured again); any other verb's earlier, unfinished result set is marked
  ``abandoned`` (its runs stay in the store, out of every report) and measured afresh, since a
  comparison's configurations must be measured in one session to be interleaved.
- A database outage (a server restart, a network blip) is ridden out, never a reason to fail or
  forget a job: the worker waits for the server and serves again (procrastinate's own advice
  for a worker that loses its database is a loop around it: procrastinate issues #1108,
  #1116); the job's writes wait for the server (the store rides out a lost server:
  storage.ride_out) instead of failing, and the measuring child does the same with its runs.
  The worker row's state is written by every heartbeat from what the worker is doing, so a
  write lost in an outage is put right by the next beat.  One line when the database is
  lost, one when it is back (storage.Outage).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from perflab.errors import PerflabError
from perflab.storage import (
    Outage,
    Store,
    StoreUnreachable,
    fleet_jobs,
    results,
    workers,
)

_PR_SET_PDEATHSIG = 1


class TransientJobError(Exception):
    """The job did not fail by itself (its process was killed, the store went away): retried."""


class JobFailed(Exception):
    """The verb failed on its own terms: the job ends failed with this message, not retried."""


# The worker's settings, seen by the task (procrastinate runs it in a thread of this process).
_CURRENT: dict[str, Any] = {}


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _lock_key(name: str) -> str:
    return "perflab-worker:" + name


class NameLock:
    """The machine name, held for the worker's life on a connection of its own (an advisory
    lock: the server drops it the moment the process dies).  A server restart drops it too:
    ``hold`` takes it again after an outage, and refuses if another worker took the name."""

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name
        self.conn: Any = None

    def hold(self) -> None:
        import psycopg

        from perflab.fleet.queue import client_name, conninfo

        if self.conn is not None:
            try:
                self.conn.execute("SELECT 1")
                return  # the connection (and with it the lock) survived
            except psycopg.Error:
                self.release()
        try:
            # connect_timeout: a server that does not answer (a lost route) is an outage
            # said in seconds, not a connect that holds the worker's stop for minutes.
            self.conn = psycopg.connect(conninfo(self.store), autocommit=True,
                                        application_name=client_name(self.name),
                                        connect_timeout=10)
            got = self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))",
                                    (_lock_key(self.name),)).fetchone()
        except psycopg.OperationalError as e:
            self.release()
            raise StoreUnreachable(f"cannot reach the database server of "
                                   f"{self.store.location} ({str(e).strip().splitlines()[0]})",
                                   "check that PostgreSQL is running") from e
        if not got or not got[0]:
            self.release()
            row = self.store.read(lambda c: c.execute(
                sa.select(workers.c.hostname, workers.c.pid).where(workers.c.name == self.name))
                .first())
            where = f" (host {row[0]}, pid {row[1]})" if row else ""
            raise PerflabError(f"a worker named {self.name!r} is already running{where}",
                               "stop it first, or give this one another --name")

    def release(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None


def announce(store: Store, name: str, tags: list[str], fp: dict[str, Any]) -> None:
    from perflab.storage import _insert

    now = time.time()
    row = {"name": name, "hostname": fp.get("hostname"), "fingerprint": fp, "tags": tags,
           "queue": "perflab/" + name, "pid": os.getpid(), "started_at": now,
           "last_heartbeat": now, "state": "idle", "current_job": None}

    def go(conn: sa.Connection) -> None:
        mid = store.machine_id(conn, fp)
        stmt = _insert(conn, workers).values(machine_id=mid, **row)
        conn.execute(stmt.on_conflict_do_update(
            index_elements=["name"], set_={k: v for k, v in row.items() if k != "name"}
            | {"machine_id": mid}))

    store.write(go)


def set_state(store: Store, name: str, state: str, job: int | None = None,
              wait: bool = True) -> None:
    store.write(lambda c: c.execute(workers.update().where(workers.c.name == name).values(
        state=state, current_job=job, last_heartbeat=time.time())), wait=wait)


def _doing(cur: dict[str, Any], state: str, job: int | None) -> None:
    """What the worker is doing, in memory (every heartbeat writes it) and, at once, in its row
    when the database answers (best effort: the next beat writes it anyway)."""
    cur["state"] = (state, job)
    with contextlib.suppress(PerflabError):
        set_state(cur["store"], cur["name"], state, job)


async def heartbeat_loop(app: Any, cur: dict[str, Any], interval: float,
                         outage: Outage) -> None:
    """Every ``interval`` seconds, the worker's row: the beat, and the state the worker is in
    (so a busy/idle change lost in an outage is put right by the next beat).  Through the
    queue's one pooled connection (queue.make_app): no connection of its own."""
    from perflab.fleet.queue import beat

    while True:
        await asyncio.sleep(interval)
        state, job = cur.get("state", ("idle", None))
        try:
            await beat(app, cur["name"], state, job)
        except Exception as e:
            # A missed beat is retried next time.  The database is lost only if a fresh
            # connection fails too: after an outage psycopg's pool reconnects on its own
            # backoff (1, 2, 4... s), lagging the server by seconds, and that lag is not an
            # outage of its own.
            if _lost_database(e):
                if await asyncio.to_thread(_answers, cur["store"]):
                    outage.back()
                else:
                    outage.lost(_lost_line(cur["store"], e))
        else:
            outage.back()


def _answers(store: Store) -> bool:
    """Does the server take a new connection now?  (The worker's store keeps none open.)"""
    try:
        store.read(lambda c: c.execute(sa.text("SELECT 1")), wait=False)
        return True
    except PerflabError:
        return False


# -- recovery -------------------------------------------------------------------------------------
async def recover_orphans(app: Any, store: Store, queue: str) -> list[str]:
    """Jobs left 'doing' in this machine's queue by a dead worker: back to the queue, or failed
    after MAX_ATTEMPTS.  Only called while holding the name lock (so their worker is dead)."""
    from procrastinate import jobs as pjobs

    from perflab.fleet.queue import MAX_ATTEMPTS

    said = []
    for job in await app.job_manager.list_jobs_async(queue=queue, status="doing"):
        tried = job.attempts + 1
        own = store.read(lambda c, jid=job.id: c.execute(
            sa.select(fleet_jobs.c.state).where(fleet_jobs.c.job_id == jid)).scalar())
        if own == "done":
            # The job finished and said so in perflab's table; the database went away before
            # the queue heard of it: finished there too, not measured again.
            await app.job_manager.finish_job_by_id_async(job.id, pjobs.Status.SUCCEEDED, False)
            said.append(f"job {job.id}: done before the database went away; marked done in "
                        "the queue")
        elif tried >= MAX_ATTEMPTS:
            msg = (f"the worker running it was lost {tried} times (killed or its host went "
                   "down); not tried again")
            await app.job_manager.finish_job_by_id_async(job.id, pjobs.Status.FAILED, False)
            _job_row(store, job.id, state="failed", error=msg, finished_at=time.time(),
                     attempts=tried)
            said.append(f"job {job.id}: failed ({msg})")
        else:
            await app.job_manager.retry_job_by_id_async(job.id, retry_at=_now_utc())
            _job_row(store, job.id, state="queued", attempts=tried,
                     error=f"attempt {tried} lost with its worker; retrying")
            said.append(f"job {job.id}: its worker was lost during attempt {tried}; queued again")
    return said


def _now_utc() -> Any:
    import datetime

    return datetime.datetime.now(datetime.UTC)


def _job_row(store: Store, job_id: int, **values: Any) -> None:
    store.write(lambda c: c.execute(fleet_jobs.update().where(fleet_jobs.c.job_id == job_id)
                                    .values(**values)))


# -- the task -------------------------------------------------------------------------------------
def measure_task(context: Any, argv: list[str], machine: str, submission: str,
                 files: dict[str, str], submitted_at: float | None = None) -> dict[str, Any]:
    """Run one submitted verb on this machine (procrastinate calls it in a worker thread)."""
    from perflab.fleet.queue import ensure_job_row

    cur = _CURRENT
    store: Store = cur["store"]
    job_id = int(context.job.id)
    attempt = int(context.job.attempts) + 1
    if machine != cur["name"]:  # cannot happen through the queues; refuse rather than mismeasure
        raise JobFailed(f"job {job_id} is for machine {machine}, this is {cur['name']}")

    def keep(op: Any) -> Any:
        """A write the job cannot do without: the store waits for a lost database (up to
        PERFLAB_DB_WAIT); still gone then, the attempt is transient: the queue retries it."""
        try:
            return op()
        except StoreUnreachable as e:
            raise TransientJobError(e.problem) from e

    def note(op: Any) -> None:
        """A write an error handler makes: it waits for a lost database too, and never turns
        the error the queue must see (transient or not) into another one."""
        with contextlib.suppress(PerflabError):
            op()

    keep(lambda: ensure_job_row(store, job_id, submission, machine, list(argv), submitted_at))
    _doing(cur, "busy", job_id)
    try:
        keep(lambda: _job_row(store, job_id, state="running", started_at=time.time(),
                              attempts=attempt))
        outcome = _run_verb(store, job_id, argv, machine, submission, files, cur, keep)
    except JobFailed as e:
        msg = str(e)
        note(lambda: _job_row(store, job_id, state="failed", error=msg,
                              finished_at=time.time()))
        cur["say"](f"job {job_id}: failed: {e}")
        raise
    except TransientJobError as e:
        final = attempt >= cur["max_attempts"]
        msg = str(e) + ("" if final else "; retrying")
        note(lambda: _job_row(store, job_id, state="failed" if final else "queued", error=msg,
                              finished_at=time.time()))
        cur["say"](f"job {job_id}: attempt {attempt} failed: {e}"
                   + ("" if final else "; it will be tried again"))
        raise
    finally:
        _doing(cur, "idle", None)
    keep(lambda: _job_row(store, job_id, state="done", finished_at=time.time(), error=None,
                          result_ids=outcome["result_ids"]))
    return outcome


def _unfinished(store: Store, job_id: int) -> list[tuple[int, str, str]]:
    return store.read(lambda c: c.execute(
        sa.select(results.c.id, results.c.kind, results.c.status)
        .where(results.c.fleet_job == job_id).where(results.c.status != "complete")
        .where(results.c.status != "abandoned").order_by(results.c.id)).all())


def _run_verb(store: Store, job_id: int, argv: list[str], machine: str, submission: str,
              files: dict[str, str], cur: dict[str, Any], keep: Any) -> dict[str, Any]:
    argv = list(argv)
    earlier = keep(lambda: _unfinished(store, job_id))
    if argv[0] == "run" and earlier:
        # A suite run goes on where the lost attempt stopped: finished cells are kept.
        argv += ["--resume", str(earlier[-1][0])]
        earlier = earlier[:-1]
    for rid, _kind, status in earlier:
        keep(lambda rid=rid: store.write(lambda c: c.execute(
            results.update().where(results.c.id == rid).values(status="abandoned"))))
        cur["say"](f"job {job_id}: result {rid} ({status}) of a lost attempt is marked "
                   "abandoned; measuring afresh")
    with tempfile.TemporaryDirectory(prefix=f"perflab-job{job_id}-") as tmp:
        for rel, text in files.items():
            local = Path(tmp) / Path(rel).name
            local.write_text(text)
            argv = [str(local) if a == rel else a for a in argv]
        if argv[0] == "run" and "--no-progress" not in argv:
            argv.append("--no-progress")
        env = dict(os.environ)
        env.update(PERFLAB_DB=cur["url"], PERFLAB_MACHINE_NAME=machine,
                   PERFLAB_MACHINE_TAGS=",".join(cur["tags"]), PERFLAB_FLEET_JOB=str(job_id),
                   PERFLAB_FLEET_SUBMISSION=submission, NO_COLOR="1", COLUMNS="160")
        log_path = Path(cur["log_dir"]) / f"job-{job_id}.log"
        cur["say"](f"job {job_id}: perflab {' '.join(argv)} (log {log_path})")
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "perflab", *argv], env=env,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    preexec_fn=_set_pdeathsig, cwd=tmp)
            cur["child"] = proc
            try:
                code = proc.wait()
            finally:
                cur["child"] = None
    done = keep(lambda: store.read(lambda c: [int(x) for x in c.execute(
        sa.select(results.c.id).where(results.c.fleet_job == job_id)
        .where(results.c.status == "complete").order_by(results.c.id)).scalars()]))
    if code == 0 or (code == 1 and argv[0] == "compare" and done):
        # compare --fail-on-regression exits 1 after a complete measurement: a finding, not a
        # failure of the job.
        cur["say"](f"job {job_id}: done, results {done}")
        return {"exit_code": code, "result_ids": done}
    tail = _error_line(log_path)
    if code < 0:
        raise TransientJobError(f"perflab {argv[0]} was killed by signal {-code}: {tail}")
    if "cannot reach the database server" in tail:
        raise TransientJobError(tail)
    raise JobFailed(f"perflab {argv[0]} exited with {code}: {tail}")


def _error_line(log_path: Path) -> str:
    """The line that says what went wrong (perflab's one-line error), else the log's last."""
    try:
        lines = [ln.strip() for ln in log_path.read_text(errors="replace").splitlines()
                 if ln.strip()]
    except OSError:
        return "(no log)"
    for ln in reversed(lines[-200:]):
        if ln.startswith("perflab:") or "Error" in ln:
            return ln
    return lines[-1] if lines else "(no output)"


# -- the loop -------------------------------------------------------------------------------------
# How long an idle worker asked to stop waits for its queue loop to end by itself before it is
# cut short.  A stop is seen by the loop at its next step, but a step may be a wait that does
# not look at the stop: a pool opening again after a lost connection (psycopg_pool waits up to
# 30 s for it), procrastinate's goodbye to the queue (up to POOL_TIMEOUT per query on a pool
# that cannot connect).  Those waits made an idle worker take 20-60 s to stop after SIGTERM.
STOP_GRACE = 3.0


def _idle_now(cur: dict[str, Any]) -> bool:
    return cur.get("child") is None and cur.get("state", ("idle", None))[0] == "idle"


async def stop_in_time(life: asyncio.Task[None], stop: asyncio.Event,
                       cur: dict[str, Any] | None = None) -> None:
    """Await the worker's ``life`` until it ends or, once ``stop`` is set, while it has a job
    to finish: a running job is waited for (SIGTERM finishes it first); an idle worker's life
    gets STOP_GRACE seconds, then is cancelled, again every STOP_GRACE seconds until it ends
    (each cancel interrupts the wait it is in, cleanup waits included)."""
    cur = _CURRENT if cur is None else cur
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({life, stopping}, return_when=asyncio.FIRST_COMPLETED)
        while not life.done():
            await asyncio.wait({life}, timeout=STOP_GRACE)
            if not life.done() and _idle_now(cur):
                life.cancel()
    finally:
        stopping.cancel()
    if not life.cancelled():
        life.result()  # the life's own error, if it ended on one
def _lost_line(store: Store, e: BaseException) -> str:
    """What a lost database error says, in one line (its root cause's first line)."""
    root: BaseException = e
    while root.__cause__ is not None:
        root = root.__cause__
    text = (str(root).strip().splitlines() or [type(root).__name__])[0]
    return f"cannot reach the database server of {store.location} ({text})"


def _lost_database(e: BaseException) -> bool:
    """Did this error come from the database going away (procrastinate wraps psycopg's)?"""
    import psycopg

    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, psycopg.OperationalError | StoreUnreachable):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def run_worker(db: str, name: str | None, tags: list[str], exit_when_idle: bool,
               heartbeat: float = 10.0, poll: float = 2.0, say: Any = print) -> int | None:
    """Serve this machine's queue until stopped (SIGINT/SIGTERM finish the running job first)
    or, with ``exit_when_idle``, until the queue is empty.  A lost database is waited for, not
    a reason to stop.  Returns the number of jobs done on this machine (None: the database
    was away as it stopped)."""
    from procrastinate import RetryStrategy

    from perflab.fingerprint import machine_fingerprint
    from perflab.fleet.queue import (
        MAX_ATTEMPTS,
        TASK_NAME,
        check_machine_name,
        check_queue_schema,
        client_name,
        fleet_store,
        make_app,
        queue_name,
    )

    name = check_machine_name(name or socket.gethostname().split(".")[0])
    store = fleet_store(db, client=client_name(name))
    check_queue_schema(store)
    tags = [check_machine_name(t) for t in tags]
    os.environ["PERFLAB_MACHINE_NAME"] = name
    os.environ["PERFLAB_MACHINE_TAGS"] = ",".join(tags)
    fp = machine_fingerprint()
    queue = queue_name(name)
    log_dir = Path(tempfile.gettempdir()) / f"perflab-worker-{name}"
    log_dir.mkdir(parents=True, exist_ok=True)
    app = make_app(store, worker=name)
    app.tasks[TASK_NAME].retry_strategy = RetryStrategy(
        max_attempts=MAX_ATTEMPTS, retry_exceptions=[TransientJobError])
    outage = Outage(say)
    store.outage = outage  # one line per outage, whoever notices it (job, heartbeat, loop)
    _CURRENT.update(store=store, name=name, tags=tags, url=store.url.replace("+psycopg", ""),
                    log_dir=str(log_dir), say=say, child=None, max_attempts=MAX_ATTEMPTS,
                    outage=outage, state=("idle", None))
    lock = NameLock(store, name)

    async def idle() -> bool:
        if _CURRENT.get("child") is not None:
            return False
        return not [j for st in ("todo", "doing")
                    for j in await app.job_manager.list_jobs_async(queue=queue, status=st)]

    async def serve(stop: asyncio.Event) -> bool:
        """One life of procrastinate's worker on a freshly opened pool.  True: done (stopped,
        or idle with --exit-when-idle); False: procrastinate's worker ended by itself (one of
        its side tasks lost the database), so serve again once the database answers."""
        async with app.open_async():
            for line in await recover_orphans(app, store, queue):
                say(line)
            beating = asyncio.create_task(heartbeat_loop(app, _CURRENT, heartbeat, outage))
            task = asyncio.create_task(app.run_worker_async(
                queues=[queue], concurrency=1, name=name, wait=True,
                fetch_job_polling_interval=poll, abort_job_polling_interval=max(poll, 5.0),
                update_heartbeat_interval=heartbeat, stalled_worker_timeout=3 * heartbeat + 5,
                listen_notify=False, install_signal_handlers=False))
            try:
                while not task.done():
                    stopping = asyncio.ensure_future(stop.wait())
                    await asyncio.wait({task, stopping}, timeout=poll,
                                       return_when=asyncio.FIRST_COMPLETED)
                    stopping.cancel()
                    if task.done():
                        break
                    if stop.is_set() or (exit_when_idle and await idle()):
                        task.cancel()  # procrastinate stops gracefully: the job ends first
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                        return True
                task.result()  # procrastinate's own error, if it ended on one
                return False
            finally:
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
                beating.cancel()
                with contextlib.suppress(BaseException):
                    await beating

    async def wait_for_database(stop: asyncio.Event) -> None:
        delay = 0.2
        while not stop.is_set():
            try:
                await asyncio.to_thread(lock.hold)
                outage.back()
                return
            except StoreUnreachable as e:
                outage.lost(e.problem)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            delay = min(delay * 2, 5.0)

    async def lives(stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if await serve(stop):
                    break
            except Exception as e:
                if not _lost_database(e):
                    raise
            # The database went away under procrastinate's worker (no job is running now: a
            # running job is waited for before its worker ends): wait for the database, hold
            # the machine's name again (the restart dropped the lock), serve again.
            await wait_for_database(stop)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop_in_time(asyncio.create_task(lives(stop)), stop)

    lock.hold()
    try:
        announce(store, name, tags, fp)
        say(f"worker {name} ({fp.get('hostname')}, tags: {', '.join(tags) or 'none'}) serving "
            f"queue {queue} of {store.location}")
        asyncio.run(main())
        try:  # a stop does not wait for a lost database, for a count
            return int(store.read(lambda c: c.execute(
                sa.select(sa.func.count()).select_from(fleet_jobs)
                .where(fleet_jobs.c.machine == name).where(fleet_jobs.c.state == "done"))
                .scalar(), wait=False))
        except PerflabError:
            return None
    finally:
        with contextlib.suppress(PerflabError):
            set_state(store, name, "stopped", None, wait=False)  # a stop does not wait
        lock.release()
