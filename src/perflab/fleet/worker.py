"""``perflab worker``: a benchmark host takes the jobs addressed to it, one at a time.

- One machine name, one live worker: the worker holds a PostgreSQL advisory lock on its name for
  its whole life, on the one connection of its queue's pool (NameLock; the server drops it the
  moment the process dies, even by SIGKILL), so an idle worker holds 1 connection.  So a job
  left ``doing`` in this machine's queue when a worker starts belongs to a dead worker: it is
  handed back to the queue (procrastinate's ``retry_job``) or, after MAX_ATTEMPTS tries, failed.
- Concurrency 1 and the per-machine lock of every job: a host never measures two things at once.
  While a job runs the worker only heartbeats (one row written every few seconds).
- The verb runs as ``python -m perflab --fleet-job FILE VERB ...`` with the fleet's store as
  PERFLAB_DB; FILE holds the job's context (perflab.jobcontext.JobContext: the machine's name
  and tags, the job and submission), which the verb's fingerprint and store take, so every run
  is written as it finishes, tagged with the machine.  The child dies with the worker
  (PR_SET_PDEATHSIG): a killed worker leaves no orphan still measuring.
- The verb's exit code says how it ended: 0 done; errors.EXIT_STORE_UNREACHABLE the database
  was lost for longer than it waits (transient: retried); a signal (transient); anything else
  a failure of the job, ended with the error line of its log.
- SIGTERM/SIGINT stop a busy worker within seconds: the verb is interrupted (SIGINT: every run
  it stored is kept; after JOB_STOP_GRACE seconds its process group is killed) and the job goes
  back to the queue, resumed by the machine's next worker (a suite run where it stopped).
- A retried job never stores a run twice: a suite run continues with ``--resume`` (finished
  cells are kept, not measured again); any other verb's earlier, unfinished result set is marked
  ``abandoned`` (its runs stay in the store, out of every report) and measured afresh, since a
  comparison's configurations must be measured in one session to be interleaved.
- A database outage (a server restart, a network blip) is ridden out, never a reason to fail or
  forget a job: the worker waits for the server and serves again (procrastinate's own advice
  for a worker that loses its database is a loop around it: procrastinate/procrastinate#1108
  and procrastinate/procrastinate#1116); the job's writes wait for the server (the store
  rides out a lost server: storefaults.ride_out) instead of failing, and the measuring child
  does the same with its runs.
  The worker row's state is written by every heartbeat from what the worker is doing, so a
  write lost in an outage is put right by the next beat.  One line when the database is
  lost, one when it is back (storefaults.Outage).
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
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import platformdirs

from perflab.errors import EXIT_STORE_UNREACHABLE, PerflabError
from perflab.fleet import store as fstore
from perflab.jobcontext import OPTION as JOB_OPTION
from perflab.jobcontext import JobContext
from perflab.model import Fingerprint
from perflab.private import append_private, open_private_dir
from perflab.storage import Store
from perflab.storefaults import Outage, StoreUnreachable, backoff, outage_limit

_PR_SET_PDEATHSIG = 1


class TransientJobError(Exception):
    """The job did not fail by itself (its process was killed, the store went away): retried."""


class JobStopped(TransientJobError):
    """The worker was asked to stop while the job ran: the verb was interrupted (every run it
    stored kept) and the job goes back to the queue, whatever its tries."""


class JobFailed(Exception):
    """The verb failed on its own terms: the job ends failed with this message, not retried."""


# How long a job's verb has to stop after SIGINT when its worker is asked to stop (perflab
# stops a run within a second and keeps every finished one); then its process group is killed.
JOB_STOP_GRACE = 8.0


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker is, fixed for its life."""
    store: Store
    name: str
    tags: tuple[str, ...]
    url: str  # the store's URL as the jobs' verbs take it (PERFLAB_DB)
    log_dir: Path
    say: Callable[[str], None]

    def job_context(self, job: int | None = None, submission: str | None = None) -> JobContext:
        return JobContext(machine=self.name, tags=self.tags, job=job, submission=submission)


class Activity:
    """What the worker is doing, shared by its event loop (the heartbeat, a stop) and the thread
    procrastinate runs a job in, under a lock: the state the heartbeat writes, the process of
    the running verb, and whether the worker was asked to stop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: tuple[str, int | None] = ("idle", None)
        self._child: subprocess.Popen[bytes] | None = None
        self.stopping = threading.Event()

    @property
    def state(self) -> tuple[str, int | None]:
        with self._lock:
            return self._state

    def set_state(self, state: str, job: int | None) -> None:
        with self._lock:
            self._state = (state, job)

    def set_child(self, child: subprocess.Popen[bytes] | None) -> None:
        with self._lock:
            self._child = child

    def idle(self) -> bool:
        with self._lock:
            return self._child is None and self._state[0] == "idle"


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _lock_key(name: str) -> str:
    return "perflab-worker:" + name


class NameLock:
    """The machine name, held for the worker's life as a session advisory lock on the ONE
    connection of its queue's pool (queue.make_app): the server drops it the moment the process
    dies, even by SIGKILL.  The pool calls ``take`` on every connection it opens, its first and
    any that replaces one lost (a server restart, a blip), so the lock is taken again with the
    connection; the pool never recycles its connection on its own (queue.NEVER), and every
    heartbeat checks the lock on it (pg_locks) and takes it again if it is gone.  Another worker
    holding the name: ``verify`` refuses in one line, at start and at every beat.  So an idle
    worker holds 1 connection (a dedicated lock connection made it 2)."""

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name
        self.held: bool | None = None  # None: never tried; False: another worker has it

    async def take(self, conn: Any) -> None:
        self.held = await fstore.take_name_lock(conn, _lock_key(self.name))

    async def verify(self, app: Any) -> None:
        """Check the lock on the pool's connection (taking it again if its session lost it);
        refuse when another worker holds the name."""
        self.held = await fstore.name_lock_held(app, _lock_key(self.name))
        if not self.held:
            row = None
            with contextlib.suppress(PerflabError):  # the refusal, even without its details
                row = await asyncio.to_thread(fstore.worker_host, self.store, self.name)
            where = f" (host {row[0]}, pid {row[1]})" if row else ""
            raise PerflabError(f"a worker named {self.name!r} is already running{where}",
                               "stop it first, or give this one another --name")


def announce(store: Store, name: str, tags: list[str], fp: Fingerprint) -> None:
    now = time.time()
    fstore.upsert_worker(store, fp, {
        "name": name, "hostname": fp.hostname, "fingerprint": fp.to_json(), "tags": tags,
        "queue": "perflab/" + name, "pid": os.getpid(), "started_at": now,
        "last_heartbeat": now, "state": "idle", "current_job": None})


async def heartbeat_loop(app: Any, settings: WorkerSettings, activity: Activity,
                         interval: float, outage: Outage, lock: NameLock) -> None:
    """Every ``interval`` seconds, the worker's row: the beat, and the state the worker is in
    (so a busy/idle change lost in an outage is put right by the next beat), and the name lock
    checked.  Through the queue's one pooled connection (queue.make_app): no connection of its
    own.  Ends with the one-line refusal when another worker took the name."""
    while True:
        await asyncio.sleep(interval)
        state, job = activity.state
        try:
            await fstore.beat(app, settings.name, state, job)
            await lock.verify(app)
        except PerflabError:
            raise  # another worker holds the name (verify): this one stops with that line
        except Exception as e:
            # A missed beat is retried next time.  The database is lost only if a fresh
            # connection fails too: after an outage psycopg's pool reconnects on its own
            # backoff (1, 2, 4... s), lagging the server by seconds, and that lag is not an
            # outage of its own.
            if _lost_database(e):
                if await asyncio.to_thread(fstore.ping, settings.store):
                    outage.back()
                else:
                    outage.lost(_lost_line(settings.store, e))
        else:
            outage.back()


# -- the queue's word on a job --------------------------------------------------------------------
async def ride_out_async(op: Callable[[], Awaitable[Any]], limit: float | None = None,
                         first: Callable[[BaseException], None] | None = None) -> Any:
    """``await op()``, again with backoff (0.2 s doubling to 5 s) while it fails for want of the
    database (a connection not had in time from the one-connection pool: PoolTimeout; the
    server away), for up to ``limit`` seconds (default storefaults.outage_limit()); then its error.
    ``first`` hears of the first such failure.  storefaults.ride_out's twin for the event loop
    (that one sleeps in the thread it blocks)."""
    deadline = time.monotonic() + (outage_limit() if limit is None else limit)
    delays = backoff()
    while True:
        try:
            return await op()
        except Exception as e:
            delay = next(delays)
            if not _lost_database(e) or time.monotonic() + delay > deadline:
                raise
            if first is not None:
                first(e)
                first = None
        await asyncio.sleep(delay)


def keep_outcomes(app: Any, say: Callable[[str], None]) -> None:
    """procrastinate writes a job's outcome to the queue once (its worker's finish_job, or
    retry_job), and a failure of that write only ends the job's task: the job stays 'doing'
    for good, so the machine's lock stays taken (no later job of the machine runs) and an
    --exit-when-idle worker never finds its queue empty (up until SIGTERM, as the heartbeat's
    lost cancel did: end_task).  Under load the write can fail for want of the pool's one
    connection within POOL_TIMEOUT (psycopg_pool's PoolTimeout, seen on procrastinate's own
    heartbeat query at nice 19 beside two busy loops) while the database is fine.  So the
    worker's App writes an outcome again until it is written (ride_out_async); a stop cancels
    the wait, and the job left 'doing' is put right by the next worker's
    recover_orphans (it reads perflab's row).  One line when a first write fails."""
    from procrastinate import manager

    def failed(job: Any) -> Callable[[BaseException], None]:
        return lambda e: say(f"job {job.id}: the queue did not take its outcome "
                             f"({_first_line(e)}); writing it again")

    class KeepingJobManager(manager.JobManager):
        async def finish_job(self, job: Any, *args: Any, **kwargs: Any) -> None:
            await ride_out_async(lambda: super(KeepingJobManager, self).finish_job(
                job, *args, **kwargs), first=failed(job))

        async def retry_job(self, job: Any, *args: Any, **kwargs: Any) -> None:
            await ride_out_async(lambda: super(KeepingJobManager, self).retry_job(
                job, *args, **kwargs), first=failed(job))

    app.job_manager = KeepingJobManager(app.job_manager.connector)


# -- recovery -------------------------------------------------------------------------------------
async def recover_orphans(app: Any, store: Store, queue: str) -> list[str]:
    """Jobs left 'doing' in this machine's queue by a dead worker: back to the queue, or failed
    after MAX_ATTEMPTS.  Only called while holding the name lock (so their worker is dead)."""
    from procrastinate import jobs as pjobs

    from perflab.fleet.queue import MAX_ATTEMPTS

    said = []
    for job in await app.job_manager.list_jobs_async(queue=queue, status="doing"):
        tried = job.attempts + 1
        own = fstore.job_state(store, job.id)
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
            fstore.update_job(store, job.id, state="failed", error=msg,
                              finished_at=time.time(), attempts=tried)
            said.append(f"job {job.id}: failed ({msg})")
        else:
            await app.job_manager.retry_job_by_id_async(job.id, retry_at=_now_utc())
            fstore.update_job(store, job.id, state="queued", attempts=tried,
                              error=f"attempt {tried} lost with its worker; retrying")
            said.append(f"job {job.id}: its worker was lost during attempt {tried}; queued again")
    return said


def _now_utc() -> Any:
    import datetime

    return datetime.datetime.now(datetime.UTC)


# -- the task -------------------------------------------------------------------------------------
def retry_policy(max_attempts: int) -> Any:
    """The queue's decision after a failed try (procrastinate asks its task's strategy): a
    stopped job goes back at once, whatever its tries; a transient failure is tried again, up
    to ``max_attempts`` tries in all; a failure of the job is final."""
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

    class Policy(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException,
                               job: Any) -> RetryDecision | None:
            if isinstance(exception, JobStopped) or (
                    isinstance(exception, TransientJobError)
                    and int(job.attempts) + 1 < max_attempts):
                return RetryDecision(retry_in={"seconds": 0})
            return None

    return Policy()


class JobRunner:
    """The worker's one task: run a submitted verb on this machine (procrastinate calls
    ``measure`` in a thread of the worker's process)."""

    def __init__(self, settings: WorkerSettings, activity: Activity, max_attempts: int) -> None:
        self.settings, self.activity, self.max_attempts = settings, activity, max_attempts

    def doing(self, state: str, job: int | None) -> None:
        """What the worker is doing, in memory (every heartbeat writes it) and, at once, in its
        row when the database answers (best effort: the next beat writes it anyway)."""
        self.activity.set_state(state, job)
        with contextlib.suppress(PerflabError):
            fstore.set_state(self.settings.store, self.settings.name, state, job)

    def measure(self, context: Any, argv: list[str], machine: str, submission: str,
                files: dict[str, str], submitted_at: float | None = None) -> dict[str, Any]:
        """Run one submitted verb on this machine; its outcome in perflab's job row."""
        store, say = self.settings.store, self.settings.say
        job_id = int(context.job.id)
        attempt = int(context.job.attempts) + 1
        if machine != self.settings.name:  # not through the queues; refuse, not mismeasure
            raise JobFailed(f"job {job_id} is for machine {machine}, this is "
                            f"{self.settings.name}")
        keep(lambda: fstore.ensure_job_row(store, job_id, submission, machine, list(argv),
                                           submitted_at))
        self.doing("busy", job_id)
        try:
            keep(lambda: fstore.update_job(store, job_id, state="running",
                                           started_at=time.time(), attempts=attempt))
            outcome = self.run_verb(job_id, argv, submission, files)
        except JobFailed as e:
            msg = str(e)
            note(lambda: fstore.update_job(store, job_id, state="failed", error=msg,
                                           finished_at=time.time()))
            say(f"job {job_id}: failed: {e}")
            raise
        except TransientJobError as e:
            again = isinstance(e, JobStopped) or attempt < self.max_attempts
            msg = str(e) + ("; it goes on when the machine's worker is back"
                            if isinstance(e, JobStopped) else "; retrying" if again else "")
            note(lambda: fstore.update_job(store, job_id, state="queued" if again else "failed",
                                           error=msg, finished_at=time.time()))
            say(f"job {job_id}: attempt {attempt} " + (
                f"stopped: {e}; queued again" if isinstance(e, JobStopped) else
                f"failed: {e}" + ("; it will be tried again" if again else "")))
            raise
        finally:
            self.doing("idle", None)
        keep(lambda: fstore.update_job(store, job_id, state="done", finished_at=time.time(),
                                       error=None, result_ids=outcome["result_ids"]))
        return outcome

    def run_verb(self, job_id: int, argv: list[str], submission: str,
                 files: dict[str, str]) -> dict[str, Any]:
        store, say = self.settings.store, self.settings.say
        argv = list(argv)
        earlier = keep(lambda: fstore.unfinished_results(store, job_id))
        if argv[0] == "run" and earlier:
            # A suite run goes on where the lost attempt stopped: finished cells are kept.
            argv += ["--resume", str(earlier[-1][0])]
            earlier = earlier[:-1]
        for rid, _kind, status in earlier:
            keep(lambda rid=rid: fstore.abandon_result(store, rid))
            say(f"job {job_id}: result {rid} ({status}) of a lost attempt is marked "
                "abandoned; measuring afresh")
        with tempfile.TemporaryDirectory(prefix=f"perflab-job{job_id}-") as tmp:
            for rel, text in files.items():
                local = Path(tmp) / Path(rel).name
                local.write_text(text)
                argv = [str(local) if a == rel else a for a in argv]
            if argv[0] == "run" and "--no-progress" not in argv:
                argv.append("--no-progress")
            ctx = self.settings.job_context(job_id, submission).write(Path(tmp) / "job.json")
            log_path = self.settings.log_dir / f"job-{job_id}.log"
            say(f"job {job_id}: perflab {' '.join(argv)} (log {log_path})")
            with _job_log(say, log_path) as log:
                code = self.run_child([sys.executable, "-m", "perflab", JOB_OPTION, str(ctx),
                                       *argv], log, Path(tmp))
        done = keep(lambda: fstore.complete_results(store, job_id))
        ending = judge_exit(argv[0], code, bool(done), self.activity.stopping.is_set())
        if ending is None:
            say(f"job {job_id}: done, results {done}")
            return {"exit_code": code, "result_ids": done}
        if ending is JobStopped:
            raise JobStopped(f"the worker was asked to stop; perflab {argv[0]} ended with "
                             f"{code}, every run it stored is kept")
        tail = _error_line(log_path)
        if code < 0:
            raise ending(f"perflab {argv[0]} was killed by signal {-code}: {tail}")
        raise ending(tail if ending is TransientJobError else
                     f"perflab {argv[0]} exited with {code}: {tail}")

    def run_child(self, argv: list[str], log: BinaryIO, cwd: Path) -> int:
        """Run the verb's process to its end and return its exit code; when the worker is asked
        to stop, interrupt it (SIGINT, as Ctrl-C: it keeps every finished run) and, after
        JOB_STOP_GRACE seconds, kill its process group."""
        env = {**os.environ, "PERFLAB_DB": self.settings.url, "NO_COLOR": "1", "COLUMNS": "160"}
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                preexec_fn=_set_pdeathsig, cwd=cwd, start_new_session=True)
        self.activity.set_child(proc)
        try:
            while True:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    return proc.wait(timeout=0.2)
                if self.activity.stopping.is_set():
                    return _interrupt(proc)
        finally:
            self.activity.set_child(None)


def judge_exit(verb: str, code: int, complete: bool,
               stopping: bool) -> type[Exception] | None:
    """How a job's verb ended, from its exit code: None done (0; or 1 from ``compare`` after
    a complete measurement: --fail-on-regression's finding, not a failure of the job);
    JobStopped when the worker was asked to stop and it did not end done; TransientJobError
    for a signal or errors.EXIT_STORE_UNREACHABLE (the database lost for longer than the verb
    waits: tried again); JobFailed for any other code."""
    if code == 0 or (code == 1 and verb == "compare" and complete):
        return None
    if stopping:
        return JobStopped
    if code < 0 or code == EXIT_STORE_UNREACHABLE:
        return TransientJobError
    return JobFailed


def keep(op: Callable[[], Any]) -> Any:
    """A write the job cannot do without: the store waits for a lost database (up to
    PERFLAB_DB_WAIT); still gone then, the attempt is transient: the queue retries it."""
    try:
        return op()
    except StoreUnreachable as e:
        raise TransientJobError(e.problem) from e


def note(op: Callable[[], Any]) -> None:
    """A write an error handler makes: it waits for a lost database too, and never turns the
    error the queue must see (transient or not) into another one."""
    with contextlib.suppress(PerflabError):
        op()


def _interrupt(proc: subprocess.Popen[bytes]) -> int:
    """SIGINT to the verb's process, SIGKILL to its process group JOB_STOP_GRACE seconds later
    if it has not ended; its exit code."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=JOB_STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


LOG_DIR_WHAT = "the worker's job log directory"


def worker_log_dir(name: str) -> Path:
    """Where the worker named ``name`` writes its job logs: in perflab's state directory
    ($XDG_STATE_HOME/perflab, by default ~/.local/state/perflab), private to the user."""
    return Path(platformdirs.user_state_dir("perflab")) / f"worker-{name}"


def _log_dir_fix(log_dir: Path) -> str:
    return (f"remove {log_dir} (perflab makes it again, private), or set XDG_STATE_HOME to a "
            "directory of yours that no one else can write")


@contextlib.contextmanager
def _job_log(say: Callable[[str], None], path: Path) -> Iterator[BinaryIO]:
    """The job's log, opened for appending in the worker's private log directory (checked
    again for each job) without following a link; a link or special file found under its
    name is moved aside and said."""
    dir_fd = open_private_dir(path.parent, LOG_DIR_WHAT, _log_dir_fix(path.parent))
    try:
        fd, moved = append_private(dir_fd, path.name)
    finally:
        os.close(dir_fd)
    if moved:
        say(f"job log {moved}")
    with os.fdopen(fd, "ab") as log:
        yield log


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


async def end_task(t: asyncio.Task[Any], again: Callable[[], bool] = lambda: True,
                   every: float = STOP_GRACE) -> None:
    """Cancel ``t`` and wait for it to end, cancelling it again every ``every`` seconds while
    ``again()`` says so.  One cancellation can be lost: psycopg_pool waits for a connection in
    asyncio.wait_for, which on Python 3.11 returns the connection instead of raising when the
    cancel lands as the connection is handed over, and the task goes on (its next await is a
    new wait).  The heartbeat, cancelled as it waited for the pool's one connection, beat on,
    so the worker's `await` of it never returned: an --exit-when-idle worker done with its
    queue stayed up, beating, until SIGTERM (13 minutes seen at load 7; reproduced at nice 19
    beside two busy loops).  procrastinate cancels its own side tasks again the same way
    (utils.cancel_and_capture_errors) but gives up after 5 s; this does not give up."""
    t.cancel()
    while not t.done():
        await asyncio.wait({t}, timeout=every)
        if not t.done() and again():
            t.cancel()


async def stop_in_time(life: asyncio.Task[None], stop: asyncio.Event,
                       activity: Activity) -> None:
    """Await the worker's ``life`` until it ends or, once ``stop`` is set, while it has a job
    to end: a running job is interrupted (``activity.stopping``: its verb stops within
    JOB_STOP_GRACE seconds, keeping its runs, and the job goes back to the queue); an idle
    worker's life gets STOP_GRACE seconds, then is cancelled, again every STOP_GRACE seconds
    until it ends (each cancel interrupts the wait it is in, cleanup waits included)."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({life, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set():
            activity.stopping.set()
        while not life.done():
            await asyncio.wait({life}, timeout=STOP_GRACE)
            if not life.done() and activity.idle():
                life.cancel()
    finally:
        stopping.cancel()
    if not life.cancelled():
        life.result()  # the life's own error, if it ended on one


def _first_line(e: BaseException) -> str:
    """An error's root cause's first line."""
    root: BaseException = e
    while root.__cause__ is not None:
        root = root.__cause__
    return (str(root).strip().splitlines() or [type(root).__name__])[0]


def _lost_line(store: Store, e: BaseException) -> str:
    """What a lost database error says, in one line (its root cause's first line)."""
    return f"cannot reach the database server of {store.location} ({_first_line(e)})"


def _lost_database(e: BaseException) -> bool:
    """Did this error come from the database going away (procrastinate wraps psycopg's)?"""
    import psycopg

    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, psycopg.OperationalError | StoreUnreachable):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@dataclass(frozen=True)
class Pace:
    """A worker's pace: its row's heartbeat every ``heartbeat`` s, the queue polled every
    ``poll`` s, and whether it stops once the queue is empty (``exit_when_idle``)."""
    heartbeat: float
    poll: float
    exit_when_idle: bool


class _Life:
    """A worker's loop around procrastinate's: serve the machine's queue, ride out a lost
    database, stop in time (run_worker sets it up)."""

    def __init__(self, app: Any, runner: JobRunner, lock: NameLock, outage: Outage, pace: Pace,
                 hello: Any) -> None:
        from perflab.fleet.queue import queue_name

        self.app, self.lock, self.outage = app, lock, outage
        self.settings, self.activity = runner.settings, runner.activity
        self.store, self.name, self.say = (self.settings.store, self.settings.name,
                                           self.settings.say)
        self.hello: Any = hello  # the worker's row and first line, once it holds its name
        self.queue = queue_name(self.name)
        self.heartbeat, self.poll = pace.heartbeat, pace.poll
        self.exit_when_idle = pace.exit_when_idle

    async def idle(self) -> bool:
        if not self.activity.idle():
            return False
        return not [j for st in ("todo", "doing")
                    for j in await self.app.job_manager.list_jobs_async(queue=self.queue,
                                                                        status=st)]

    def _procrastinate(self) -> Any:
        hb = self.heartbeat
        return self.app.run_worker_async(
            queues=[self.queue], concurrency=1, name=self.name, wait=True,
            fetch_job_polling_interval=self.poll,
            abort_job_polling_interval=max(self.poll, 5.0), update_heartbeat_interval=hb,
            stalled_worker_timeout=3 * hb + 5, listen_notify=False,
            install_signal_handlers=False)

    async def serve(self, stop: asyncio.Event) -> bool:
        """One life of procrastinate's worker on a freshly opened pool.  True: done (stopped,
        or idle with --exit-when-idle); False: procrastinate's worker ended by itself (one of
        its side tasks lost the database), so serve again once the database answers."""
        async with self.app.open_async():
            await self.lock.verify(self.app)  # another worker has the name: refused here
            if self.hello is not None:
                await asyncio.to_thread(self.hello)
                self.hello = None
            for line in await recover_orphans(self.app, self.store, self.queue):
                self.say(line)
            beating = asyncio.create_task(heartbeat_loop(
                self.app, self.settings, self.activity, self.heartbeat, self.outage, self.lock))
            task = asyncio.create_task(self._procrastinate())
            try:
                while not task.done():
                    stopping = asyncio.ensure_future(stop.wait())
                    await asyncio.wait({task, stopping, beating}, timeout=self.poll,
                                       return_when=asyncio.FIRST_COMPLETED)
                    stopping.cancel()
                    if beating.done():
                        beating.result()  # the name taken by another worker: stop (finally)
                    if task.done():
                        break
                    if stop.is_set() or (self.exit_when_idle and await self.idle()):
                        # procrastinate stops gracefully: a running job ends first (a stop
                        # interrupts it: stop_in_time)
                        await end_task(task, again=self.activity.idle)
                        with contextlib.suppress(asyncio.CancelledError):
                            task.result()  # procrastinate's own error, if it ended on one
                        return True
                task.result()  # procrastinate's own error, if it ended on one
                return False
            finally:
                try:  # the heartbeat ends even when this wait is cut short (a stop's cancel)
                    await end_task(task, again=self.activity.idle)
                finally:
                    await end_task(beating)
                for t in (task, beating):
                    if not t.cancelled():
                        t.exception()  # retrieved: it was said, or the loop raised it

    async def wait_for_database(self, stop: asyncio.Event) -> None:
        delays = backoff()
        while not stop.is_set():
            try:
                await asyncio.to_thread(fstore.reach, self.store)
                self.outage.back()
                return
            except StoreUnreachable as e:
                self.outage.lost(e.problem)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), next(delays))

    async def lives(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if await self.serve(stop):
                    break
            except Exception as e:
                if not _lost_database(e):
                    raise
            # The database went away under procrastinate's worker (no job is running now: a
            # running job is waited for before its worker ends): wait for the database, serve
            # again (the new pool's connection takes the machine's name lock again).
            await self.wait_for_database(stop)

    async def main(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop_in_time(asyncio.create_task(self.lives(stop)), stop, self.activity)


def _setup(db: str, name: str | None, tags: list[str], say: Any,
           ) -> tuple[JobRunner, Fingerprint, Any, Outage, NameLock]:
    """The worker's job runner (its settings and activity), fingerprint, procrastinate App
    (the runner's ``measure`` its task), outage voice and name lock (taken by the App's pool
    on its connection)."""
    from perflab.fingerprint import machine_fingerprint
    from perflab.fleet.queue import (
        MAX_ATTEMPTS,
        TASK_NAME,
        check_machine_name,
        check_queue_schema,
        client_name,
        conninfo,
        fleet_store,
        make_app,
    )

    name = check_machine_name(name or socket.gethostname().split(".")[0])
    store = fleet_store(db, client=client_name(name))
    check_queue_schema(store)
    log_dir = worker_log_dir(name)
    settings = WorkerSettings(store=store, name=name,
                              tags=tuple(check_machine_name(t) for t in tags),
                              url=store.url.replace("+psycopg", ""), log_dir=log_dir, say=say)
    fp = machine_fingerprint(job=settings.job_context())
    os.close(open_private_dir(log_dir, LOG_DIR_WHAT, _log_dir_fix(log_dir)))
    runner = JobRunner(settings, Activity(), MAX_ATTEMPTS)
    lock = NameLock(store, name)
    app = make_app(conninfo(store), worker=name, configure=lock.take, task=runner.measure)
    keep_outcomes(app, say)
    app.tasks[TASK_NAME].retry_strategy = retry_policy(MAX_ATTEMPTS)
    outage = Outage(say)
    store.outage = outage  # one line per outage, whoever notices it (job, heartbeat, loop)
    return runner, fp, app, outage, lock


def run_worker(db: str, name: str | None, tags: list[str], exit_when_idle: bool,
               heartbeat: float = 10.0, poll: float = 2.0, say: Any = print) -> int | None:
    """Serve this machine's queue until stopped (SIGINT/SIGTERM: a running job is interrupted,
    its stored runs kept, and goes back to the queue) or, with ``exit_when_idle``, until the
    queue is empty.  A lost database is waited for, not a reason to stop.  Returns the number
    of jobs done on this machine (None: the database was away as it stopped)."""
    from perflab.fleet.queue import queue_name

    runner, fp, app, outage, lock = _setup(db, name, tags, say)
    store, name, tags = runner.settings.store, runner.settings.name, list(runner.settings.tags)

    def hello() -> None:  # once the name is held: never over a live worker's row
        announce(store, name, tags, fp)
        say(f"worker {name} ({fp.hostname}, tags: {', '.join(tags) or 'none'}) serving "
            f"queue {queue_name(name)} of {store.location}")

    try:
        asyncio.run(_Life(app, runner, lock, outage, Pace(heartbeat, poll, exit_when_idle),
                          hello).main())
        try:  # a stop does not wait for a lost database, for a count
            return fstore.jobs_done(store, name, wait=False)
        except PerflabError:
            return None
    finally:
        if lock.held:  # not the row of the worker that holds the name
            with contextlib.suppress(PerflabError):
                fstore.set_state(store, name, "stopped", None, wait=False)  # does not wait
