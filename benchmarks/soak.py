"""Soak: concurrent writers killed at random; every acknowledged run must be stored exactly once.

10 writer processes measure `/bin/true` through perflab's real path (runner.measure: the fork
server, one transaction per launcher batch of rounds) into ONE store, 500 runs per writer slot.
Once a second the benchmark SIGKILLs one writer at random and starts a new process for that
slot with the runs it still owes (the victim is drawn among the writers storing runs at that
moment).  A writer acknowledges a run (prints its id) only after the store has committed it
(the runner's on_stored, called after each batch's transaction).

At the end it checks, for SQLite and (when PostgreSQL is installed) a real PostgreSQL server:
- every acknowledged run is in the store, exactly once (same id, result and seq; no duplicate
  (result, seq) anywhere);
- runs stored but never acknowledged (committed in the instant before a kill) are at most one
  batch per kill (the most runs a writer acknowledged at once);
- no result reads "running" afterwards (killed writers' results read "interrupted");
- no measured command or launcher is left running; SQLite's integrity_check says ok.

Part of `make bench`; prints figures, writes benchmarks/soak-<date>.json.

Usage: python benchmarks/soak.py [--writers 10] [--runs 500] [--kill-every 1.0]
         [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


# -- the writer (a child process) -----------------------------------------------------------------

def writer(db: str, runs: int, slot: int) -> int:
    from rich.console import Console

    from perflab.model import Configuration, ResultSet
    from perflab.runner import MeasureOptions, Watchers, measure
    from perflab.storage import Store

    store = Store(db)
    rs = ResultSet(kind="stat", label=f"soak slot {slot}", fingerprint={"hostname": "soak"},
                   created_at=time.time())
    cfg = Configuration(name="true", command=["/bin/true"], benchmark="soak", is_baseline=True)
    opts = MeasureOptions(warmup=0, runs=runs, counters="none", region=False)

    # The runner runs batches of rounds through the fork server, recording (on_run) a batch's
    # runs before storing them in one transaction; a run is acknowledged from on_stored, which
    # the runner calls once their transaction is committed.
    def ack(runs: list[Any]) -> None:
        for run in runs:
            assert run.id is not None, "acknowledged before it was stored"
            sys.stdout.write(f"ack {rs.id} {run.seq} {run.id}\n")
        sys.stdout.write(f"batch {len(runs)}\n")
        sys.stdout.flush()

    measure(rs, [cfg], opts, store=store,
            watchers=Watchers(console=Console(stderr=True, quiet=True), on_stored=ack))
    return 0


# -- the soak (parent) ----------------------------------------------------------------------------

def _die_with_parent() -> None:
    """Writers end with the soak (PR_SET_PDEATHSIG), also when the soak is stopped early."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def soak(db: str, writers: int, runs: int, kill_every: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    owed = {s: runs for s in range(writers)}
    acks: dict[int, tuple[int, int, int]] = {}  # run id -> (slot, result id, seq)
    procs: dict[int, subprocess.Popen[bytes]] = {}
    buf: dict[int, bytes] = {}
    acked_since_start: dict[int, int] = {}
    kills = restarts = 0
    most = [1]  # the most runs one transaction acknowledged
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PERFLAB_SOAK_TOKEN": TOKEN}

    def start(slot: int) -> None:
        p = subprocess.Popen([sys.executable, __file__, "--writer", "--db", db, "--runs",
                              str(owed[slot]), "--slot", str(slot)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent)
        procs[slot] = p
        buf[slot] = b""
        acked_since_start[slot] = 0

    def drain(slot: int, final: bool = False) -> None:
        p = procs[slot]
        assert p.stdout is not None
        fd = p.stdout.fileno()
        while True:
            r, _, _ = select.select([fd], [], [], 0)
            if not r:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf[slot] += chunk
        *lines, buf[slot] = buf[slot].split(b"\n")
        for ln in lines:
            parts = ln.split()
            if len(parts) == 4 and parts[0] == b"ack":
                rid, seq, run_id = (int(x) for x in parts[1:])
                assert run_id not in acks, f"run id {run_id} acknowledged twice"
                acks[run_id] = (slot, rid, seq)
                owed[slot] -= 1
                acked_since_start[slot] += 1
            elif len(parts) == 2 and parts[0] == b"batch":
                most[0] = max(most[0], int(parts[1]))

    t0 = time.monotonic()
    load_before = load()
    for s in range(writers):
        start(s)
    next_kill = time.monotonic() + kill_every
    next_note = time.monotonic() + 15
    skipped = 0
    while procs:
        for s in list(procs):
            drain(s)
            if procs[s].poll() is not None:
                drain(s, final=True)
                del procs[s]
                if owed[s] > 0:  # killed (or failed): a new writer takes over the slot
                    restarts += 1
                    start(s)
        if procs and time.monotonic() >= next_kill:
            # Among the writers that are storing runs (a writer still starting up has nothing
            # in flight; killing those only would starve the soak on a slow machine).
            writing = [s for s in procs if acked_since_start[s] > 0]
            if writing:
                procs[rng.choice(writing)].send_signal(signal.SIGKILL)
                kills += 1
            else:
                skipped += 1
            next_kill += kill_every
        if time.monotonic() >= next_note:
            print(f"  {len(acks)} of {writers * runs} runs acknowledged, {kills} kills "
                  f"(load {load()[0]})", flush=True)
            next_note += 15
        time.sleep(0.01)
    seconds = time.monotonic() - t0
    return {"acks": acks, "kills": kills, "largest_batch": most[0],
            "kills_skipped_none_writing": skipped,
            "restarts": restarts, "seconds": round(seconds, 1),
            "load_before": load_before, "load_after": load()}


def check(db: str, acks: dict[int, tuple[int, int, int]], kills: int,
          largest_batch: int = 1) -> dict[str, Any]:
    import sqlalchemy as sa

    from perflab.storage import Store, configurations, results, runs

    store = Store(db)
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(runs.c.id, configurations.c.result_id, runs.c.seq)
                            .select_from(runs.join(configurations))).all()
        statuses = [r["status"] for r in store.list_results(limit=100000)]
        n_results = conn.execute(sa.select(sa.func.count()).select_from(results)).scalar()
    stored = {int(r[0]): (int(r[1]), int(r[2])) for r in rows}
    pairs: dict[tuple[int, int], int] = {}
    for v in stored.values():
        pairs[v] = pairs.get(v, 0) + 1
    missing = [i for i in acks if i not in stored]
    wrong = [i for i, (_, rid, seq) in acks.items() if i in stored and stored[i] != (rid, seq)]
    duplicates = sum(n - 1 for n in pairs.values() if n > 1)
    unacked = len(stored) - len(acks) + len(missing)
    integrity = "n/a"
    if store.is_sqlite:
        import sqlite3

        con = sqlite3.connect(store.location)
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
    return {"acknowledged": len(acks), "stored": len(stored), "missing": len(missing),
            "wrong": len(wrong), "duplicates": duplicates, "stored_unacknowledged": unacked,
            "unacknowledged_within_kills": unacked <= kills * largest_batch,
            "results": int(n_results or 0),
            "running_after": statuses.count("running"),
            "interrupted_after": statuses.count("interrupted"), "integrity": integrity}


TOKEN = f"perflab-soak-{os.getpid()}-{time.time_ns()}"


def leftovers() -> int:
    """Processes of this soak (launchers, measured commands, writers) still alive: they carry
    the soak's token in their environment.  Zombies are dead."""
    n = 0
    needle = f"PERFLAB_SOAK_TOKEN={TOKEN}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            environ = (d / "environ").read_bytes()
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--db", default="")
    ap.add_argument("--slot", type=int, default=0)
    ap.add_argument("--writers", type=int, default=10)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--kill-every", type=float, default=1.0)
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.writer:
        return writer(args.db, args.runs, args.slot)

    from rich.table import Table

    from perflab.console import stdout_console

    console = stdout_console()
    report: dict[str, Any] = {
        "command": " ".join(["soak.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "writers": args.writers, "runs_per_writer": args.runs, "kill_every_s": args.kill_every,
        "cpus": os.cpu_count()}
    ok = True
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix="perflab-soak-") as tmp:
            pg = None
            if backend == "sqlite":
                db = str(Path(tmp) / "soak.sqlite")
            else:
                try:
                    from perflab.fleet.localpg import LocalPostgres, pg_bindir
                except ImportError:
                    console.print("postgresql: skipped (perflab[fleet] not installed)")
                    continue
                if pg_bindir() is None:
                    console.print("postgresql: skipped (PostgreSQL not installed)")
                    continue
                pg = LocalPostgres(fsync=True).start()
                db = pg.create_database("soak")
            try:
                from perflab.storage import Store

                Store(db, create=True).engine.dispose()
                console.print(f"[bold]{backend}[/]: {args.writers} writers x {args.runs} runs, "
                              f"SIGKILL every {args.kill_every:g} s (load {load()})",
                              highlight=False)
                s = soak(db, args.writers, args.runs, args.kill_every, args.seed)
                c = check(db, s["acks"], s["kills"], s["largest_batch"])
                time.sleep(0.5)
                c["launchers_left"] = leftovers()
            finally:
                if pg is not None:
                    pg.stop()
        good = (c["missing"] == 0 and c["wrong"] == 0 and c["duplicates"] == 0
                and c["unacknowledged_within_kills"] and c["running_after"] == 0
                and c["launchers_left"] == 0 and c["integrity"] in ("ok", "n/a")
                and c["acknowledged"] == args.writers * args.runs)
        ok &= good
        report[backend] = {**{k: v for k, v in s.items() if k != "acks"}, **c,
                           "runs_per_s": round(c["acknowledged"] / s["seconds"], 1),
                           "verdict": "pass" if good else "FAIL"}

    t = Table(title=f"soak: every acknowledged run stored exactly once ({report['date']})",
              header_style="bold", title_justify="left")
    for col in ("backend", "acked", "missing", "dup", "stored unacked", "kills", "running after",
                "launchers left", "runs/s", "load", "verdict"):
        t.add_column(col)
    for backend in ("sqlite", "postgresql"):
        r = report.get(backend)
        if r:
            t.add_row(backend, str(r["acknowledged"]), str(r["missing"]), str(r["duplicates"]),
                      str(r["stored_unacknowledged"]), str(r["kills"]), str(r["running_after"]),
                      str(r["launchers_left"]), f"{r['runs_per_s']:.0f}",
                      f"{r['load_before'][0]:.1f}->{r['load_after'][0]:.1f}", r["verdict"])
    console.print(t)
    out = args.out or Path(__file__).parent / f"soak-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"written to {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
