"""The fleet against a real PostgreSQL server: workers as separate processes, a job killed with
SIGKILL, per-machine verdicts, and every bad input as one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from cli_helpers import two_config_suite
from perflab.errors import EXIT_STORE_UNREACHABLE
from perflab.fleet.conn import FleetConn
from perflab.model import Fingerprint
from perflab.schema import configurations, fleet_jobs, results, runs, workers
from perflab.storage import Store

if TYPE_CHECKING:
    from perflab.fleet.localpg import LocalPostgres

pytestmark = pytest.mark.system

PERFLAB = [sys.executable, "-m", "perflab"]
FAST = ["--heartbeat", "0.5", "--poll", "0.3"]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PERFLAB_DB", None)
    return subprocess.run([*PERFLAB, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def one_line_error(p: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert p.returncode == code, p.stderr
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("perflab: "), p.stderr
    return lines[0]


def table_row(stdout: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is ``first``, with the lines a folded cell
    goes on to joined back (rich folds long cells onto lines with an empty first cell)."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"│ {first} "))
    cells = [c.strip() for c in lines[start].split("│")[1:-1]]
    for ln in lines[start + 1:]:
        more = [c.strip() for c in ln.split("│")[1:-1]]
        if not more or more[0] or len(more) != len(cells):
            break
        cells = [f"{a} {b}".strip() for a, b in zip(cells, more, strict=True)]
    return cells


def start_worker(url: str, name: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*PERFLAB, "worker", "--name", name, "--db", url, *FAST, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def worker_exit(w: subprocess.Popen[str], timeout: float = 120) -> str:
    """The worker's stderr once it has exited by itself (--exit-when-idle, a refusal); past
    ``timeout`` it is stopped (SIGTERM, then SIGKILL) and the test fails with what it said,
    instead of hanging the suite."""
    try:
        return w.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        w.send_signal(signal.SIGTERM)
        try:
            _, err = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            _, err = w.communicate()
        pytest.fail(f"the worker did not exit within {timeout:.0f} s; it said:\n{err}")


@pytest.fixture
def fleet_url(pg_url: str) -> str:
    p = cli("fleet", "init", "--db", pg_url)
    assert p.returncode == 0, p.stderr
    return pg_url


def announce(url: str, *names: str, tags: dict[str, list[str]] | None = None) -> None:
    """Each worker starts once on an empty queue: it announces itself and exits."""
    procs = [start_worker(url, n, "--exit-when-idle",
                          *[a for t in (tags or {}).get(n, []) for a in ("--tag", t)])
             for n in names]
    for p in procs:
        err = worker_exit(p)
        assert p.returncode == 0, err


def count_runs(store: Store, result_id: int) -> int:
    return int(store.read(lambda c: c.execute(
        sa.select(sa.func.count()).select_from(runs.join(configurations))
        .where(configurations.c.result_id == result_id)).scalar()))


def job_runs(store: Store, job_id: int) -> dict[int, tuple[str, int]]:
    """result id -> (status, stored runs) for every result set a job wrote."""
    rows = store.read(lambda c: c.execute(
        sa.select(results.c.id, results.c.status).where(results.c.fleet_job == job_id)).all())
    return {int(r[0]): (r[1], count_runs(store, int(r[0]))) for r in rows}


def test_three_workers_one_killed_mid_job(fleet_url: str, spin: Path) -> None:
    url = fleet_url
    announce(url, "m1", "m2", "m3")
    runs_n = 10
    # CPU time decides: three workers share two CPUs here, so wall time is noise; task_clock
    # (perf's, to the ns) rather than rusage's user_time, counted in scheduler ticks, whose
    # 10 runs under load left 2x the work inconclusive once in a dozen runs.
    sub = cli("fleet", "submit", "--all", "--db", url, "--", "compare", "-r", str(runs_n),
              "-m", "task_clock", "-n", "A", "-n", "B", f"{spin} 20000000", f"{spin} 40000000")
    assert sub.returncode == 0, sub.stderr
    submission = sub.stdout.split()[1].rstrip(":")
    store = Store(url)
    jobs = dict(store.read(lambda c: c.execute(
        sa.select(fleet_jobs.c.machine, fleet_jobs.c.job_id)
        .where(fleet_jobs.c.submission == submission)).all()))
    assert sorted(jobs) == ["m1", "m2", "m3"]

    procs = {n: start_worker(url, n, "--exit-when-idle") for n in ("m1", "m3")}
    victim = start_worker(url, "m2")
    # Wait until m2 has stored a few runs of its job, then kill it without warning.
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline:
        done = job_runs(store, jobs["m2"])
        stored = sum(n for _, n in done.values())
        if stored >= 3:
            break
        time.sleep(0.05)
    assert 3 <= stored < 2 * (runs_n + 1), "the job ended before it could be killed"
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    time.sleep(1.0)
    lost = job_runs(store, jobs["m2"])
    assert len(lost) == 1
    (lost_id, (lost_status, lost_count)), = lost.items()
    assert lost_status == "running" and lost_count < 2 * (runs_n + 1)
    time.sleep(1.0)  # the measuring child died with its worker: nothing more is written
    assert job_runs(store, jobs["m2"])[lost_id][1] == lost_count

    status = cli("fleet", "status", "--db", url, "--heartbeat", "0.5")
    assert status.returncode == 0
    m2_line = next(ln for ln in status.stdout.splitlines() if "│ m2 " in ln)
    assert "lost" in m2_line or "busy" in m2_line  # killed: no goodbye was said

    # The machine comes back: the new m2 worker hands the orphaned job back to the queue and
    # measures it afresh; the lost attempt's runs stay stored, marked abandoned.
    procs["m2"] = start_worker(url, "m2", "--exit-when-idle")
    outs = {}
    for n, p in procs.items():
        err = worker_exit(p, timeout=240)
        outs[n] = err
        assert p.returncode == 0, err
    assert "lost during attempt 1; queued again" in outs["m2"]

    final = {m: job_runs(store, j) for m, j in jobs.items()}
    for m in ("m1", "m3"):
        assert [v for v in final[m].values()] == [("complete", 2 * (runs_n + 1))]
    m2 = final["m2"]
    assert m2[lost_id] == ("abandoned", lost_count)  # kept, not stored twice, not reported
    (new_id, new), = [(k, v) for k, v in m2.items() if k != lost_id]
    assert new == ("complete", 2 * (runs_n + 1))

    from perflab.history.series import SeriesFilter, load_series

    # history sees one point per machine and configuration: the abandoned attempt is left out
    series = load_series(store, SeriesFilter(metric="task_clock"))
    assert len(series) == 3 * 2 and all(len(s.points) == 1 for s in series)

    states = dict(store.read(lambda c: c.execute(
        sa.select(fleet_jobs.c.machine, fleet_jobs.c.state)).all()))
    assert states == {"m1": "done", "m2": "done", "m3": "done"}
    # each result carries its machine's own identity
    names = {store.load(i).fingerprint.machine_name
             for m in final.values() for i in m}
    assert names == {"m1", "m2", "m3"}

    rep = cli("report", "--submission", submission, "--db", url, "--out",
              str(Path(os.environ.get("TMPDIR", "/tmp")) / f"perflab-fleet-{os.getpid()}"))
    assert rep.returncode == 0, rep.stderr
    lines = rep.stdout.splitlines()
    for m in ("m1", "m2", "m3"):
        row = next(ln for ln in lines if ln.startswith(f"│ {m} "))
        assert "slower" in row, rep.stdout  # twice the work is slower on every machine
    assert "slower on 3 of 3 machines" in rep.stdout
    assert "geometric mean of the ratios" in rep.stdout
    status = cli("fleet", "status", "--db", url)
    assert table_row(status.stdout, submission)[3:] == ["3", "3 done"], status.stdout
    status = cli("fleet", "status", "--db", url, "--submission", submission)
    assert status.stdout.count(" done ") == 3


def test_a_job_that_keeps_failing_ends_failed_with_its_error(fleet_url: str) -> None:
    announce(fleet_url, "solo")
    sub = cli("fleet", "submit", "--machine", "solo", "--db", fleet_url, "--",
              "stat", "-r", "6", "--", "sh", "-c", "exit 3")
    assert sub.returncode == 0, sub.stderr
    w = start_worker(fleet_url, "solo", "--exit-when-idle")
    err = worker_exit(w)
    assert w.returncode == 0, err
    store = Store(fleet_url)
    row = store.read(lambda c: c.execute(sa.select(fleet_jobs)).mappings().one())
    assert row["state"] == "failed" and "exited with status 3" in row["error"]
    status = cli("fleet", "status", "--db", fleet_url)
    _job, _sub, machine, state, tries, command, error = table_row(status.stdout, str(row["job_id"]))
    assert (machine, state, tries) == ("solo", "failed", "1")
    assert command == "stat -r 6 -- sh -c 'exit 3'"  # the command as it would be typed
    assert "exited with status 3" in error


def test_one_job_at_a_time_and_heartbeats_while_measuring(fleet_url: str) -> None:
    """Two jobs for one machine: the second starts after the first ended (no run of one lies
    among the other's), and the heartbeat advances while a job measures."""
    announce(fleet_url, "solo")
    for _ in range(2):
        sub = cli("fleet", "submit", "--machine", "solo", "--db", fleet_url, "--",
                  "stat", "-r", "10", "--", "sleep", "0.2")
        assert sub.returncode == 0, sub.stderr
    store = Store(fleet_url)
    w = start_worker(fleet_url, "solo", "--exit-when-idle")
    beats: dict[int, set[float]] = {}  # job -> heartbeats seen while the worker was busy on it
    deadline = time.monotonic() + 300  # generous: at nice 19 beside two busy loops a job took 35 s
    while w.poll() is None and time.monotonic() < deadline:
        row = store.read(lambda c: c.execute(
            sa.select(workers.c.state, workers.c.current_job, workers.c.last_heartbeat)
            .where(workers.c.name == "solo")).one())
        if row[0] == "busy":
            beats.setdefault(int(row[1]), set()).add(float(row[2]))
        time.sleep(0.1)
    err = worker_exit(w, timeout=max(deadline - time.monotonic(), 1))
    assert w.returncode == 0, err
    rows = store.read(lambda c: c.execute(
        sa.select(fleet_jobs.c.job_id, fleet_jobs.c.state, fleet_jobs.c.started_at,
                  fleet_jobs.c.finished_at, fleet_jobs.c.result_ids)
        .order_by(fleet_jobs.c.job_id)).all())
    assert [r[1] for r in rows] == ["done", "done"]
    (j1, _, s1, f1, (r1,)), (j2, _, s2, f2, (r2,)) = rows
    assert s1 < f1 <= s2 < f2  # the second job waited for the first
    run_times = [sorted(r.started_at for c in store.load(rid).configurations for r in c.runs)
                 for rid in (r1, r2)]
    assert run_times[0][-1] < run_times[1][0]  # no run of one among the other's
    # ten runs of 0.2 s each take 2 s at least: with a 0.5 s heartbeat, several beats each
    assert set(beats) == {j1, j2} and all(len(b) >= 3 for b in beats.values()), beats


def test_a_lost_write_of_a_jobs_outcome_does_not_keep_the_worker_from_exiting(
        fleet_url: str) -> None:
    """The queue's write of a job's outcome fails once (its one pooled connection not had in
    time, as under load): the job ended, yet procrastinate left it 'doing', the worker saw a
    job in its queue for good and did not exit (13 minutes, until SIGTERM, at load 7).  Now
    the write is done again: the job ends succeeded in the queue too, the worker exits."""
    announce(fleet_url, "solo")
    sub = cli("fleet", "submit", "--machine", "solo", "--db", fleet_url, "--",
              "stat", "-r", "6", "--", "true")
    assert sub.returncode == 0, sub.stderr
    w = subprocess.Popen([sys.executable, str(Path(__file__).with_name("lossy_worker.py")),
                          "worker", "--name", "solo", "--db", fleet_url, *FAST,
                          "--exit-when-idle"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = worker_exit(w, timeout=60)
    assert w.returncode == 0, err
    assert "is lost" in err, err  # the fault was injected
    assert "job 1: the queue did not take its outcome (couldn't get a connection after 5.00 " \
        "sec); writing it again" in err, err
    store = Store(fleet_url)
    assert store.read(lambda c: c.execute(sa.select(fleet_jobs.c.state)).scalar()) == "done"
    queue = store.read(lambda c: c.execute(sa.text(
        "SELECT status FROM procrastinate_jobs")).scalars().all())
    assert queue == ["succeeded"]


def test_the_heartbeat_ends_though_its_cancel_is_lost_in_the_pools_wait(fleet_url: str) -> None:
    """The heartbeat is cancelled as it waits for the pool's one connection, and the connection
    is handed to it in the same step: psycopg_pool's wait (asyncio.wait_for on Python 3.11)
    returns the connection and the cancellation is lost, so the heartbeat beats on.  The old
    teardown (cancel once, then await) waited for it for good: an --exit-when-idle worker done
    with its queue stayed up until SIGTERM.  end_task cancels again until it ends."""
    import asyncio

    from perflab.fleet import worker as wmod
    from perflab.fleet.queue import conninfo, make_app
    from perflab.storefaults import Outage

    store = Store(fleet_url)
    lock = wmod.NameLock(store, "hb")
    app = make_app(conninfo(store), worker="hb", configure=lock.take)
    settings = wmod.WorkerSettings(store=store, name="hb", tags=(), url=fleet_url,
                                   log_dir=Path("/nonexistent"), say=print)

    async def scene() -> tuple[bool, bool]:
        async with app.open_async():
            pool = app.connector.pool
            conn = await pool.getconn()  # the one connection, busy elsewhere
            beating = asyncio.create_task(wmod.heartbeat_loop(app, settings, wmod.Activity(),
                                                              0.01, Outage(), lock))
            await asyncio.sleep(0.3)  # the heartbeat waits for the connection
            await pool.putconn(conn)  # handed to it...
            beating.cancel()  # ...as it is cancelled
            await asyncio.wait({beating}, timeout=1.0)
            lost = not beating.done()  # the old teardown would await it for good from here
            await asyncio.wait_for(wmod.end_task(beating, every=0.2), timeout=30)
            return lost, beating.cancelled()

    lost, cancelled = asyncio.run(scene())
    assert lost, "the cancellation was honoured: this Python no longer loses it"
    assert cancelled


def test_a_job_whose_worker_keeps_dying_ends_failed(fleet_url: str) -> None:
    """Its worker SIGKILLed during each of MAX_ATTEMPTS attempts: the job is retried, then
    ends failed with the reason, and the worker goes on."""
    from perflab.fleet.queue import MAX_ATTEMPTS

    announce(fleet_url, "frail")
    sub = cli("fleet", "submit", "--machine", "frail", "--db", fleet_url, "--",
              "stat", "-r", "200", "--", "sleep", "0.2")
    assert sub.returncode == 0, sub.stderr
    store = Store(fleet_url)
    job = store.read(lambda c: c.execute(sa.select(fleet_jobs.c.job_id)).scalar())
    for attempt in range(1, MAX_ATTEMPTS + 1):
        w = start_worker(fleet_url, "frail")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            row = store.read(lambda c: c.execute(
                sa.select(fleet_jobs.c.state, fleet_jobs.c.attempts)
                .where(fleet_jobs.c.job_id == job)).one())
            if tuple(row) == ("running", attempt):
                break
            time.sleep(0.05)
        assert tuple(row) == ("running", attempt)
        w.send_signal(signal.SIGKILL)
        w.wait(30)
    w = start_worker(fleet_url, "frail", "--exit-when-idle")
    err = worker_exit(w)
    assert w.returncode == 0, err
    assert f"was lost {MAX_ATTEMPTS} times" in err
    row = store.read(lambda c: c.execute(sa.select(fleet_jobs)).mappings().one())
    assert row["state"] == "failed" and row["attempts"] == MAX_ATTEMPTS
    assert f"the worker running it was lost {MAX_ATTEMPTS} times" in row["error"]
    status = cli("fleet", "status", "--db", fleet_url)
    cells = table_row(status.stdout, str(job))
    assert cells[3] == "failed" and f"was lost {MAX_ATTEMPTS} times" in cells[-1]


def test_status_lists_submissions_one_row_each(fleet_url: str) -> None:
    """A submission to every machine is one row of the status, not one per machine: the newest
    --limit submissions with their jobs counted by state; --submission lists its jobs."""
    announce(fleet_url, "s1", "s2", "s3")
    jobs_of = {}
    for argv in (("--all",), ("--machine", "s2"), ("--all",)):
        p = cli("fleet", "submit", *argv, "--db", fleet_url, "--", "stat", "-r", "6", "--",
                "true")
        assert p.returncode == 0, p.stderr
        jobs_of[p.stdout.split()[1].rstrip(":")] = "1" if "s2" in argv else "3"
    subs = sorted(jobs_of)  # newest last: an id begins with its time of submission
    status = cli("fleet", "status", "--db", fleet_url, "--limit", "2")
    assert status.returncode == 0, status.stderr
    for sub in subs[1:]:
        n = jobs_of[sub]
        assert table_row(status.stdout, sub)[2:] == ["stat -r 6 -- true", n, f"{n} queued"]
    assert subs[0] not in status.stdout and "older submissions not shown" in status.stdout
    status = cli("fleet", "status", "--db", fleet_url)
    assert subs[0] in status.stdout and "older submissions" not in status.stdout
    status = cli("fleet", "status", "--db", fleet_url, "--submission", subs[0])
    machines = [table_row(status.stdout, str(j))[2] for j in
                Store(fleet_url).read(lambda c: c.execute(
                    sa.select(fleet_jobs.c.job_id).where(fleet_jobs.c.submission == subs[0])
                ).scalars().all())]
    want = ["s1", "s2", "s3"] if jobs_of[subs[0]] == "3" else ["s2"]
    assert sorted(machines) == want and status.stdout.count(" queued ") == len(want)
    line = one_line_error(cli("fleet", "status", "--db", fleet_url, "--submission", "nope"))
    assert "no submission nope" in line


def test_status_counts_the_running_try(fleet_url: str) -> None:
    """The queue counts the tries that ended: a job running its second try (the first lost
    with its worker) is at try 2, and stays at 2 once done."""
    job = queue_one(fleet_url, "t1")
    store = Store(fleet_url)

    def tries(status: str, ended: int) -> str:
        store.write(lambda c: c.execute(sa.text(
            "UPDATE procrastinate_jobs SET status = :s, attempts = :n WHERE id = :j"),
            {"s": status, "n": ended, "j": job}))
        p = cli("fleet", "status", "--db", fleet_url, "--submission",
                store.read(lambda c: c.execute(sa.select(fleet_jobs.c.submission)).scalar()))
        assert p.returncode == 0, p.stderr
        return table_row(p.stdout, str(job))[4]

    assert tries("todo", 0) == "0"
    assert tries("doing", 0) == "1"
    assert tries("todo", 1) == "1"  # the first try lost, queued again
    assert tries("doing", 1) == "2"
    assert tries("succeeded", 2) == "2"


def test_jobs_go_only_to_their_machines_by_tag(fleet_url: str) -> None:
    announce(fleet_url, "arm1", "x86a", tags={"arm1": ["arm"], "x86a": ["x86"]})
    sub = cli("fleet", "submit", "--tag", "arm", "--db", fleet_url, "--", "stat", "-r", "6",
              "true")
    assert sub.returncode == 0, sub.stderr
    w = start_worker(fleet_url, "x86a", "--exit-when-idle", "--tag", "x86")
    worker_exit(w)
    store = Store(fleet_url)
    assert store.read(lambda c: c.execute(sa.select(fleet_jobs.c.state)).scalar()) == "queued"
    w = start_worker(fleet_url, "arm1", "--exit-when-idle", "--tag", "arm")
    worker_exit(w)
    assert store.read(lambda c: c.execute(sa.select(fleet_jobs.c.state)).scalar()) == "done"
    tags = dict(store.read(lambda c: c.execute(sa.select(workers.c.name, workers.c.tags)).all()))
    assert tags == {"arm1": ["arm"], "x86a": ["x86"]}


def test_two_workers_with_one_name_are_refused(fleet_url: str) -> None:
    first = start_worker(fleet_url, "dup")
    try:
        store = Store(fleet_url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not store.read(lambda c: c.execute(
                sa.select(workers.c.name)).first()):
            time.sleep(0.1)
        line = one_line_error(cli("worker", "--name", "dup", "--db", fleet_url))
        assert "a worker named 'dup' is already running" in line and "--name" in line
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 0


def test_a_worker_stopped_while_the_database_is_away_stops(own_pg: LocalPostgres) -> None:
    """SIGTERM while the database is down: the idle worker stops at once (exit 0), without
    waiting for the database (its last state and its count are tried once, not waited for)."""
    url = own_pg.create_database("fleet")
    p = cli("fleet", "init", "--db", url)
    assert p.returncode == 0, p.stderr
    w = start_worker(url, "lone")
    store = Store(url)
    wait_for("the worker's heartbeat", lambda: store.read(lambda c: c.execute(
        sa.select(workers.c.state).where(workers.c.name == "lone")).scalar()) == "idle")
    store.engine.dispose()
    own_pg.stop_server("fast")
    time.sleep(1)
    w.send_signal(signal.SIGTERM)
    try:
        _, err = w.communicate(timeout=60)  # was: blocked for PERFLAB_DB_WAIT (300 s)
    finally:
        if w.poll() is None:
            w.kill()
        own_pg.start_server()
    assert w.returncode == 0, err
    assert err.rstrip().endswith("worker stopped") and "Traceback" not in err, err


def test_an_idle_worker_holds_one_connection(fleet_url: str) -> None:
    """One pooled connection shared by procrastinate's queue and perflab's heartbeat, holding
    the machine's name lock too: 1 per idle worker, as the server counts them (was 2 with the
    lock on a connection of its own, so 50 workers did not fit PostgreSQL's default 100; 7
    before that).  The lock is on that connection: a second worker of the name is refused."""
    store = Store(fleet_url)
    procs = {n: start_worker(fleet_url, n) for n in ("c1", "c2", "c3")}
    try:
        wait_for("three idle workers", lambda: store.read(lambda c: c.execute(
            sa.select(sa.func.count()).select_from(workers)
            .where(workers.c.state == "idle")).scalar()) == 3)
        seen = []
        for _ in range(20):  # beats every 0.5 s, polls every 0.3 s: a few of each
            seen.append(connections(store))
            time.sleep(0.1)
        line = one_line_error(cli("worker", "--name", "c2", "--db", fleet_url))
        assert "a worker named 'c2' is already running" in line
        assert worker_row(store, "c2") == ("idle", None)  # the refused one left the row alone
        seen.append(connections(store))
    finally:
        for w in procs.values():
            w.send_signal(signal.SIGTERM)
            w.communicate(timeout=30)  # was 180 s: see test_an_idle_worker_stops_soon_...
    assert all(s == {n: 1 for n in procs} for s in seen), seen  # the pool's, with the lock


def test_a_worker_whose_name_is_taken_while_its_connection_is_lost_stops(
        fleet_url: str) -> None:
    """The name lock lives on the worker's pooled connection: when that connection is lost
    and another session takes the name before the pool's new connection can, the worker does
    not go on serving under a name it no longer holds: it stops with the one-line refusal, and
    leaves the worker row alone (it is not its to mark stopped)."""
    import psycopg

    from perflab.fleet.queue import client_name

    store = Store(fleet_url)
    w = start_worker(fleet_url, "stolen")
    try:
        wait_for("the worker idle", lambda: store.read(lambda c: c.execute(
            sa.select(workers.c.state).where(workers.c.name == "stolen")).scalar()) == "idle")
        with psycopg.connect(fleet_url, autocommit=True) as thief:
            # terminate, then wait for the lock the dying session frees: queued before the
            # worker's pool can connect again, so this session gets it
            thief.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = %s", (client_name("stolen"),))
            thief.execute("SELECT pg_advisory_lock(hashtext(%s))", ("perflab-worker:stolen",))
            _, err = w.communicate(timeout=60)
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()
    assert w.returncode == 2, err
    assert err.strip().splitlines()[-1].startswith(
        "perflab: a worker named 'stolen' is already running"), err
    assert "Traceback" not in err, err
    assert worker_row(store, "stolen")[0] != "stopped"


def test_an_idle_worker_stops_soon_after_sigterm_even_when_its_pool_cannot_connect(
        pg_server: LocalPostgres, fleet_url: str) -> None:
    """An idle worker stops within seconds of SIGTERM whatever its queue loop is waiting for.
    Here its pool's connection is cut while the database takes no new one, so the loop waits
    in psycopg_pool's open (up to 30 s) when the signal comes; it used to finish that wait
    (and procrastinate's goodbye on a pool that cannot connect) first: 20-60 s to stop, the
    slow stop a CI run once saw.  The bound is generous (a few seconds are expected), yet
    below the 30 s pool wait the old code sat through."""
    import select

    from perflab.fleet.queue import client_name

    db = fleet_url.rsplit("/", 1)[1]
    w = start_worker(fleet_url, "quitter")
    try:
        store = Store(fleet_url)
        wait_for("the worker idle", lambda: store.read(lambda c: c.execute(
            sa.select(workers.c.state).where(workers.c.name == "quitter")).scalar()) == "idle")
        time.sleep(2)  # in its queue loop
        store.engine.dispose()
        pg_server.sql(f'ALTER DATABASE "{db}" WITH ALLOW_CONNECTIONS false')
        pg_server.sql(  # the pool's connection, and the name lock with it
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
            f"'{client_name('quitter')}'")
        said, deadline = "", time.monotonic() + 60
        while "database lost" not in said:  # its heartbeat found the pool cannot connect
            assert time.monotonic() < deadline and w.poll() is None, said
            if select.select([w.stderr], [], [], 1.0)[0]:
                said += w.stderr.readline()  # type: ignore[union-attr]
        time.sleep(8)  # the queue loop has given up too, and waits for a new pool
        w.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, err = w.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        pg_server.sql(f'ALTER DATABASE "{db}" WITH ALLOW_CONNECTIONS true')
        if w.poll() is None:
            w.kill()
            w.communicate()
    assert w.returncode == 0 and "Traceback" not in err, said + err
    assert took < 20, f"{took:.1f} s to stop"


def test_prune_removes_finished_jobs_and_keeps_queued_and_running_ones(fleet_url: str) -> None:
    """`perflab prune --older-than` also removes the fleet's jobs finished before then, their
    rows and the queue's own (procrastinate_jobs, with their events), and the queue's finished
    jobs that lost their row before; queued and running ones stay, and so does a job the queue
    still has to do, whatever its row says."""
    from perflab.fleet import store as fstore
    from perflab.fleet.queue import submit

    store = Store(fleet_url)
    announce(fleet_url, "pruned")
    conn = FleetConn(fleet_url)
    _, [(_m, ran)] = submit(conn, ["stat", "-r", "2", "--", "/bin/true"], ["pruned"], [], False)
    _, [(_m, orphan)] = submit(conn, ["stat", "-r", "2", "--", "/bin/true"], ["pruned"], [],
                               False)
    w = start_worker(fleet_url, "pruned", "--exit-when-idle")
    assert worker_exit(w) and w.returncode == 0
    _, [(_m, todo)] = submit(conn, ["stat", "--", "/bin/true"], ["pruned"], [], False)
    old, new = time.time() - 10 * 86400, time.time()
    fstore.update_job(store, ran, finished_at=old)
    store.write(lambda c: c.execute(sa.text(
        "UPDATE procrastinate_events SET at = now() - interval '10 days' WHERE job_id = :j"),
        {"j": orphan}))
    store.write(lambda c: c.execute(fleet_jobs.delete().where(fleet_jobs.c.job_id == orphan)))
    rows = {1001: ("done", old), 1002: ("failed", old), 1003: ("cancelled", old),
            1004: ("running", old), 1005: ("queued", old), 1006: ("done", new)}
    for job, (state, at) in rows.items():
        fstore.ensure_job_row(store, job, "s-old", "pruned", ["stat"], at)
        fstore.update_job(store, job, state=state, finished_at=at)
    fstore.update_job(store, todo, state="failed", finished_at=old)  # the queue says todo

    def left() -> set[int]:
        return set(store.read(lambda c: c.execute(sa.select(fleet_jobs.c.job_id)).scalars()))

    def queued() -> set[int]:
        return set(store.read(lambda c: c.execute(sa.text(
            "SELECT id FROM procrastinate_jobs")).scalars()))

    assert queued() == {ran, orphan, todo}
    p = cli("prune", "--older-than", "5", "--db", fleet_url)
    assert p.returncode == 0 and "would remove 0 result set(s)" in p.stdout, p.stderr
    assert "and 5 fleet job(s) finished before then" in p.stdout and len(left()) == 8
    p = cli("prune", "--older-than", "5", "--yes", "--db", fleet_url)
    assert p.returncode == 0 and "removed 0 result set(s)" in p.stdout, p.stderr
    assert left() == {1004, 1005, 1006, todo} and queued() == {todo}
    assert store.read(lambda c: c.execute(sa.text(
        "SELECT count(*) FROM procrastinate_events WHERE job_id IN (:a, :b)"),
        {"a": ran, "b": orphan}).scalar()) == 0
    p = cli("prune", "--older-than", "5", "--db", fleet_url)
    assert p.returncode == 0 and "nothing to remove" in p.stdout, p.stdout


# -- bad input: one line each, nothing lost -------------------------------------------------------
def test_bad_input_is_one_line(fleet_url: str, pg_url: str, tmp_path: Path) -> None:
    from perflab.fleet.localpg import free_port

    line = one_line_error(cli("fleet", "status", "--db",
                              f"postgresql://perflab@127.0.0.1:{free_port()}/perflab"),
                          EXIT_STORE_UNREACHABLE)
    assert "cannot reach the database server" in line
    announce(fleet_url, "known")
    line = one_line_error(cli("fleet", "submit", "--machine", "nosuch", "--db", fleet_url, "--",
                              "stat", "-r", "6", "true"))
    assert "no worker has ever announced the machine name(s) nosuch" in line
    assert "known machines: known" in line
    line = one_line_error(cli("worker", "--db", str(tmp_path / "r.sqlite")))
    assert "needs a PostgreSQL store, not the SQLite file" in line
    bad = tmp_path / "bad.toml"
    bad.write_text('[suite]\nname = "x"\n[[benchmark]]\nnme = 3\n')
    line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", "run",
                              str(bad)))
    assert "bad.toml" in line
    line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", "stat",
                              "--bogus", "true"))
    assert "the submitted 'stat' is not valid: No such option: --bogus" in line
    line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", "results",
                              "list"))
    assert "not a measuring verb" in line
    line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", "profile",
                              "list"))
    assert "'profile list' does not measure" in line and "profile record" in line
    store = Store(fleet_url)
    assert store.read(lambda c: c.execute(sa.select(sa.func.count()).select_from(fleet_jobs))
                      .scalar()) == 0  # nothing half-queued


def queued_args(store: Store) -> list[dict[str, object]]:
    return list(store.read(lambda c: c.execute(sa.text(
        "SELECT args FROM procrastinate_jobs ORDER BY id")).scalars().all()))


def test_submit_checks_workloads_and_reads_the_suite_path_with_runs_parser(
        fleet_url: str, tmp_path: Path) -> None:
    """An unknown workload (or a parameter it lacks) is refused at submit, nothing queued;
    options with values before the suite file (--out DIR, --resume N) are not taken for it:
    the suite travels in the job under the argument that named it."""
    announce(fleet_url, "known")
    store = Store(fleet_url)
    for argv in (("stat", "-W", "eh/cobol"), ("compare", "-W", "eh/c", "-W", "eh/cobol"),
                 ("profile", "record", "-w", "eh/cobol"), ("profile", "-w", "eh/cobol")):
        line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", *argv))
        assert "unknown workload 'eh/cobol'" in line and "did you mean eh/c" in line, argv
    line = one_line_error(cli("fleet", "submit", "--all", "--db", fleet_url, "--", "stat", "-W",
                              "eh/c", "-p", "nosuch=1"))
    assert "eh/c has no parameter 'nosuch'" in line
    assert queued_args(store) == []
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE.replace("PY", sys.executable))
    for extra in (("--out", str(tmp_path / "out")), ("--resume", "3")):
        p = cli("fleet", "submit", "--all", "--db", fleet_url, "--", "run", *extra, str(suite),
                "--no-report")
        assert p.returncode == 0, p.stderr
        assert queued_args(store)[-1]["files"] == {str(suite): suite.read_text()}


def test_database_without_schema_hints_fleet_init(pg_url: str) -> None:
    for argv in (("fleet", "status", "--db", pg_url), ("worker", "--name", "x", "--db", pg_url),
                 ("fleet", "submit", "--all", "--db", pg_url, "--", "stat", "true")):
        line = one_line_error(cli(*argv))
        assert "has no perflab schema" in line and "perflab fleet init --db" in line


def test_database_without_the_queue_hints_fleet_init(pg_url: str) -> None:
    """perflab's tables but not procrastinate's: status and submit (fleet.conn) say so."""
    Store(pg_url, create=True)
    for argv in (("fleet", "status", "--db", pg_url),
                 ("fleet", "submit", "--all", "--db", pg_url, "--", "stat", "true")):
        line = one_line_error(cli(*argv))
        assert "has no job queue yet" in line and "perflab fleet init --db" in line, line


def test_the_status_connection_lost_is_ridden_out(fleet_url: str) -> None:
    """FleetConn's connection ended by the server (pg_terminate_backend, as a restart ends it):
    the next statement waits for the server, connects again and answers."""
    import psycopg

    announce(fleet_url, "kept")
    conn = FleetConn(fleet_url)
    pid = conn.rows("SELECT pg_backend_pid() AS pid")[0]["pid"]
    with psycopg.connect(fleet_url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert [r["name"] for r in conn.worker_rows()] == ["kept"]
    assert conn.rows("SELECT pg_backend_pid() AS pid")[0]["pid"] != pid
    conn.close()


def test_wrong_credentials_are_one_line(pg_server, fleet_url: str) -> None:
    pg_server.add_password_user("fleet_pw", "s3cret")
    url = fleet_url.replace("postgres@", "fleet_pw:nope@")
    line = one_line_error(cli("fleet", "status", "--db", url))
    assert "refused the credentials" in line and "nope" not in line


def test_fleet_init_is_idempotent(fleet_url: str) -> None:
    p = cli("fleet", "init", "--db", fleet_url)
    assert p.returncode == 0, p.stderr
    assert "fleet store ready" in p.stdout


# Cells run in order and grow as n squared: the first two (24 runs) take about a second, the
# last three about ten, so a poller starved for seconds on a loaded CI machine still sees the
# job mid-run (with flat 30-60 ms runs the whole suite once ended between two polls).
SLEEP = "import sys, time; time.sleep({} * int(sys.argv[1]) ** 2)"
SUITE = two_config_suite("fleet-tiny", 6, [1, 2, 3, 4, 5],
                         ["PY", "-c", SLEEP.format(0.01), "{n}"],
                         ["PY", "-c", SLEEP.format(0.02), "{n}"])


def submit_suite(fleet_url: str, tmp_path: Path, machine: str,
                 keep_file: bool = True) -> tuple[Store, Any, subprocess.Popen[str]]:
    """SUITE submitted to ``machine`` (announced) as ``run --no-report`` (without
    ``keep_file``, the submitter's file removed: the job carries it), and a worker started on
    it: the store, the job's id and the worker."""
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE.replace("PY", sys.executable))
    announce(fleet_url, machine)
    sub = cli("fleet", "submit", "--machine", machine, "--db", fleet_url, "--", "run",
              str(suite), "--no-report")
    assert sub.returncode == 0, sub.stderr
    if not keep_file:
        suite.unlink()
    store = Store(fleet_url)
    job = store.read(lambda c: c.execute(sa.select(fleet_jobs.c.job_id)).scalar())
    return store, job, start_worker(fleet_url, machine)


def test_a_suite_run_resumes_after_its_worker_is_killed(fleet_url: str, tmp_path: Path) -> None:
    """The suite file travels in the job; the retried job continues the same result with
    run --resume: every cell ends with exactly its runs, none measured twice."""
    store, job, w = submit_suite(fleet_url, tmp_path, "s1", keep_file=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = job_runs(store, job)
        if sum(n for _, n in done.values()) >= 20:  # past the first cells, not at the end
            break
        time.sleep(0.05)
    w.send_signal(signal.SIGKILL)
    w.wait(30)
    (rid, (status, before)), = job_runs(store, job).items()
    assert status == "running" and 20 <= before < 5 * 2 * 6
    w = start_worker(fleet_url, "s1", "--exit-when-idle")
    err = worker_exit(w, timeout=240)
    assert w.returncode == 0, err
    after = job_runs(store, job)
    assert list(after) == [rid] and after[rid][0] == "complete"  # the same result, resumed
    rs = store.load(rid)
    superseded = set(rs.settings.suite.superseded or [])
    live = [c for c in rs.configurations if c.id not in superseded]
    assert len(live) == 5 * 2 and all(len(c.runs) == 6 for c in live)
    assert all(len(c.runs) < 6 for c in rs.configurations if c.id in superseded)


def test_sigterm_interrupts_a_busy_workers_job_which_resumes_on_the_next(
        fleet_url: str, tmp_path: Path) -> None:
    """SIGTERM to a worker mid-job: the job's verb is interrupted (not waited for), every run
    it stored is kept, the job is queued again (not failed, not done) and the worker exits 0;
    the machine's next worker resumes the same result, each cell ending with exactly its
    runs."""
    store, job, w = submit_suite(fleet_url, tmp_path, "t1")
    wait_for("the job's first cells", lambda: sum(n for _, n in job_runs(store, job).values())
             >= 20)
    before = sum(n for _, n in job_runs(store, job).values())
    w.send_signal(signal.SIGTERM)
    err = worker_exit(w, timeout=60)
    assert w.returncode == 0, err
    assert f"job {job}: attempt 1 stopped" in err and "queued again" in err, err
    (rid, (status, stopped_at)), = job_runs(store, job).items()
    assert status == "interrupted" and before <= stopped_at < 5 * 2 * 6, err
    assert store.read(lambda c: c.execute(sa.text(
        "SELECT status::text FROM procrastinate_jobs WHERE id = :j"), {"j": job}).scalar()
                      ) == "todo"
    assert store.read(lambda c: c.execute(sa.select(fleet_jobs.c.state).where(
        fleet_jobs.c.job_id == job)).scalar()) == "queued"
    w = start_worker(fleet_url, "t1", "--exit-when-idle")
    err = worker_exit(w, timeout=240)
    assert w.returncode == 0, err
    after = job_runs(store, job)
    assert list(after) == [rid] and after[rid][0] == "complete", err  # the same, resumed
    rs = store.load(rid)
    superseded = set(rs.settings.suite.superseded or [])
    live = [c for c in rs.configurations if c.id not in superseded]
    assert len(live) == 5 * 2 and all(len(c.runs) == 6 for c in live)
    assert sum(len(c.runs) for c in rs.configurations) >= stopped_at  # none lost


# -- the database goes away: a server restart ----------------------------------------------------
def wait_for(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


def connections(store: Store) -> dict[str, int]:
    """Open connections per worker, as the server counts them (pg_stat_activity)."""
    from perflab.fleet.queue import client_name

    rows = store.read(lambda c: c.execute(sa.text(
        "SELECT application_name, count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND application_name LIKE :p GROUP BY 1"),
        {"p": client_name("%")}).all())
    return {str(a).split(":", 1)[1]: int(n) for a, n in rows}


def worker_row(store: Store, name: str) -> tuple[str, int | None]:
    row = store.read(lambda c: c.execute(sa.select(workers.c.state, workers.c.current_job)
                                         .where(workers.c.name == name)).one())
    return row[0], row[1]


def test_a_server_restart_loses_no_job_and_no_worker(own_pg: LocalPostgres) -> None:
    """The server restarts (pg_ctl stop -m fast, as a service restart does) while one worker
    measures a job and another is idle: the job completes once, in its first attempt, with
    every run stored once;
    both workers stay up (the idle one serves a job after the restart); the queue and
    perflab's job table agree; the status shows both idle; each worker says one line when the
    database is lost and one when it is back, and nothing of psycopg's."""
    from perflab.fleet.queue import jobs as queue_jobs

    url = own_pg.create_database("fleet")
    p = cli("fleet", "init", "--db", url)
    assert p.returncode == 0, p.stderr
    announce(url, "busy", "idle")
    runs_n = 60
    sub = cli("fleet", "submit", "--machine", "busy", "--db", url, "--", "stat", "-r",
              str(runs_n), "-w", "0", "--no-counters", "--", "/bin/sleep", "0.05")
    assert sub.returncode == 0, sub.stderr
    store = Store(url)
    job = int(store.read(lambda c: c.execute(sa.select(fleet_jobs.c.job_id)).scalar()))
    procs = {n: start_worker(url, n) for n in ("busy", "idle")}
    try:
        wait_for("runs of the job", lambda: sum(n for _, n in job_runs(store, job).values()) >= 5)
        assert sum(n for _, n in job_runs(store, job).values()) < runs_n
        own_pg.stop_server("fast")
        # The outage, longer than a query waits for a pooled connection (queue.POOL_TIMEOUT,
        # 5 s), so the heartbeats (every 0.5 s) notice it.
        time.sleep(10)
        own_pg.start_server()
        wait_for("the job to end", lambda: store.read(lambda c: c.execute(
            sa.select(fleet_jobs.c.state).where(fleet_jobs.c.job_id == job)).scalar())
            in ("done", "failed"))
        assert all(p.poll() is None for p in procs.values())  # both stayed up
        # the idle worker serves after the restart
        sub = cli("fleet", "submit", "--machine", "idle", "--db", url, "--", "stat", "-r", "6",
                  "-w", "0", "--no-counters", "--", "/bin/true")
        assert sub.returncode == 0, sub.stderr
        wait_for("both jobs done", lambda: [j.state for j in queue_jobs(FleetConn(url))]
                 == ["done", "done"])
        # the heartbeat writes what the worker does: both read idle, none busy
        wait_for("both machines idle", lambda: all(
            worker_row(store, n) == ("idle", None) for n in procs))
        status = cli("fleet", "status", "--db", url, "--heartbeat", "0.5")
        assert status.returncode == 0, status.stderr
        for n in procs:
            assert table_row(status.stdout, n)[1] == "idle", status.stdout
        # reconnecting leaked nothing: each idle worker holds its one pooled connection (with
        # its name lock, taken again) and nothing else
        assert all(n <= 1 for n in connections(store).values()), connections(store)
        line = one_line_error(cli("worker", "--name", "idle", "--db", url))
        assert "a worker named 'idle' is already running" in line  # the lock was taken again
    finally:
        errs = {}
        for n, w in procs.items():
            w.send_signal(signal.SIGTERM)
            _, errs[n] = w.communicate(timeout=60)
    assert all(w.returncode == 0 for w in procs.values()), errs
    own = {r[0]: (r[1], r[2]) for r in store.read(lambda c: c.execute(
        sa.select(fleet_jobs.c.job_id, fleet_jobs.c.state, fleet_jobs.c.attempts)).all())}
    queue = {j.job_id: (j.state, j.attempts) for j in queue_jobs(FleetConn(url))}
    assert own == queue == {job: ("done", 1), job + 1: ("done", 1)}  # the tables agree
    # The job completed once, in its first attempt: its measuring process waited for the
    # database with its runs in memory; one result, every run stored exactly once.
    (rid, (state, stored)), = job_runs(store, job).items()
    assert (state, stored) == ("complete", runs_n)
    assert len({(r.seq, c.id) for c in store.load(rid).configurations for r in c.runs}) == runs_n
    for n, err in errs.items():
        assert "Traceback" not in err and "psycopg" not in err, err
        assert err.count("database lost") == 1 and err.count("database back") == 1, (n, err)


# -- the worker's own files: private, never written through a link -------------------------------
def worker_in(url: str, name: str, state: Path) -> subprocess.Popen[str]:
    """A worker whose perflab state directory (its job logs) is under ``state``."""
    return subprocess.Popen([*PERFLAB, "worker", "--name", name, "--db", url, *FAST,
                             "--exit-when-idle"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "XDG_STATE_HOME": str(state)})


def queue_one(url: str, machine: str) -> int:
    from perflab.fleet.queue import submit
    from perflab.fleet.worker import announce

    store = Store(url)
    announce(store, machine, [], Fingerprint(hostname="h", cpu_model="c"))
    _, [(_m, job)] = submit(FleetConn(url), ["stat", "-r", "2", "--", "/bin/echo", "measured"],
                            [machine], [], False)
    return job


@pytest.mark.parametrize("hostile", ["world-writable", "another-users", "a-symlink"])
def test_a_hostile_log_directory_is_refused_and_its_victim_untouched(
        fleet_url: str, tmp_path: Path, hostile: str) -> None:
    """Someone made the worker's log directory first, shared (777), not the user's, or as a
    link, with job-N.log linking to a victim file: the worker refuses it in one line naming
    the directory and the fix, before taking any job; the victim is not touched."""
    job = queue_one(fleet_url, "hw")
    state = tmp_path / "state"
    logs = state / "perflab" / "worker-hw"
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "elsewhere" if hostile == "a-symlink" else logs
    target.mkdir(parents=True)
    if hostile == "a-symlink":
        logs.parent.mkdir(parents=True)
        logs.symlink_to(target)
    (target / f"job-{job}.log").symlink_to(victim)
    target.chmod(0o777 if hostile == "world-writable" else 0o755)
    if hostile == "another-users":
        os.chown(target, 65534, 65534)
    w = worker_in(fleet_url, "hw", state)
    err = worker_exit(w)
    line = one_line_error(subprocess.CompletedProcess(w.args, w.returncode, "", err))
    why = {"world-writable": "is writable by other users (mode 777)",
           "another-users": "is owned by uid 65534, not by you",
           "a-symlink": "is a symbolic link"}[hostile]
    assert f"the worker's job log directory {logs} {why}" in line
    assert f"-- remove {logs}" in line and "XDG_STATE_HOME" in line
    assert victim.read_text() == "precious\n"
    store = Store(fleet_url)
    state_of = store.read(lambda c: c.execute(sa.select(fleet_jobs.c.state)).scalars().all())
    assert state_of in ([], ["queued"])  # not taken, so not failed


def test_a_link_under_a_job_logs_name_is_moved_aside_not_followed(
        fleet_url: str, tmp_path: Path) -> None:
    """In the worker's own private log directory, a link standing where the job's log goes is
    renamed aside (and said); the log is a new file of the worker's, the victim untouched."""
    job = queue_one(fleet_url, "lw")
    state = tmp_path / "state"
    logs = state / "perflab" / "worker-lw"
    logs.mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (logs / f"job-{job}.log").symlink_to(victim)
    w = worker_in(fleet_url, "lw", state)
    err = worker_exit(w)
    assert w.returncode == 0, err
    assert victim.read_text() == "precious\n"
    log = logs / f"job-{job}.log"
    assert not log.is_symlink() and (log.stat().st_mode & 0o777) == 0o600
    assert "/bin/echo measured: 2 runs" in log.read_text(), log.read_text()
    [aside] = [p for p in logs.iterdir() if p.name.startswith(f"job-{job}.log.aside-")]
    assert aside.is_symlink() and f"moved to {aside.name}" in err
    assert (logs.stat().st_mode & 0o777) == 0o700


def test_a_fresh_log_directory_is_private(fleet_url: str, tmp_path: Path) -> None:
    job = queue_one(fleet_url, "fw")
    state = tmp_path / "state"
    w = worker_in(fleet_url, "fw", state)
    err = worker_exit(w)
    assert w.returncode == 0, err
    logs = state / "perflab" / "worker-fw"
    assert (logs.stat().st_mode & 0o777) == 0o700 and logs.stat().st_uid == os.geteuid()
    log = logs / f"job-{job}.log"
    assert (log.stat().st_mode & 0o777) == 0o600 and str(log) in err
