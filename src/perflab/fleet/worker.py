"""``perflab worker``: a benchmark host takes the jobs addressed to it, one at a time.

- One machine name, one live worker: the worker holds a PostgreSQL advisory lock on its name for
  its whole life (the server drops it the moment the process dies, even by SIGKILL).  So a job
  left ``doing`` in this machine's queue when a worker starts belongs to a dead worker: it is
  handed back to the queue (procrastinate's ``retry_job``) or, after MAX_ATTEMPTS tries, failed.
- Concurrency 1 and the per-machine lock of every job: a host never measures two things at once.
  While a job runs the worker only heartbeats (a thread writing one row every few seconds).
- The verb runs as ``python -m perflab VERB ...`` with the fleet's store as PERFLAB_DB and the
  machine's name, tags and job id in the environment (fingerprint.fleet_identity), so every run
  is written as it finishes, tagged with the machine.  The child dies with the worker
  (PR_SET_PDEATHSIG): a killed worker leaves no orphan still measuring.
- A retried job never stores a run twice: a suite run continues with ``--resume`` (finished
  cells are kept, not measured again); any other verb's earlier, unfinished result set is marked
  ``abandoned`` (its runs stay in the store, out of every report) and measured afresh, since a
  comparison's configurations must be measured in one session to be interleaved.
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
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from perflab.errors import PerflabError
from perflab.storage import Store, fleet_jobs, results, workers

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


@contextlib.contextmanager
def name_lock(store: Store, name: str) -> Iterator[Any]:
    """Hold the machine name for the worker's life, on a connection of its own."""
    import psycopg

    from perflab.fleet.queue import conninfo

    conn = psycopg.connect(conninfo(store), autocommit=True)
    try:
        got = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))",
                           (_lock_key(name),)).fetchone()
        if not got or not got[0]:
            row = store.read(lambda c: c.execute(
                sa.select(workers.c.hostname, workers.c.pid).where(workers.c.name == name))
                .first())
            where = f" (host {row[0]}, pid {row[1]})" if row else ""
            raise PerflabError(f"a worker named {name!r} is already running{where}",
                               "stop it first, or give this one another --name")
        yield conn
    finally:
        conn.close()


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


def set_state(store: Store, name: str, state: str, job: int | None = None) -> None:
    store.write(lambda c: c.execute(workers.update().where(workers.c.name == name).values(
        state=state, current_job=job, last_heartbeat=time.time())))


class Heartbeat(threading.Thread):
    def __init__(self, store: Store, name: str, interval: float) -> None:
        super().__init__(name="perflab-heartbeat", daemon=True)
        self.store, self.worker, self.interval = store, name, interval
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            with contextlib.suppress(PerflabError):  # a missed beat is retried next time
                self.store.write(lambda c: c.execute(
                    workers.update().where(workers.c.name == self.worker)
                    .values(last_heartbeat=time.time())))


# -- recovery -------------------------------------------------------------------------------------
async def recover_orphans(app: Any, store: Store, queue: str) -> list[str]:
    """Jobs left 'doing' in this machine's queue by a dead worker: back to the queue, or failed
    after MAX_ATTEMPTS.  Only called while holding the name lock (so their worker is dead)."""
    from procrastinate import jobs as pjobs

    from perflab.fleet.queue import MAX_ATTEMPTS

    said = []
    for job in await app.job_manager.list_jobs_async(queue=queue, status="doing"):
        tried = job.attempts + 1
        if tried >= MAX_ATTEMPTS:
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
    ensure_job_row(store, job_id, submission, machine, list(argv), submitted_at)
    set_state(store, machine, "busy", job_id)
    _job_row(store, job_id, state="running", started_at=time.time(), attempts=attempt)
    try:
        outcome = _run_verb(store, job_id, argv, machine, submission, files, cur)
    except JobFailed as e:
        _job_row(store, job_id, state="failed", error=str(e), finished_at=time.time())
        cur["say"](f"job {job_id}: failed: {e}")
        raise
    except TransientJobError as e:
        final = attempt >= cur["max_attempts"]
        _job_row(store, job_id, state="failed" if final else "queued",
                 error=str(e) + ("" if final else "; retrying"), finished_at=time.time())
        cur["say"](f"job {job_id}: attempt {attempt} failed: {e}"
                   + ("" if final else "; it will be tried again"))
        raise
    finally:
        set_state(store, machine, "idle", None)
    _job_row(store, job_id, state="done", finished_at=time.time(), error=None,
             result_ids=outcome["result_ids"])
    return outcome


def _unfinished(store: Store, job_id: int) -> list[tuple[int, str, str]]:
    return store.read(lambda c: c.execute(
        sa.select(results.c.id, results.c.kind, results.c.status)
        .where(results.c.fleet_job == job_id).where(results.c.status != "complete")
        .where(results.c.status != "abandoned").order_by(results.c.id)).all())


def _run_verb(store: Store, job_id: int, argv: list[str], machine: str, submission: str,
              files: dict[str, str], cur: dict[str, Any]) -> dict[str, Any]:
    argv = list(argv)
    earlier = _unfinished(store, job_id)
    if argv[0] == "run" and earlier:
        # A suite run goes on where the lost attempt stopped: finished cells are kept.
        argv += ["--resume", str(earlier[-1][0])]
        earlier = earlier[:-1]
    for rid, _kind, status in earlier:
        store.write(lambda c, rid=rid, status=status: c.execute(
            results.update().where(results.c.id == rid).values(status="abandoned")))
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
    done = store.read(lambda c: [int(x) for x in c.execute(
        sa.select(results.c.id).where(results.c.fleet_job == job_id)
        .where(results.c.status == "complete").order_by(results.c.id)).scalars()])
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
def run_worker(db: str, name: str | None, tags: list[str], exit_when_idle: bool,
               heartbeat: float = 10.0, poll: float = 2.0, say: Any = print) -> int:
    """Serve this machine's queue until stopped (SIGINT/SIGTERM finish the running job first)
    or, with ``exit_when_idle``, until the queue is empty.  Returns the number of jobs run."""
    from procrastinate import RetryStrategy

    from perflab.fingerprint import machine_fingerprint
    from perflab.fleet.queue import (
        MAX_ATTEMPTS,
        TASK_NAME,
        check_machine_name,
        check_queue_schema,
        fleet_store,
        make_app,
        queue_name,
    )

    store = fleet_store(db)
    check_queue_schema(store)
    name = check_machine_name(name or socket.gethostname().split(".")[0])
    tags = [check_machine_name(t) for t in tags]
    os.environ["PERFLAB_MACHINE_NAME"] = name
    os.environ["PERFLAB_MACHINE_TAGS"] = ",".join(tags)
    fp = machine_fingerprint()
    queue = queue_name(name)
    log_dir = Path(tempfile.gettempdir()) / f"perflab-worker-{name}"
    log_dir.mkdir(parents=True, exist_ok=True)
    app = make_app(store)
    app.tasks[TASK_NAME].retry_strategy = RetryStrategy(
        max_attempts=MAX_ATTEMPTS, retry_exceptions=[TransientJobError])
    _CURRENT.update(store=store, name=name, tags=tags, url=store.url.replace("+psycopg", ""),
                    log_dir=str(log_dir), say=say, child=None, max_attempts=MAX_ATTEMPTS)
    ran = 0

    async def main() -> None:
        nonlocal ran
        async with app.open_async():
            for line in await recover_orphans(app, store, queue):
                say(line)
            task = asyncio.create_task(app.run_worker_async(
                queues=[queue], concurrency=1, name=name, wait=True,
                fetch_job_polling_interval=poll, abort_job_polling_interval=max(poll, 5.0),
                update_heartbeat_interval=heartbeat, stalled_worker_timeout=3 * heartbeat + 5,
                listen_notify=True, install_signal_handlers=True))
            while not task.done():
                await asyncio.wait({task}, timeout=poll)
                if task.done() or not exit_when_idle:
                    continue
                pending = [j for st in ("todo", "doing")
                           for j in await app.job_manager.list_jobs_async(queue=queue, status=st)]
                if not pending and _CURRENT.get("child") is None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        ran = store.read(lambda c: int(c.execute(
            sa.select(sa.func.count()).select_from(fleet_jobs)
            .where(fleet_jobs.c.machine == name).where(fleet_jobs.c.state == "done")).scalar()))

    with name_lock(store, name):
        announce(store, name, tags, fp)
        beat = Heartbeat(store, name, heartbeat)
        beat.start()
        say(f"worker {name} ({fp.get('hostname')}, tags: {', '.join(tags) or 'none'}) serving "
            f"queue {queue} of {store.location}")
        try:
            asyncio.run(main())
        finally:
            beat.stop_event.set()
            with contextlib.suppress(PerflabError):
                set_state(store, name, "stopped", None)
    return ran
