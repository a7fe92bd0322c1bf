"""perflab's own CPU time per command, as ratios to Python's in the same run (issue 35's goals):

  perflab --version, perflab --help          <= 4 x  python -c pass
  perflab stat --help, results list --help   <= 4 x  python -c pass (a help kept once printed)
  perflab stat -r 1 -w 0 -- true (SQLite)    <= 2.5 x python -c "import numpy"
  perflab results list, results show ID      <= 1.5 x python -c "import numpy"
  perflab fleet status (PostgreSQL)          <= 1.5 x python -c "import numpy"
  perflab fleet submit of one job            <= 3 x   python -c "import numpy"
  detect -b B, report ID --no-plots on a store of 1,000 results
                                             <= 2 x the same on 100 results, for a store of
                                                one benchmark and for one benchmark's 100
                                                results among 900 of nine others
  stat -r 1 -w 0 -- true beside two CPU-bound neighbours (--busy)
                                             <= 3 x its quiet wall time (median of --runs
                                                calls, quiet and busy measured in turn)

Beside them, against stat's goal: the floors of stat's libraries (`import typer.main,
rich.progress, numpy` with and without sqlalchemy), what no cut in perflab can go below; and
against the fleet's goals, the floors of fleet status (typer, rich and psycopg reading one
row) and of fleet submit (typer, rich and procrastinate, which loads psycopg).

Figures (2026-11-28 06:55-07:04 UTC, 2 CPUs at load 7-17, PYTHONDONTWRITEBYTECODE=1, perflab's
bytecode compiled, --runs 3 --rounds 3; docs/benchmarks.md has the table and where the rest
goes): --version 2.0 x pass, --help 2.1 x, stat --help 2.3 x, results list --help 2.3 x (help
texts kept once typer printed them; typer drawing it: 18 x) (met); results list 1.21 x numpy
(met); results show 6.5 x, fleet status 4.6 x, stat -r 1 5.1 x, fleet submit 5.6 x (not met);
detect 1,000 / 100 results 1.37 x, detect -b 1.02 x, report 0.96 x (met).  The help cases are
called once before they are measured, so the figures are of a help already kept.

CPU time is perf stat's task-clock (user + system CPU of the command and its children): a busy
machine stretches wall time but hardly the CPU a command needs, so the figures hold beside other
work.  Each case is `perf stat -r RUNS -e task-clock` (the mean of RUNS runs); the whole list is
measured ROUNDS times in turn and each ratio is the median over the rounds of the ratio within a
round, so a change of load between rounds moves both sides.  Bytecode: the figures are for the
environment as given (PYTHONDONTWRITEBYTECODE as set); whether perflab's own modules had
compiled bytecode is printed beside them (`make setup` compiles them).  Run by `make bench`.

Usage: python benchmarks/startup.py [--runs 5] [--rounds 3] [--no-fleet] [--busy] [--out FILE]
Figures are written to benchmarks/startup-<date>.json (or --out).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import Neighbours, load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

import perflab  # noqa: E402

PASS, NUMPY = "python -c pass", "python -c 'import numpy'"
# case -> (baseline case, at most this many times it)
GOALS: dict[str, tuple[str, float]] = {
    "--version": (PASS, 4.0),
    "--help": (PASS, 4.0),
    "stat --help": (PASS, 4.0),
    "results list --help": (PASS, 4.0),
    "stat -r 1 -w 0 -- true": (NUMPY, 2.5),
    "results list": (NUMPY, 1.5),
    "results show 1": (NUMPY, 1.5),
    "fleet status": (NUMPY, 1.5),
    "fleet submit (one job)": (NUMPY, 3.0),
    "detect (1,000 results of b00)": ("detect (100 results of b00)", 2.0),
    "detect -b b00 (100 of 1,000 results)": ("detect (100 results of b00)", 2.0),
    "report 1 --no-plots (1,000 results)": ("report 1 --no-plots (100 results)", 2.0),
    "floor: stat's libraries": (NUMPY, 2.5),
    "floor: stat's libraries but SQLAlchemy": (NUMPY, 2.5),
    "floor: fleet status's libraries": (NUMPY, 1.5),
    "floor: fleet submit's libraries": (NUMPY, 3.0),
}


def task_clock_ms(argv: list[str], runs: int) -> float:
    """The mean task-clock of RUNS runs of argv, in ms (perf stat's CSV output)."""
    out = subprocess.run(["perf", "stat", "-r", str(runs), "-x", ",", "-e", "task-clock", "--",
                          *argv], capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL)
    for line in out.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("task-clock"):
            return float(fields[0])
    raise RuntimeError(f"no task-clock in perf stat's output: {out.stderr[-500:]}")


def fill_store(path: Path, mine: int, others: int) -> None:
    """MINE results of benchmark b00 (one per commit), then OTHERS results of nine other
    benchmarks; each series steps up half way along it."""
    from perflab.model import Configuration, ResultSet, Run
    from perflab.storage import Store

    store = Store(path)
    names = ["b00"] * mine + [f"b{1 + i % 9:02d}" for i in range(others)]
    for i, name in enumerate(names):
        rs = ResultSet(kind="stat", commit=f"{i:040x}", dirty=False, status="complete",
                       created_at=1.0e9 + i * 60, fingerprint={"hostname": "bench"})
        cfg = Configuration(name="A", command=["x"], benchmark=name)
        step = 1.0 if i < (mine if name == "b00" else mine + others) / 2 else 1.2
        cfg.runs = [Run(seq=j, values={"wall_time": step + 0.001 * ((i * 7 + j) % 5),
                                       "task_clock": step * 0.9}) for j in range(10)]
        rs.configurations.append(cfg)
        store.save(rs)


def announce_machine(pg_url: str) -> None:
    """A worker's row named "startup" (no worker runs): `fleet submit -M startup` queues to it."""
    from perflab.fingerprint import machine_fingerprint
    from perflab.fleet.queue import fleet_store
    from perflab.fleet.worker import announce

    announce(fleet_store(pg_url), "startup", [], machine_fingerprint(probe_pmu=False))


def cases(exe: str, tmp: Path, pg_url: str | None) -> dict[str, list[str]]:
    py = sys.executable
    sqlite = tmp / "r.sqlite"
    subprocess.run([exe, "compare", "-r", "6", "--db", str(sqlite), "--", "true",
                    "sleep 0.001"], check=True, capture_output=True)
    small, large, mixed = tmp / "s100.sqlite", tmp / "s1000.sqlite", tmp / "mixed.sqlite"
    fill_store(small, 100, 0)
    fill_store(large, 1000, 0)
    fill_store(mixed, 100, 900)
    out: dict[str, list[str]] = {
        PASS: [py, "-c", "pass"],
        NUMPY: [py, "-c", "import numpy"],
        # the libraries' floors, no goal: what stat imports with and without its store's
        "floor: stat's libraries": [py, "-c", "import typer.main, rich.progress, numpy, "
                                    "sqlalchemy"],
        "floor: stat's libraries but SQLAlchemy": [py, "-c", "import typer.main, rich.progress, "
                                                   "numpy"],
        "--version": [exe, "--version"],
        "--help": [exe, "--help"],
        "stat --help": [exe, "stat", "--help"],
        "results list --help": [exe, "results", "list", "--help"],
        "--help (drawn by typer: PERFLAB_HELP_CACHE=0)": ["env", "PERFLAB_HELP_CACHE=0", exe,
                                                         "--help"],
        "stat -r 1 -w 0 -- true": [exe, "stat", "-r", "1", "-w", "0", "--db", str(sqlite),
                                   "--", "true"],
        "results list": [exe, "results", "list", "--db", str(sqlite)],
        "results show 1": [exe, "results", "show", "1", "--db", str(sqlite)],
        "report 1 --no-plots (a compare)": [exe, "report", "1", "--no-plots", "--db",
                                            str(sqlite), "--out", str(tmp / "rep")],
    }
    for argv in (out["--help"], out["stat --help"], out["results list --help"]):
        # the first call prints typer's help and keeps it (perflab.cli.helpcache); the
        # figures are of the calls after, as a user's second --help
        subprocess.run(argv, check=True, capture_output=True)
    if pg_url:
        # the libraries' floors of the fleet's verbs, no perflab code: the command line's
        # (typer, rich) with psycopg reading one row (status) or procrastinate (submit)
        out["floor: fleet status's libraries"] = [
            py, "-c", f"import typer.main, rich.table, psycopg; psycopg.connect({pg_url!r})"
            ".execute('select 1')"]
        out["floor: fleet submit's libraries"] = [py, "-c", "import typer.main, rich.table, "
                                                  "procrastinate"]
        out["fleet status"] = [exe, "fleet", "status", "--db", pg_url]
        out["fleet submit (one job)"] = [exe, "fleet", "submit", "-M", "startup", "--db",
                                         pg_url, "--", "stat", "-r", "5", "--", "/bin/true"]
    for label, db in (("100 results of b00", small), ("1,000 results of b00", large)):
        out[f"detect ({label})"] = [exe, "detect", "--db", str(db)]
    out["detect -b b00 (100 of 1,000 results)"] = [exe, "detect", "-b", "b00", "--db",
                                                   str(mixed)]
    for label, db in (("100 results", small), ("1,000 results", mixed)):
        out[f"report 1 --no-plots ({label})"] = [exe, "report", "1", "--no-plots", "--db",
                                                 str(db), "--out", str(tmp / "rep-s")]
    return out


def measure(argvs: dict[str, list[str]], runs: int, rounds: int) -> dict[str, list[float]]:
    ms: dict[str, list[float]] = {name: [] for name in argvs}
    for r in range(rounds):
        for name, argv in argvs.items():
            ms[name].append(task_clock_ms(argv, runs))
        print(f"round {r + 1}/{rounds} done, load {load()}", file=sys.stderr)
    return ms


BUSY_GOAL = 3.0  # wall time of stat -r 1 beside two CPU-bound neighbours, x its quiet one


def wall_s(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0


def busy_figure(argv: list[str], runs: int, rounds: int) -> dict[str, Any]:
    """Wall time of ARGV quiet and beside two CPU-bound neighbours (benchmarks/neighbours.py),
    in turn ROUNDS times (RUNS calls each, their median): the median of the busy / quiet ratios
    within a round, against BUSY_GOAL."""
    quiet: list[float] = []
    busy: list[float] = []
    loads: list[list[float]] = []
    for _ in range(rounds):
        quiet.append(statistics.median(wall_s(argv) for _ in range(runs)))
        with Neighbours(2):
            busy.append(statistics.median(wall_s(argv) for _ in range(runs)))
            loads.append(load())
    ratio = statistics.median(b / q for b, q in zip(busy, quiet, strict=True))
    row = {"quiet_s": [round(q, 3) for q in quiet], "busy_s": [round(b, 3) for b in busy],
           "load_busy": loads, "ratio": round(ratio, 2), "goal": BUSY_GOAL,
           "met": ratio <= BUSY_GOAL}
    print(f"{'stat -r 1 wall, busy / quiet':40} {statistics.median(busy):8.3f} s / "
          f"{statistics.median(quiet):.3f} s  {ratio:5.2f} x  (goal <= {BUSY_GOAL}: "
          f"{'met' if row['met'] else 'NOT met'}; load beside the neighbours {loads})")
    return row


def summarise(ms: dict[str, list[float]]) -> dict[str, Any]:
    """Per case: the median CPU ms and, where it has a goal, the median ratio to its baseline
    within a round and whether the goal is met."""
    out: dict[str, Any] = {}
    for name, values in ms.items():
        row: dict[str, Any] = {"cpu_ms": round(statistics.median(values), 1)}
        if name in GOALS:
            base, goal = GOALS[name]
            ratio = statistics.median(v / b for v, b in zip(values, ms[base], strict=True))
            row.update(ratio=round(ratio, 2), baseline=base, goal=goal, met=ratio <= goal)
        out[name] = row
        goal_text = (f"  {row['ratio']:5.2f} x {row['baseline']}  (goal <= {row['goal']}: "
                     f"{'met' if row['met'] else 'NOT met'})" if "ratio" in row else "")
        print(f"{name:40} {row['cpu_ms']:8.1f} ms CPU{goal_text}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="perf stat -r of each case")
    ap.add_argument("--rounds", type=int, default=3, help="times the whole list is measured")
    ap.add_argument("--no-fleet", action="store_true",
                    help="skip fleet status and submit (PostgreSQL)")
    ap.add_argument("--busy", action="store_true",
                    help="also the wall time of stat -r 1 beside two CPU-bound neighbours")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not shutil.which("perf"):
        print("startup: perf is not installed (make setup installs it)", file=sys.stderr)
        return 1
    exe = str(Path(sys.executable).parent / "perflab")
    origin = importlib.util.find_spec("perflab.cli").origin  # type: ignore[union-attr]
    compiled = Path(importlib.util.cache_from_source(str(origin))).exists()
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": load(),
        "perflab": str(Path(perflab.__file__).parent), "perflab_bytecode_compiled": compiled,
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        "runs": args.runs, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as tmpd, ExitStack() as stack:
        pg_url = None
        if not args.no_fleet:
            from perflab.fleet.localpg import LocalPostgres

            pg = stack.enter_context(LocalPostgres(fsync=True))
            pg_url = pg.create_database("startup")
            subprocess.run([exe, "fleet", "init", "--db", pg_url], check=True,
                           capture_output=True)
            announce_machine(pg_url)
        argvs = cases(exe, Path(tmpd), pg_url)
        ms = measure(argvs, args.runs, args.rounds)
        report["load_after"] = load()
        report["cases"] = summarise(ms)
        if args.busy:
            report["busy"] = busy_figure(argvs["stat -r 1 -w 0 -- true"], args.runs,
                                         args.rounds)
    print(f"load {report['load_before']} -> {report['load_after']}; PYTHONDONTWRITEBYTECODE="
          f"{report['PYTHONDONTWRITEBYTECODE'] or '(unset)'}; perflab's bytecode compiled: "
          f"{compiled}")
    save_figures(report, "startup", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
