"""The fleet's own costs on this machine (part of `make bench`; prints figures, asserts nothing).

  queue   a worker waits on a real PostgreSQL server; jobs (`stat -r 6 -- true`) are submitted
          one at a time.  Per job: submit -> the worker takes it (procrastinate's LISTEN/NOTIFY
          + fetch), and submit -> the first run is stored (+ starting `python -m perflab`, the
          fingerprint, and one run of `true`).
  store   runs written one by one (each its own transaction, as a measurement writes them):
          runs/s into a SQLite file and into PostgreSQL (fsync on, the server's defaults), by
          one writer and by four writer processes at once.

Both under each condition: quiet (nothing started by the benchmark; the load average is
recorded) and load (two CPU-bound busy loops the benchmark starts and stops itself).

Usage: python benchmarks/fleet.py [--jobs 10] [--runs 1500] [--conditions quiet,load]
         [--out benchmarks/fleet-<date>.json]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from perflab.fleet.localpg import LocalPostgres
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store, fleet_jobs, results, runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import Neighbours, load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

ROOT = Path(__file__).resolve().parents[1]


# -- queue ----------------------------------------------------------------------------------------
def bench_queue(url: str, jobs: int) -> dict[str, Any]:
    from perflab.fleet.conn import FleetConn
    from perflab.fleet.queue import init, submit

    store = init(url)
    log = open(Path(tempfile.gettempdir()) / "perflab-bench-worker.log", "w")  # noqa: SIM115
    worker = subprocess.Popen([sys.executable, "-m", "perflab", "worker", "--name", "bench",
                               "--db", url, "--heartbeat", "2"],
                              stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not store.read(lambda c: c.execute(
                sa.text("SELECT 1 FROM fleet_workers WHERE name='bench'")).first()):
            time.sleep(0.1)
        time.sleep(3.0)  # the worker is in its loop, polling its queue
        picked, first_run = [], []
        for _ in range(jobs):
            t0 = time.time()
            with FleetConn(url) as conn:
                _, queued = submit(conn, ["stat", "-r", "6", "--", "true"], ["bench"], [], False)
            job = queued[0][1]
            give_up = time.monotonic() + 300
            while True:
                if worker.poll() is not None or time.monotonic() > give_up:
                    raise SystemExit(f"the worker stopped or hangs: see {log.name}")
                row = store.read(lambda c, job=job: c.execute(
                    sa.select(fleet_jobs.c.state, fleet_jobs.c.started_at)
                    .where(fleet_jobs.c.job_id == job)).first())
                if row and row[0] in ("done", "failed"):
                    break
                time.sleep(0.05)
            first = store.read(lambda c, job=job: c.execute(
                sa.select(sa.func.min(runs.c.started_at)).select_from(
                    runs.join(sa.table("configurations", sa.column("id"),
                                       sa.column("result_id")),
                              sa.text("configurations.id = runs.configuration_id"))
                    .join(results, sa.text("results.id = configurations.result_id")))
                .where(results.c.fleet_job == job)).scalar())
            picked.append(row[1] - t0)
            first_run.append(first - t0)
        return {"jobs": jobs, "submit_to_picked_s": _stats(picked),
                "submit_to_first_run_s": _stats(first_run)}
    finally:
        worker.terminate()
        worker.wait(60)
        log.close()


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 4), "min": round(xs[0], 4),
            "max": round(xs[-1], 4)}


# -- store ----------------------------------------------------------------------------------------
def _result() -> ResultSet:
    rs = ResultSet(kind="stat", fingerprint={"hostname": "bench", "cpu_model": "x"})
    rs.configurations.append(Configuration(name="a", command=["true"], benchmark="true"))
    return rs


def _writer(url: str, n: int, out: Any) -> None:
    store = Store(url)
    rs = _result()
    rid = store.begin_result(rs)
    cid = store.add_configuration(rid, rs.configurations[0])
    t0 = time.perf_counter()
    for i in range(n):
        store.add_run(cid, Run(seq=i, values={"wall_time": 0.001, "task_clock": 0.0009,
                                              "max_rss": 1234.0}, started_at=time.time()))
    out.put(time.perf_counter() - t0)


def bench_store(url: str, n: int, writers: int) -> float:
    """Runs per second over all writers (each writes n runs, one transaction each)."""
    Store(url, create=True).engine.dispose()
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, n, q)) for _ in range(writers)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    wall = time.perf_counter() - t0
    spans = [q.get() for _ in procs]
    # the writing span (excludes process start-up): the slowest writer's
    return round(n * writers / max(spans), 1) if spans else n * writers / wall


def run_condition(pg: LocalPostgres, tmp: Path, jobs: int, n: int, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": load()}
    out["queue"] = bench_queue(pg.create_database(f"queue_{tag}"), jobs)
    out["store_runs_per_s"] = {
        "sqlite_1_writer": bench_store(str(tmp / f"{tag}-1.sqlite"), n, 1),
        "postgresql_1_writer": bench_store(pg.create_database(f"store1_{tag}"), n, 1),
        "sqlite_4_writers": bench_store(str(tmp / f"{tag}-4.sqlite"), n // 4, 4),
        "postgresql_4_writers": bench_store(pg.create_database(f"store4_{tag}"), n // 4, 4),
    }
    out["load_after"] = load()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1500)
    ap.add_argument("--conditions", default="quiet,load")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as tmpd, LocalPostgres(fsync=True) as pg:
        tmp = Path(tmpd)
        for cond in args.conditions.split(","):
            print(f"== {cond}", flush=True)
            if cond == "load":
                with Neighbours(2):
                    report[cond] = run_condition(pg, tmp, args.jobs, args.runs, cond)
            else:
                report[cond] = run_condition(pg, tmp, args.jobs, args.runs, cond)
            r = report[cond]
            q = r["queue"]
            print(f"  queue, {q['jobs']} jobs one at a time: submit -> picked up "
                  f"{q['submit_to_picked_s']['median'] * 1e3:.0f} ms median "
                  f"({q['submit_to_picked_s']['min'] * 1e3:.0f}-"
                  f"{q['submit_to_picked_s']['max'] * 1e3:.0f}); submit -> first run stored "
                  f"{q['submit_to_first_run_s']['median']:.2f} s median "
                  f"({q['submit_to_first_run_s']['min']:.2f}-"
                  f"{q['submit_to_first_run_s']['max']:.2f})")
            for k, v in r["store_runs_per_s"].items():
                print(f"  store {k}: {v:,.0f} runs/s")
            print(f"  load {r['load_before']} -> {r['load_after']}")
    save_figures(report, "fleet", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
