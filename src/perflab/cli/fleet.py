"""Verbs of the fleet: ``fleet init|submit|status`` and ``worker``.  See docs/fleet.md."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console
from perflab.errors import PerflabError

if TYPE_CHECKING:
    from perflab.fleet.conn import FleetConn

fleet_app = typer.Typer(help="A benchmark fleet: one PostgreSQL store and job queue, many "
                        "benchmark hosts (see docs/fleet.md).", no_args_is_help=True)

Db = o.FleetDb
err = stderr_console()


@fleet_app.command("init")
def init_cmd(db: Db = None) -> None:
    """Create perflab's tables and the job queue's schema in the database (idempotent)."""
    from perflab.fleet.queue import init

    store = init(db or "")
    stdout_console().print(f"fleet store ready: {escape(store.location)}", highlight=False)


@fleet_app.command("submit", context_settings={"ignore_unknown_options": True,
                                               "allow_interspersed_args": False})
def submit_cmd(
    argv: Annotated[list[str] | None, typer.Argument(
        help="The verb and its arguments, after --: run SUITE | compare ... | stat ...")] = None,
    machine: Annotated[list[str] | None, typer.Option(
        "--machine", "-M", help="A machine by the name its worker announced (repeatable).")]
    = None,
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", "-t", help="Every machine whose worker carries this tag (repeatable).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every machine that ever announced "
                                       "itself.")] = False,
    priority: Annotated[int, typer.Option("--priority", help="Higher runs first.")] = 0,
    db: Db = None,
) -> None:
    """Queue a measuring verb for a set of machines: one job per machine, each run there alone.
    Example: perflab fleet submit --all -- compare -n A -n B /opt/a/bench /opt/b/bench
    (absolute paths: each worker runs a job in a fresh directory)."""
    from perflab.fleet.conn import FleetConn
    from perflab.fleet.queue import submit

    with FleetConn(db) as conn:
        submission, jobs = submit(conn, list(argv or []), list(machine or []), list(tag or []),
                                  all_, priority, check_args=check_args)
    out = stdout_console()
    out.print(f"submission {submission}: {len(jobs)} job(s): "
              + ", ".join(f"{m} (job {j})" for m, j in jobs), highlight=False, soft_wrap=True)
    out.print(f"follow it: perflab fleet status --submission {submission}; when done: "
              f"perflab report --submission {submission}", highlight=False, soft_wrap=True)


def check_args(argv: list[str]) -> dict[str, Any]:
    """Parse a submitted verb's arguments with perflab's own command line, so a mistake (an
    unknown option, a missing value) is found at the submitter's desk, not hours later on a
    benchmark host.  Returns the parsed parameters of the verb (of its sub-verb for a group:
    ``profile record``), by their parameter names (``suite_file``, ``workload``...).  The queue
    (fleet/queue.py) calls this through ``submit(check_args=)``: the command line is the CLI's
    to know, not the queue's."""
    from perflab.cli.root import app

    try:  # typer >= 0.2x carries its own copy of click
        from typer._click.exceptions import UsageError  # type: ignore[import-not-found]
    except ImportError:
        from click.exceptions import UsageError

    verb = argv[0]
    group = typer.main.get_command(app)
    try:
        with group.make_context("perflab", list(argv), resilient_parsing=False) as ctx:
            cmd: Any = group
            rest = _unparsed(ctx)
            while hasattr(cmd, "resolve_command"):  # a group: down to its sub-verb
                name, cmd, rest = cmd.resolve_command(ctx, rest)
                assert cmd is not None
                ctx = cmd.make_context(name or verb, list(rest), parent=ctx)
                rest = _unparsed(ctx)
            return dict(ctx.params)
    except UsageError as e:
        raise PerflabError(f"the submitted '{verb}' is not valid: {e.format_message()}",
                           f"check it with 'perflab {verb} --help'") from e


def _unparsed(ctx: Any) -> list[str]:
    """What a group's context left for its sub-verb to parse."""
    return [*getattr(ctx, "_protected_args", getattr(ctx, "protected_args", [])), *ctx.args]


@fleet_app.command("status")
def status_cmd(
    db: Db = None,
    submission: Annotated[str | None, typer.Option("--submission", help="This submission's "
                                                   "jobs, one row per machine.")] = None,
    limit: Annotated[int, typer.Option(
        "--limit", min=1, help="How many submissions to list (newest first), and at most how "
        "many failed jobs.")] = 20,
    heartbeat: Annotated[float, typer.Option(
        "--heartbeat", help="The workers' heartbeat interval, to tell a lost one.")] = 10.0,
) -> None:
    """Machines (last heartbeat, fingerprint, busy or idle), then the latest submissions (one
    row each: its command and its jobs counted by state) with their failed jobs; --submission
    lists one submission's jobs (queued, running, done, failed with the error)."""
    from perflab.fleet.conn import FleetConn

    with FleetConn(db) as conn:
        _print_status(conn, submission, limit, heartbeat)


def _print_status(conn: FleetConn, submission: str | None, limit: int, heartbeat: float) -> None:
    """fleet status's tables, read through ``conn``."""
    from perflab.fleet.queue import failed_jobs, jobs, machines, submissions
    from perflab.fleet.tables import job_table, machines_table, submissions_table

    out = stdout_console()
    now = time.time()
    machines_table(machines(conn), now, heartbeat).print(out)
    if submission is not None:
        rows = jobs(conn, submission, None)
        if not rows:
            raise PerflabError(f"no submission {submission} in {conn.location}",
                               "see 'perflab fleet status' for the latest submissions")
        job_table(f"jobs of submission {submission}", rows).print(out)
        return
    subs, more = submissions(conn, limit)
    submissions_table(subs, now).print(out)
    if more:
        out.print(f"older submissions not shown: --limit {2 * limit} shows more", highlight=False)
    failed = failed_jobs(conn, [s.submission for s in subs], limit)
    if failed:
        job_table("failed jobs", failed).print(out)
    if subs:
        out.print(f"a submission's jobs: perflab fleet status --submission {subs[0].submission}",
                  highlight=False, soft_wrap=True)


def worker_cmd(
    db: Db = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="This machine's name in the fleet (default: the host name).")] = None,
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", "-t", help="A tag to be addressed by (repeatable): --tag arm64 --tag ci.")]
    = None,
    exit_when_idle: Annotated[bool, typer.Option(
        "--exit-when-idle", help="Stop once this machine's queue is empty (CI, tests).")] = False,
    heartbeat: Annotated[float, typer.Option("--heartbeat", min=0.2,
                                             help="Seconds between heartbeats.")] = 10.0,
    poll: Annotated[float, typer.Option("--poll", min=0.1, help="Seconds between looks at "
                                        "the queue: a new job starts within this.")]
    = 2.0,
) -> None:
    """Serve this machine's queue: run the jobs addressed to it one at a time, writing every run
    to the fleet's store as it finishes.  SIGINT/SIGTERM stop it after the running job."""
    import logging

    from perflab.fleet.worker import run_worker

    # The worker says what happens in its own lines; procrastinate's logs only when they matter.
    logging.basicConfig(level=logging.CRITICAL, format="%(name)s: %(message)s")
    # psycopg sets its own logger to WARNING when imported, above the root's level: its pool's
    # "error connecting" lines (two each, every few tenths of a second while the database is
    # away) would flood the log.  The worker says one line when the database is lost and one
    # when it is back (storefaults.Outage).
    logging.getLogger("psycopg").setLevel(logging.CRITICAL)

    def say(line: str) -> None:
        err.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {escape(line)}", highlight=False,
                  soft_wrap=True)

    if db is None:
        raise PerflabError("the worker needs the fleet's PostgreSQL database",
                           "pass --db postgresql://USER@HOST/DB (or set PERFLAB_DB)")
    n = run_worker(db, name, list(tag or []), exit_when_idle, heartbeat=heartbeat, poll=poll,
                   say=say)
    say("worker stopped" if n is None else f"worker stopped ({n} job(s) done on this machine "
        "in all)")


def register(app: typer.Typer) -> None:
    app.add_typer(fleet_app, name="fleet")
    app.command("worker")(worker_cmd)
