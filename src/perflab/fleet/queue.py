"""The fleet's queue: procrastinate (PostgreSQL jobs, locks, retries) in the results' database.

One job per (submission, machine).  A job goes to the machine's own queue (``perflab/NAME``)
and carries the lock ``perflab-machine:NAME``, so it runs only on that machine and never beside
another job of that machine.  The job's arguments are the perflab verb and its arguments; a
suite file named in them travels in the job (the benchmark host need not have it).

Tables of our own (storage.py) sit beside procrastinate's: ``fleet_workers`` (who announced
itself, heartbeat, busy/idle) and ``fleet_jobs`` (what was asked, the error, the result ids).
Submitting and the status read them through fleet.conn's psycopg connection (FleetConn); the
worker and ``init`` through perflab.storage's Store (SQLAlchemy), which this module loads only
when they ask.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import PerflabError
from perflab.fleet.conn import FleetConn, fleet_url, libpq_url, no_queue
from perflab.model import Fingerprint

if TYPE_CHECKING:
    from perflab.storage import Store

TASK_NAME = "perflab.fleet.measure"
QUEUE_PREFIX = "perflab/"
LOCK_PREFIX = "perflab-machine:"
# The verbs a benchmark host may be asked to run: the ones that measure.
MEASURING_VERBS = ("run", "compare", "stat", "bisect", "profile")
# Sub-verbs of those that only read the store: nothing for a benchmark host to do.
READING_SUBVERBS = {"profile": ("show", "list", "diff", "import")}
# A job whose worker died is tried again, at most this many times in all; then it fails.
MAX_ATTEMPTS = 3
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def queue_name(machine: str) -> str:
    return QUEUE_PREFIX + machine


def check_machine_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise PerflabError(f"machine name {name!r} is not allowed",
                           "use letters, digits, '.', '_' and '-' (at most 64 characters)")
    return name


def fleet_store(db: str | Path | None, create: bool = False, client: str | None = None) -> Store:
    """The shared store, which must be PostgreSQL (the queue lives there too).  ``client``: a
    worker's application_name (see Store)."""
    from perflab.storage import Store

    return Store(fleet_url(None if db is None else str(db)), create=create, client=client)


def client_name(machine: str) -> str:
    """The application_name of a worker's connections: pg_stat_activity shows whose they are."""
    return "perflab-worker:" + machine


def conninfo(store: Store) -> str:
    """The libpq URL procrastinate's psycopg connector takes (no SQLAlchemy driver suffix)."""
    return libpq_url(store.url)


# How long a worker's query waits for a connection from its pool (psycopg_pool's default is
# 30 s): while the database is away the query fails this soon, and the worker waits for the
# server itself (worker.run_worker) instead of the pool retrying behind its back.
POOL_TIMEOUT = 5.0
# A worker's pooled connection is never recycled by age (psycopg_pool's max_lifetime, default
# an hour, would replace it behind the worker's back; it holds the machine's name lock).  Ten
# years, not infinity: psycopg_pool jitters the lifetime by a fraction of it, and inf - inf is
# NaN.  A broken connection is still replaced (procrastinate's pool checks it at each use).
NEVER = 10 * 365 * 86400.0


def make_app(url: str, worker: str | None = None,
             configure: Callable[[Any], Awaitable[None]] | None = None,
             task: Callable[..., Any] | None = None) -> Any:
    """A procrastinate App on the database of ``url`` (a libpq URL: ``conninfo``); ``task``:
    perflab's one task (TASK_NAME), registered by a worker, which runs it (a submitter defers
    it by name).

    ``worker`` (the machine's name): the pool of a worker, ONE connection (min_size = max_size
    = 1, never recycled by age) shared by procrastinate's queue (fetch, its heartbeat, abort
    polls) and perflab's heartbeat (``beat``), named in pg_stat_activity.  ``configure`` runs
    on each connection the pool opens: the worker takes its machine's name lock there
    (worker.NameLock), so an idle worker holds 1 connection (the lock on a connection of its
    own would make 2; psycopg_pool's default pool, LISTEN and SQLAlchemy's engine 7).  The
    worker polls (``--poll``) instead of LISTENing, since procrastinate's
    LISTEN takes a connection of its own outside the pool.  Queries are milliseconds, and one
    job runs at a time: they wait their turn on it.  A submitter's pool is one connection too
    (psycopg_pool's default opens 4): its defers run one after another."""
    import procrastinate

    pool: dict[str, Any] = {"min_size": 1, "max_size": 1}
    if worker is not None:
        pool = {"timeout": POOL_TIMEOUT, "min_size": 1, "max_size": 1, "max_lifetime": NEVER,
                "kwargs": {"application_name": client_name(worker)}}
        if configure is not None:
            pool["configure"] = configure
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url, **pool))
    if task is not None:
        app.task(name=TASK_NAME, pass_context=True)(task)
    return app


# -- init -----------------------------------------------------------------------------------------
def init(store_url: str) -> Store:
    """Create perflab's tables and procrastinate's schema.  Idempotent; concurrent calls wait
    for each other on an advisory lock."""
    from perflab.fleet import store as fstore

    store = fleet_store(store_url, create=True)
    fstore.create_queue_schema(store, make_app(conninfo(store)).schema_manager.get_schema())
    return store


def check_queue_schema(store: Store) -> None:
    from perflab.fleet import store as fstore

    if not fstore.has_queue_schema(store):
        raise no_queue(store.location)


# -- machines -------------------------------------------------------------------------------------
@dataclass
class Machine:
    name: str
    tags: list[str]
    hostname: str | None
    fingerprint: Fingerprint
    last_heartbeat: float | None
    state: str
    current_job: int | None
    pid: int | None

    def liveness(self, now: float, heartbeat: float) -> str:
        """busy / idle while heartbeats come; 'lost' when they stopped without a goodbye."""
        if self.state == "stopped":
            return "stopped"
        if self.last_heartbeat is None or now - self.last_heartbeat > 3 * heartbeat + 5:
            return "lost"
        return self.state


def machines(conn: FleetConn) -> list[Machine]:
    rows = conn.worker_rows()
    return [Machine(name=r["name"], tags=list(r["tags"] or []), hostname=r["hostname"],
                    fingerprint=Fingerprint.from_json(r["fingerprint"]),
                    last_heartbeat=r["last_heartbeat"],
                    state=r["state"] or "idle", current_job=r["current_job"], pid=r["pid"])
            for r in rows]


def select_machines(conn: FleetConn, names: list[str], tags: list[str],
                    all_: bool) -> list[str]:
    known = machines(conn)
    if sum(bool(x) for x in (names, tags, all_)) != 1:
        raise PerflabError("say where to run: --machine NAME (repeatable), --tag TAG or --all",
                           "e.g. perflab fleet submit --all -- compare 'a' 'b'")
    if not known:
        raise PerflabError("no worker has announced itself in this database yet",
                           "start 'perflab worker --name NAME --db URL' on each benchmark host")
    by_name = {m.name: m for m in known}
    if all_:
        return [m.name for m in known if m.state != "retired"]
    if names:
        missing = [n for n in names if n not in by_name]
        if missing:
            raise PerflabError(
                f"no worker has ever announced the machine name(s) {', '.join(missing)}",
                f"known machines: {', '.join(sorted(by_name))}; start 'perflab worker --name "
                f"{missing[0]}' there first, or check the spelling")
        return list(dict.fromkeys(names))
    chosen = [m.name for m in known if set(tags) & set(m.tags)]
    if not chosen:
        all_tags = sorted({t for m in known for t in m.tags})
        raise PerflabError(f"no machine carries the tag(s) {', '.join(tags)}",
                           f"known tags: {', '.join(all_tags) or 'none'}; workers get them "
                           "with 'perflab worker --tag TAG'")
    return chosen


# -- submit ---------------------------------------------------------------------------------------
def validate_verb(argv: list[str],
                  check_args: Callable[[list[str]], dict[str, Any]] | None = None,
                  ) -> dict[str, str]:
    """Check the verb and its arguments here, before anything is queued: a mistake is found at
    the submitter's desk, not hours later on a benchmark host.  ``check_args`` parses the
    arguments with the command line's own parser (perflab.cli.fleet.check_args) and returns
    the verb's parameters by name: the queue knows which verbs measure, the CLI knows their
    options.  The workloads named are checked (name and parameters; each host builds its own);
    a suite file is checked by loading and planning it.  Returns the files that travel with the
    job (the suite file, under the argument that named it)."""
    if not argv:
        raise PerflabError("nothing to submit", "give the verb after --: "
                           "perflab fleet submit --all -- compare 'a' 'b'")
    verb = argv[0]
    if verb not in MEASURING_VERBS:
        raise PerflabError(f"'{verb}' is not a measuring verb, so it cannot be sent to the fleet",
                           f"submit one of: {', '.join(MEASURING_VERBS)}")
    if len(argv) > 1 and argv[1] in READING_SUBVERBS.get(verb, ()):
        raise PerflabError(f"'{verb} {argv[1]}' does not measure, so it cannot be sent to the "
                           "fleet", f"run it here, or submit '{verb} record ...'")
    if any(a == "--db" or a.startswith("--db=") for a in argv):
        raise PerflabError("the submitted verb names its own --db",
                           "leave --db out after --: the workers write to the fleet's store")
    params = check_args(argv) if check_args is not None else {}
    _refuse_relative_programs(argv)
    if verb != "bisect":  # bisect's workload is the one of each commit's checkout
        _check_workloads(params)
    if verb != "run":
        return {}
    suite = params.get("suite_file")
    if suite is None:
        raise PerflabError("the submitted 'run' names no suite file", "perflab run SUITE.toml")
    from perflab.suites.plan import make_plan
    from perflab.suites.spec import load_suite

    path = Path(suite)
    spec = load_suite(path)  # a bad suite file is refused here, at its line
    make_plan(spec, build=False)
    # The argument that named it (the worker puts its own copy's path there).
    arg = next(a for a in reversed(argv[1:]) if not a.startswith("-") and Path(a) == path)
    return {arg: path.read_text()}


def _check_workloads(params: dict[str, Any]) -> None:
    """Every workload a submitted verb names (``-W 'eh/cpp depth=10'``, ``-w eh/cpp``) exists
    and takes the parameters given, as it will on the hosts.  Whether its runtime is installed
    and it is built is each host's to know (a worker's job says so in its error)."""
    from perflab.validate import split_command
    from perflab.workloads.registry import get, parse_assignments

    given = params.get("workload")
    specs = [given] if isinstance(given, str) else list(given or [])
    common = parse_assignments(list(params.get("param") or []))
    for spec in specs:
        parts = split_command(spec, "--workload")
        get(parts[0]).typed_params({**common, **parse_assignments(parts[1:])})


def _refuse_relative_programs(argv: list[str]) -> None:
    """A worker runs a job in a fresh temporary directory, so './prog' or '../prog' would be
    'command not found' on every machine, after the submission was accepted: such
    a path is refused here, naming the absolute one.  Each argument's first word is checked
    (a quoted command './a --n 5' is split as compare splits it; a shell script's words after
    'sh -c' are not programs here).  A suite file travels with the job: 'run' is exempt."""
    import shlex

    if argv[0] == "run":
        return
    for arg in argv[1:]:
        if arg.startswith("-"):
            continue
        try:
            tokens = shlex.split(arg)[:1]
        except ValueError:
            continue
        for tok in tokens:
            if tok.startswith(("./", "../")):
                here = Path(tok).resolve()
                fix = (f"give its absolute path ({here}), which must exist on every machine"
                       if here.exists() else f"it does not exist here either ({here})")
                raise PerflabError(f"the submitted command names {tok}, a path relative to "
                                   "this directory, but each worker runs in a fresh one", fix)


def submit(conn: FleetConn, argv: list[str], names: list[str], tags: list[str], all_: bool,
           priority: int = 0, check_args: Callable[[list[str]], dict[str, Any]] | None = None,
           ) -> tuple[str, list[tuple[str, int]]]:
    """Queue ``argv`` once per chosen machine (the queue's schema was checked when ``conn``
    opened).  Returns the submission id and (machine, job id).  ``check_args``: see
    validate_verb."""
    files = validate_verb(argv, check_args)
    chosen = select_machines(conn, names, tags, all_)
    submission = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    app = make_app(conn.conninfo)
    out: list[tuple[str, int]] = []
    now = time.time()
    with app.open():
        for m in chosen:
            job_id = app.configure_task(TASK_NAME, queue=queue_name(m), lock=LOCK_PREFIX + m,
                                        priority=priority).defer(
                argv=list(argv), machine=m, submission=submission, files=files,
                submitted_at=now)
            out.append((m, int(job_id)))
            # A worker may already have taken the job: whoever comes first makes the row.
            conn.ensure_job_row(int(job_id), submission, m, list(argv), now)
    return submission, out


# -- status ---------------------------------------------------------------------------------------
@dataclass
class JobRow:
    job_id: int
    submission: str
    machine: str
    argv: list[str]
    state: str  # queued | running | done | failed | cancelled
    attempts: int
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    error: str | None
    result_ids: list[int]


_STATES = {"todo": "queued", "doing": "running", "succeeded": "done", "failed": "failed",
           "cancelled": "cancelled", "aborted": "failed", "aborting": "running"}


def _job_row(r: Any) -> JobRow:
    return JobRow(job_id=r["job_id"], submission=r["submission"], machine=r["machine"],
                  argv=list(r["argv"]), state=_STATES.get(r["status"] or "", r["own_state"] or "?"),
                  attempts=int(r["attempts"] or 0), submitted_at=r["submitted_at"],
                  started_at=r["started_at"], finished_at=r["finished_at"], error=r["error"],
                  result_ids=list(r["result_ids"] or []))


def jobs(conn: FleetConn, submission: str | None = None,
         limit: int | None = 50) -> list[JobRow]:
    """Our job rows with the queue's state (procrastinate_jobs is the truth for the state):
    the newest ``limit`` of them (None: all), or those of one ``submission`` in machine order."""
    return [_job_row(r) for r in conn.job_rows(submission, limit)]


@dataclass
class SubmissionRow:
    """One submission: what it asked, of how many machines, and its jobs counted by state."""

    submission: str
    submitted_at: float
    argv: list[str]
    jobs: int
    states: dict[str, int]  # queued | running | done | failed | cancelled -> jobs


def submissions(conn: FleetConn, limit: int = 20) -> tuple[list[SubmissionRow], bool]:
    """The newest ``limit`` submissions and whether older ones exist (FleetConn's
    submission_rows: the cost does not grow with the jobs stored)."""
    firsts, counts, more = conn.submission_rows(limit)
    out = []
    for f in firsts:
        states: dict[str, int] = {}
        for r in counts[f["submission"]]:
            st = _STATES.get(r["st"] or "", r["st"] or "?")
            states[st] = states.get(st, 0) + int(r["n"])
        out.append(SubmissionRow(f["submission"], f["submitted_at"], list(f["argv"]),
                                 sum(states.values()), states))
    return out, more


def failed_jobs(conn: FleetConn, among: list[str], limit: int) -> list[JobRow]:
    """The failed jobs of these submissions, newest first, at most ``limit``."""
    if not among:
        return []
    return [_job_row(r) for r in conn.failed_job_rows(among, limit)]


def submission_results(store: Store, submission: str) -> list[int]:
    """The complete result sets a submission produced, one per machine (in job order)."""
    from perflab.fleet import store as fstore

    ids = fstore.complete_result_ids(store, submission)
    if not ids:
        raise PerflabError(f"submission {submission} has no complete result in {store.location}",
                           "see 'perflab fleet status' for its jobs")
    return ids
