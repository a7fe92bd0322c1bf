"""Per-run cost of perflab against hyperfine -N and perf stat -r, side by side in one run.

For `true` and for a ~1 ms CPU loop (tests/programs/spin.c), alternately: hyperfine -N with R
runs (its wall time divided by its runs), `perf stat -r R` counting the four software events
perflab counts (the tool that counts what perflab counts), and perflab's runner with R runs
into a SQLite store (as `perflab stat` does: counters, the timed-region channel, stored per
launcher batch; wall time of measure() divided by its runs, so Python's start-up is not
counted), with counters and without.  Each set (an alternation: the four tools back to back,
in reverse order every other time, so a drift of the machine falls on each tool alike) is
repeated; each tool's median cost is printed, with what each tool *reports* as the command's
time (median of its runs): perflab's figure for `true` should be within 0.1 ms of hyperfine's.
The goals (issue 25): perflab with counters <= 1.3x perf stat, without <= 1.15x hyperfine -N,
quiet and beside two busy neighbours (--conditions quiet,busy: both in one run).  A goal's
ratio is the median over the alternations of the ratio *within* each alternation (tools a
second or two apart, under the same load), so one alternation slowed by a burst of other work
on a shared machine moves it little; the spread of those ratios is printed beside it.

The whole command (--cli), as a user pays it: `perflab stat` storing into a SQLite store,
each cost per run taken as (T(1000 runs) - T(100 runs)) / 900 of the command's wall time (its
start-up, warm-up and summary cancel out; storing the runs is counted), beside `hyperfine -N`
(no counters, goal <= 1.15x) and `perf stat -r` counting the four software events (counters,
goal <= 1.3x), median of the per-alternation ratios (3 alternations by default).  The CPU
time per run (user + system of the command and all it waited for, the same difference) is
printed beside: on a shared machine the wall times of the 100-run calls move by more than
900 runs of `true` take, and CPU time moves far less.

usage: python benchmarks/launch_cost.py [--runs 300] [--reps 7] [--conditions quiet,busy]
                                        [--json FILE]
       python benchmarks/launch_cost.py --cli [--reps 3] [--conditions quiet,busy]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from neighbours import Neighbours, load  # benchmarks/neighbours.py
from rich.console import Console

from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, Watchers, measure
from perflab.storage import Store

ROOT = Path(__file__).resolve().parents[1]


def build_spin(tmp: Path) -> Path:
    out = tmp / "spin"
    subprocess.run(["cc", "-O1", f"-I{ROOT / 'include'}", "-o", str(out),
                    str(ROOT / "tests" / "programs" / "spin.c")], check=True)
    return out


def iterations_for(spin: Path, target_s: float) -> int:
    """Loop iterations that take about target_s (timed over many runs of a long loop)."""
    n = 20_000_000
    t0 = time.perf_counter()
    subprocess.run([str(spin), str(n)], check=True, capture_output=True)
    dt = time.perf_counter() - t0
    return max(1000, int(n * target_s / dt))


def hyperfine(argv: list[str], runs: int, warmup: int) -> tuple[float, float]:
    """(wall seconds per run, median reported time) of hyperfine -N."""
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "h.json"
        t0 = time.perf_counter()
        subprocess.run(["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs",
                        str(runs), "--export-json", str(js), " ".join(argv)], check=True,
                       capture_output=True)
        elapsed = time.perf_counter() - t0
        times = json.loads(js.read_text())["results"][0]["times"]
    return elapsed / (runs + warmup), float(np.median(times))


def perf_stat(argv: list[str], runs: int) -> tuple[float, float]:
    """(wall seconds per run, nan) of `perf stat -r` counting perflab's software events (perf
    stat reports a mean, not a median; it has no warm-up)."""
    events = "task-clock,page-faults,context-switches,cpu-migrations"
    t0 = time.perf_counter()
    subprocess.run(["perf", "stat", "-r", str(runs), "-e", events, "-x", ",", "-o", os.devnull,
                    "--", *argv], check=True, capture_output=True)
    return (time.perf_counter() - t0) / runs, float("nan")


def perflab(argv: list[str], runs: int, warmup: int, store: Store,
            counters: bool = True) -> tuple[float, float]:
    rs = ResultSet(kind="stat", fingerprint={"hostname": "bench"}, settings={})
    cfg = Configuration(name=argv[0], command=argv)
    opts = MeasureOptions(runs=runs, warmup=warmup, counters="auto" if counters else "none")
    t0 = time.perf_counter()
    measure(rs, [cfg], opts, store=store, watchers=Watchers(console=Console(quiet=True)))
    elapsed = time.perf_counter() - t0
    return elapsed / (runs + warmup), float(np.median(cfg.samples("wall_time")))


def one_set(tool: str, argv: list[str], runs: int, store: Store) -> tuple[float, float]:
    """One tool's RUNS runs of argv: (wall seconds per run, median reported time)."""
    if tool == "hyperfine":
        return hyperfine(argv, runs, 3)
    if tool == "perf_stat":
        return perf_stat(argv, runs)
    return perflab(argv, runs, 3, store, counters=tool == "perflab")


# The order of an alternation: each goal's two tools side by side (hyperfine next to perflab
# without counters, perflab with counters next to perf stat), so a goal's ratio compares sets
# made within a second or two of each other.
TOOLS = ("hyperfine", "perflab_no_counters", "perflab", "perf_stat")
# The goals' ratios: (name, numerator tool, denominator tool).
GOALS = (("counters_vs_perf_stat", "perflab", "perf_stat"),
         ("no_counters_vs_hyperfine", "perflab_no_counters", "hyperfine"),
         ("counters_vs_hyperfine", "perflab", "hyperfine"))


def run(runs: int = 300, reps: int = 7) -> dict[str, Any]:
    if not shutil.which("hyperfine"):
        return {"skipped": "hyperfine not installed"}
    tools = [t for t in TOOLS if t != "perf_stat" or shutil.which("perf")]
    out: dict[str, Any] = {"runs": runs, "reps": reps, "load_before": os.getloadavg()[0],
                           "ratios": {}}
    with tempfile.TemporaryDirectory() as tmp:
        spin = build_spin(Path(tmp))
        n = iterations_for(spin, 0.001)
        store = Store(Path(tmp) / "bench.sqlite")
        commands = {"true": [shutil.which("true") or "/bin/true"],
                    "1 ms loop": [str(spin), str(n)]}
        for label, argv in commands.items():
            rows: dict[str, list[tuple[float, float]]] = {t: [] for t in tools}
            for rep in range(reps):
                for tool in tools if rep % 2 == 0 else tools[::-1]:
                    rows[tool].append(one_set(tool, argv, runs, store))
            out[label] = {k: {"cost_per_run_s": float(np.median([c for c, _ in v])),
                              "reported_median_s": float(np.median([m for _, m in v])),
                              "cost_per_rep_s": [c for c, _ in v]}
                          for k, v in rows.items()}
            out["ratios"][label] = paired_ratios(out[label])
    out["load_after"] = os.getloadavg()[0]
    return out


def paired_ratios(rows: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each goal's ratio within each alternation, and their median (the figure) and range."""
    out: dict[str, dict[str, Any]] = {}
    for name, num, den in GOALS:
        if num in rows and den in rows:
            per = [a / b for a, b in zip(rows[num]["cost_per_rep_s"],
                                         rows[den]["cost_per_rep_s"], strict=True)]
            out[name] = {"median": float(np.median(per)), "min": min(per), "max": max(per),
                         "per_rep": per}
    return out


def run_conditions(runs: int, reps: int, conditions: list[str]) -> dict[str, Any]:
    """run() quiet and/or beside two CPU-bound neighbours (busy), in one invocation."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for cond in conditions:
        if cond == "busy":
            with Neighbours(2):
                out[cond] = run(runs, reps)
        else:
            out[cond] = run(runs, reps)
        out[cond]["load"] = load()
    return out


def ratios(r: dict[str, Any], label: str) -> dict[str, float]:
    """The goals' ratios of one command (medians of the per-alternation ratios): perflab /
    perf stat (counters), perflab without counters / hyperfine -N, perflab / hyperfine -N."""
    return {name: v["median"] for name, v in r["ratios"][label].items()}


def print_table(r: dict[str, Any], console: Console, title: str = "") -> None:
    if "skipped" in r:
        console.print(f"per-run cost: skipped ({r['skipped']})")
        return
    console.print(f"per-run cost{title}, {r['runs']} runs x {r['reps']} alternating "
                  f"repetitions, load {r['load_before']:.1f} -> {r['load_after']:.1f}")
    # "outside": cost minus the reported median, about what a run costs beyond the command's
    # own timed span (the tool's work between runs, its wake-ups and start-up, its batches).
    console.print(f"{'command':10s} {'tool':22s} {'cost/run':>10s} {'vs hf':>7s} "
                  f"{'reports':>10s} {'- hf':>9s} {'outside':>9s}")
    for label in ("true", "1 ms loop"):
        rows = r[label]
        hf = rows["hyperfine"]
        for tool, v in rows.items():
            console.print(
                f"{label:10s} {tool:22s} {v['cost_per_run_s'] * 1e3:8.3f} ms "
                f"{v['cost_per_run_s'] / hf['cost_per_run_s']:6.2f}x "
                f"{v['reported_median_s'] * 1e3:8.3f} ms "
                f"{(v['reported_median_s'] - hf['reported_median_s']) * 1e3:+7.3f} ms "
                f"{(v['cost_per_run_s'] - v['reported_median_s']) * 1e3:6.3f} ms",
                highlight=False)
        q = r["ratios"][label]
        console.print(f"{label:10s} goals (median of {r['reps']} paired alternations, range):",
                      highlight=False)
        for name, goal in (("counters_vs_perf_stat", "<= 1.3x"),
                           ("no_counters_vs_hyperfine", "<= 1.15x")):
            if name in q:
                v = q[name]
                console.print(f"{'':10s}   {name:26s} {v['median']:5.2f}x "
                              f"({v['min']:.2f}-{v['max']:.2f})  goal {goal}", highlight=False)


# --cli: the whole command's cost per run, (T(LONG) - T(SHORT)) / (LONG - SHORT) of its wall time.
SHORT, LONG = 100, 1000
SOFTWARE_EVENTS = "task-clock,page-faults,context-switches,cpu-migrations"
# name -> (numerator tool, denominator tool, goal)
CLI_GOALS = {"no counters vs hyperfine -N": ("perflab --no-counters", "hyperfine -N", 1.15),
             "counters vs perf stat -r": ("perflab", "perf stat -r", 1.3)}


def cli_argv(tool: str, runs: int, db: Path, perflab_exe: str) -> list[str]:
    true = shutil.which("true") or "/bin/true"
    if tool == "hyperfine -N":
        return ["hyperfine", "-N", "--style", "none", "--runs", str(runs), true]
    if tool == "perf stat -r":
        return ["perf", "stat", "-r", str(runs), "-e", SOFTWARE_EVENTS, "-x", ",", "-o",
                os.devnull, "--", true]
    flags = ["--no-counters"] if tool == "perflab --no-counters" else []
    return [perflab_exe, "stat", "-r", str(runs), *flags, "--db", str(db), "--", true]


def wall_and_cpu(argv: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one call: the CPU is user + system of the command and every process
    it waited for (getrusage of the children), which a busy machine stretches far less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def cli_per_run(reps: int = 3) -> dict[str, Any]:
    """Each tool's cost per run of `true`, whole command, storing included: per alternation
    (the tools in turn, reversed every other time) and the goals' ratios within each."""
    tools = ["hyperfine -N", "perflab --no-counters", "perflab", "perf stat -r"]
    exe = str(Path(sys.executable).parent / "perflab")
    out: dict[str, Any] = {"load_before": load(), "per_run_us": {t: [] for t in tools},
                           "cpu_per_run_us": {t: [] for t in tools}}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "cli.sqlite"
        for rep in range(reps):
            for tool in tools if rep % 2 == 0 else tools[::-1]:
                short = wall_and_cpu(cli_argv(tool, SHORT, db, exe))
                long = wall_and_cpu(cli_argv(tool, LONG, db, exe))
                for key, i in (("per_run_us", 0), ("cpu_per_run_us", 1)):
                    out[key][tool].append((long[i] - short[i]) / (LONG - SHORT) * 1e6)
    out["goals"], out["cpu_ratios"] = {}, {}
    for name, (num, den, goal) in CLI_GOALS.items():
        per, cpu = out["per_run_us"], out["cpu_per_run_us"]
        ratios = [a / b for a, b in zip(per[num], per[den], strict=True)]
        ratio = float(np.median(ratios))
        out["goals"][name] = {"ratio": ratio, "per_rep": ratios, "goal": goal,
                              "met": ratio <= goal}
        out["cpu_ratios"][name] = float(np.median(
            [a / b for a, b in zip(cpu[num], cpu[den], strict=True)]))
    out["load_after"] = load()
    return out


def print_cli(r: dict[str, Any], cond: str) -> None:
    print(f"whole command, ({LONG} runs - {SHORT} runs) / {LONG - SHORT}, {cond}, load "
          f"{r['load_before']} -> {r['load_after']}")
    for tool, us in r["per_run_us"].items():
        cpu = r["cpu_per_run_us"][tool]
        print(f"  {tool:24s} {float(np.median(us)):8.0f} us a run  "
              f"({', '.join(f'{u:.0f}' for u in us)}); CPU {float(np.median(cpu)):6.0f} us "
              f"({', '.join(f'{u:.0f}' for u in cpu)})")
    for name, g in r["goals"].items():
        print(f"  {name:30s} {g['ratio']:5.2f} x  (goal <= {g['goal']}: "
              f"{'met' if g['met'] else 'NOT met'}; per alternation "
              f"{', '.join(f'{x:.2f}' for x in g['per_rep'])}); in CPU "
              f"{r['cpu_ratios'][name]:.2f} x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--conditions", default="quiet",
                    help="quiet and/or busy (two CPU-bound neighbours), comma-separated")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--cli", action="store_true",
                    help="the whole `perflab stat` command's cost per run (reps default 3)")
    args = ap.parse_args()
    console = Console()
    if args.cli:
        conds = args.conditions.split(",")
        reps = 3 if args.reps == ap.get_default("reps") else args.reps
        res: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        for cond in conds:
            if cond == "busy":
                with Neighbours(2):
                    res[cond] = cli_per_run(reps)
            else:
                res[cond] = cli_per_run(reps)
            print_cli(res[cond], cond)
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
        return
    out = run_conditions(args.runs, args.reps, args.conditions.split(","))
    for cond in args.conditions.split(","):
        print_table(out[cond], console, f" ({cond}, load {out[cond]['load']})")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
