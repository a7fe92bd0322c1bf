"""The fleet at scale on this machine (part of `make bench`; prints figures, asserts nothing).

One real PostgreSQL 15 server (localpg; max_connections as docs/fleet.md says to size it,
2 x WORKERS + 20, or --max-connections), then:

  store    RUNS runs bulk-loaded with SQL (INSERT ... SELECT generate_series, not measured):
           100 benchmarks x RUNS/2000 commits, 20 runs each, spread over 90 days, copied
           from one real `perflab stat` result so every column is as perflab writes it
  workers  WORKERS `perflab worker` processes (real processes, default heartbeat and poll)
  jobs     JOBS tiny jobs (`stat -r 1 -w 0 -- true`), submitted --all in JOBS/WORKERS
           submissions; all must finish.  Figures: jobs/s (first submit to last done), peak
           connections per worker (its job's measuring process included) and in all
           (pg_stat_activity, sampled every 0.25 s), the time each worker took to stop after
           SIGTERM
  queries  wall time of `perflab detect` (one benchmark, and one benchmark --since 30d) and
           of `perflab report --submission` (one submission of WORKERS machines) with the
           RUNS stored runs, as a user runs them (the CLI, its start-up included)

Figures are printed and written to benchmarks/fleet-scale-<date>.json (or --out).

Usage: python benchmarks/fleet_scale.py [--workers 50] [--jobs 500] [--runs 1000000]
         [--max-connections N] [--out benchmarks/fleet-scale-<date>.json]
A small run: --workers 5 --jobs 20 --runs 50000.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from perflab.fleet.conn import FleetConn
from perflab.fleet.localpg import LocalPostgres
from perflab.fleet.queue import client_name, init, submit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

ROOT = Path(__file__).resolve().parents[1]
PERFLAB = [sys.executable, "-m", "perflab"]
JOB = ["stat", "-r", "1", "-w", "0", "--", "true"]
BENCHMARKS = 100
RUNS_PER_RESULT = 20


def _env(url: str | None = None) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160"}
    env.pop("PERFLAB_DB", None)
    if url:
        env["PERFLAB_DB"] = url
    return env


def _timed(argv: list[str], url: str) -> float | str:
    """Seconds the verb took, or what it failed with (recorded, not fatal)."""
    t0 = time.perf_counter()
    p = subprocess.run([*PERFLAB, *argv, "--db", url], capture_output=True, text=True,
                       env=_env())
    took = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        return f"failed: {p.stderr.strip()[-300:]}"
    return round(took, 3)


# -- store ----------------------------------------------------------------------------------------
def bulk_load(engine: sa.Engine, url: str, n_runs: int) -> dict[str, Any]:
    """n_runs runs (20 per result, one configuration per result) cloned from one real result."""
    p = subprocess.run([*PERFLAB, "stat", "-n", "template", *JOB[1:]], capture_output=True,
                       text=True, env=_env(url))
    if p.returncode != 0:
        raise SystemExit(f"the template stat failed: {p.stderr.strip()[-400:]}")
    n_results = max(1, n_runs // RUNS_PER_RESULT)
    t0 = time.perf_counter()
    with engine.begin() as c:
        tpl = c.execute(sa.text("SELECT id FROM results ORDER BY id LIMIT 1")).scalar_one()
        keys = list(c.execute(sa.text(
            "SELECT r.values FROM runs r JOIN configurations f ON f.id = r.configuration_id "
            "WHERE f.result_id = :t AND NOT r.warmup LIMIT 1"), {"t": tpl}).scalar_one())
        base = c.execute(sa.text("SELECT COALESCE(MAX(id), 0) FROM results")).scalar_one()
        now = time.time()
        # results: one per (benchmark, commit); commit g of a benchmark made 90 days/commits apart
        c.execute(sa.text(
            "INSERT INTO results (id, kind, label, created_at, status, machine_id, fingerprint,"
            " commit, dirty, repo, perflab_version, settings, metrics, notes) "
            "SELECT :base + g, r.kind, '', :now - 90 * 86400.0 * (1 - g::float / :n), "
            " 'complete', r.machine_id, r.fingerprint, md5(g::text), false, r.repo, "
            " r.perflab_version, r.settings, r.metrics, r.notes "
            "FROM results r, generate_series(1, :n) g WHERE r.id = :t"),
            {"base": base, "now": now, "n": n_results, "t": tpl})
        c.execute(sa.text(
            "INSERT INTO configurations (id, result_id, name, command, shell, env, benchmark,"
            " params, cell, is_baseline, commit) "
            "SELECT :base + g, :base + g, 'bulk', f.command, false, f.env, "
            " 'bulk-' || lpad((g % :b)::text, 3, '0'), f.params, f.cell, true, NULL "
            "FROM configurations f, generate_series(1, :n) g WHERE f.result_id = :t"),
            {"base": base, "n": n_results, "t": tpl, "b": BENCHMARKS})
        # every metric of the template's runs, with 2% noise (a step of +5% half way through
        # each series, for detect to find)
        values = "json_build_object(" + ", ".join(
            f"'{k}', (1 + 0.02 * random() + CASE WHEN g > :n / 2 THEN 0.05 ELSE 0 END)"
            f" * ((SELECT values ->> '{k}' FROM tv)::float)" for k in keys) + ")"
        c.execute(sa.text(
            "WITH tv AS (SELECT r.values FROM runs r JOIN configurations f "
            " ON f.id = r.configuration_id WHERE f.result_id = :t AND NOT r.warmup LIMIT 1) "
            "INSERT INTO runs (configuration_id, seq, warmup, status, exit_code, started_at,"
            " load1, error, values) "
            f"SELECT :base + g, s, false, 'ok', 0, :now, 0.5, '', {values} "
            "FROM generate_series(1, :n) g, generate_series(0, :k - 1) s"),
            {"base": base, "now": now, "n": n_results, "t": tpl, "k": RUNS_PER_RESULT})
        for table in ("results", "configurations", "runs"):
            c.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                              f"(SELECT MAX(id) FROM {table}))"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(sa.text("ANALYZE"))
    stored = _scalar(engine, "SELECT COUNT(*) FROM runs")
    return {"runs": int(stored), "results": n_results + 1,
            "load_s": round(time.perf_counter() - t0, 1)}


def _scalar(engine: sa.Engine, sql: str) -> Any:
    with engine.connect() as c:
        return c.execute(sa.text(sql)).scalar()


# -- workers and jobs -----------------------------------------------------------------------------
# The application_name of a worker's connections (its pool, with the name lock) and of its
# job's measuring process (storage.Store: perflab-job:NAME).
PREFIXES = (client_name(""), "perflab-job:")


def connections(engine: sa.Engine) -> dict[str, int]:
    """Open connections per machine (its worker's and its job's measuring process's) and in
    all, as pg_stat_activity counts them."""
    with engine.connect() as c:
        rows = c.execute(sa.text(
            "SELECT application_name, count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' GROUP BY 1")).all()
    out: dict[str, int] = {}
    for app, n in rows:
        for prefix in PREFIXES:
            if str(app).startswith(prefix):
                machine = str(app)[len(prefix):]
                out[machine] = out.get(machine, 0) + int(n)
    out["(all)"] = sum(int(n) for _a, n in rows)
    return out


def wait_until(what: str, check: Any, timeout: float, engine: sa.Engine,
               peak: dict[str, int]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for k, v in connections(engine).items():
            peak[k] = max(peak.get(k, 0), v)
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting ({timeout:.0f} s): {what}")
        time.sleep(0.25)


def run_fleet(url: str, engine: sa.Engine, n_workers: int, n_jobs: int,
              log_dir: Path) -> dict[str, Any]:
    init(url)
    names = [f"w{i:02d}" for i in range(n_workers)]
    procs = {}
    t0 = time.perf_counter()
    for n in names:
        log = open(log_dir / f"{n}.log", "w")  # noqa: SIM115 (closed with the process)
        procs[n] = subprocess.Popen([*PERFLAB, "worker", "--name", n, "--db", url],
                                    stdout=log, stderr=log, env=_env())
    peak: dict[str, int] = {}

    def idle() -> int:
        return int(_scalar(engine, "SELECT COUNT(*) FROM fleet_workers WHERE state = 'idle'"))

    def dead() -> list[str]:
        return [n for n, p in procs.items() if p.poll() is not None]

    try:
        wait_until(f"{n_workers} idle workers (a worker that cannot open its pool, e.g. "
                   f"past max_connections, never gets there: see its log in {log_dir})",
                   lambda: idle() == n_workers and not dead(), 120 + 3 * n_workers, engine,
                   peak)
        started = time.perf_counter() - t0
        idle_peak: dict[str, int] = {}
        until = time.monotonic() + 15  # a few polls (2 s) and heartbeats (10 s) of each
        wait_until("idle sampling", lambda: time.monotonic() > until, 60, engine, idle_peak)
        t1 = time.perf_counter()
        subs = []
        for _ in range(max(1, n_jobs // n_workers)):
            with FleetConn(url) as conn:
                sub, _jobs = submit(conn, list(JOB), [], [], True)
            subs.append(sub)
        total = len(subs) * n_workers

        def finished() -> bool:
            if dead():
                raise SystemExit(f"workers died: {dead()} (logs in {log_dir})")
            return int(_scalar(engine, "SELECT COUNT(*) FROM fleet_jobs WHERE state IN "
                                       "('done', 'failed')")) >= total
        wait_until(f"{total} jobs", finished, 120 + 10 * total, engine, peak)
        took = time.perf_counter() - t1
        failed = int(_scalar(engine, "SELECT COUNT(*) FROM fleet_jobs WHERE state = 'failed'"))
    finally:
        stops = stop_workers(procs)
    per_worker = [v for k, v in peak.items() if k != "(all)"]
    idle_per_worker = [v for k, v in idle_peak.items() if k != "(all)"]
    return {"workers": n_workers, "jobs": total, "failed": failed,
            "workers_start_s": round(started, 1), "jobs_s": round(took, 1),
            "jobs_per_s": round(total / took, 2),
            "idle_peak_connections_per_worker": max(idle_per_worker, default=0),
            "idle_peak_connections_all": idle_peak.get("(all)", 0),
            "peak_connections_per_worker": max(per_worker, default=0),
            "peak_connections_all": peak.get("(all)", 0),
            "all_stopped_after_sigterm_s": stops, "submissions": subs}


def stop_workers(procs: dict[str, subprocess.Popen[bytes]]) -> float:
    """SIGTERM to every worker at once; seconds until the last one exited."""
    t0 = time.perf_counter()
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return round(time.perf_counter() - t0, 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--max-connections", type=int, default=None,
                    help="the server's max_connections (default: docs/fleet.md's rule, "
                    "2 x workers + 20; PostgreSQL's own default, 100, is what 50 workers "
                    "are measured against)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.max_connections is None:
        args.max_connections = 2 * args.workers + 20
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "command": " ".join(sys.argv), "load_before": load()}
    with tempfile.TemporaryDirectory(prefix="perflab-scale-") as tmp, \
            LocalPostgres(fsync=True,
                          settings={"max_connections": str(args.max_connections)}) as pg:
        url = pg.create_database("fleet")
        engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        report["max_connections"] = int(_scalar(engine, "SHOW max_connections"))
        init(url)
        print(f"== store: bulk-loading {args.runs:,} runs", flush=True)
        report["store"] = bulk_load(engine, url, args.runs)
        s = report["store"]
        print(f"  {s['runs']:,} runs in {s['results']:,} results, loaded in {s['load_s']} s")
        print(f"== fleet: {args.workers} workers, {args.jobs} jobs", flush=True)
        report["fleet"] = f = run_fleet(url, engine, args.workers, args.jobs, Path(tmp))
        print(f"  {f['workers']} workers idle after {f['workers_start_s']} s; {f['jobs']} jobs "
              f"({f['failed']} failed) in {f['jobs_s']} s: {f['jobs_per_s']} jobs/s")
        print(f"  connections, idle: at most {f['idle_peak_connections_per_worker']} per worker, "
              f"{f['idle_peak_connections_all']} in all; while working: at most "
              f"{f['peak_connections_per_worker']} per worker (its job's process included), "
              f"{f['peak_connections_all']} in all (of {report['max_connections']})")
        print(f"  SIGTERM to every worker at once: all stopped after "
              f"{f['all_stopped_after_sigterm_s']} s")
        print("== queries", flush=True)
        q = report["queries_s"] = {
            "detect -b bulk-007": _timed(["detect", "-b", "bulk-007"], url),
            "detect -b bulk-007 --since 30d": _timed(["detect", "-b", "bulk-007", "--since",
                                                      "30d"], url),
            "detect --since 7d": _timed(["detect", "--since", "7d"], url),
            "report --submission": _timed(["report", "--submission", f["submissions"][0],
                                           "--no-plots"], url),
        }
        for k, v in q.items():
            print(f"  {k}: {v} s")
        engine.dispose()
    report["load_after"] = load()
    print(f"  load {report['load_before']} -> {report['load_after']}")
    save_figures(report, "fleet-scale", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
