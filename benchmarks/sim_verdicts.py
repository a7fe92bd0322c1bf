"""Simulated guarantees of bisect and detect: seeded runs through perflab's own decision path
(perflab.history.simulate: the Bisector's StepRule, stats.bisect_step at stats.bisect_levels,
the band from the check; detect_series then across_machines), noise drawn instead of measured.

Goals (issue 33):
  bisect, a true 8% step at 5% noise a run: the right commit named in >= 90% of bisects;
  unchanged commits judged good in >= 80% of steps, wrongly bad in <= 1%.
  detect: a +14% step with 3 points each side on 3 machines found (as a step) on every
  machine; flat series of 6-50 points: a tiny rate of false points; a slow 5% drift over 50
  points reported as drift.

Usage: python benchmarks/sim_verdicts.py [--quick] [--out FILE]
Prints the table (model, n, rate, 95% Wilson CI, goal, met?) and writes it as JSON to
benchmarks/sim-verdicts-<date>.json (or --out).  Run by `make bench`; a few minutes on 2 CPUs
(--quick: a fifth of the trials).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

from perflab.console import stdout_console  # noqa: E402
from perflab.history.simulate import bisect_trial, detect_fleet  # noqa: E402
from perflab.table import Column, Table  # noqa: E402


@dataclass
class Row:
    model: str
    n: int  # trials the rate is over
    hits: int
    goal: str  # ">= 0.90", "<= 0.01", or "" (reported, no goal)
    note: str = ""

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    @property
    def ci(self) -> tuple[float, float]:
        c = binomtest(self.hits, self.n).proportion_ci(0.95, method="wilson")
        return float(c.low), float(c.high)

    @property
    def met(self) -> str:
        if not self.goal:
            return "-"
        op, bound = self.goal.split()
        return "yes" if (self.rate >= float(bound) if op == ">=" else
                         self.rate <= float(bound)) else "NO"


def bisects(rows: list[Row], trials: int, commits: int, step: float, cv: float,
            full: bool) -> None:
    rng = np.random.default_rng(int(step * 1000) + commits)
    done = [bisect_trial(rng, commits, step, cv) for _ in range(trials)]
    what = f"bisect, {step - 1:+.0%} step at CV {cv:.0%}, {commits} commits"
    runs = float(np.mean([t.runs for t in done]))
    rows.append(Row(f"{what}: right commit named", trials, sum(t.named for t in done),
                    ">= 0.90", f"{runs:.0f} runs a side per bisect"))
    if not full:
        return
    steps = [s for t in done for s in t.steps]
    same = [d for changed, d in steps if not changed]
    moved = [d for changed, d in steps if changed]
    rows.append(Row(f"{what}: unchanged commits good", len(same), same.count("good"),
                    ">= 0.80", "per step"))
    rows.append(Row(f"{what}: unchanged commits wrongly bad", len(same), same.count("bad"),
                    "<= 0.01", "per step"))
    rows.append(Row(f"{what}: changed commits bad", len(moved), moved.count("bad"),
                    ">= 0.80", "per step"))
    rows.append(Row(f"{what}: changed commits wrongly good", len(moved),
                    moved.count("good"), "<= 0.01", "per step"))


def step_fleets(rows: list[Row], trials: int, cv: float, goal: str) -> None:
    rng = np.random.default_rng(int(cv * 1000))
    shape = [1.0] * 3 + [1.14] * 3
    fleets = [detect_fleet(rng, shape, cv) for _ in range(trials)]
    every = sum(all(any(c.index == 3 and c.kind == "step" for c in cps) for cps in f)
                for f in fleets)
    rows.append(Row(f"detect, +14% step, 3+3 points at CV {cv:.1%}, 3 machines: found on "
                    "every machine", trials, every, goal))


def flat(rows: list[Row], trials: int, n: int, cv: float) -> None:
    rng = np.random.default_rng(n)
    series = [cps for _ in range(trials) for cps in detect_fleet(rng, [1.0] * n, cv)]
    rows.append(Row(f"detect, flat {n} points at CV {cv:.1%}, 3 machines: series with a "
                    "false point", len(series), sum(bool(cps) for cps in series), "<= 0.02"))


def kinds(rows: list[Row], trials: int, label: str, shape: list[float], cv: float,
          want: str, goal: str, at: Callable[[int], bool]) -> None:
    rng = np.random.default_rng(len(shape) + int(cv * 1000))
    out = [detect_fleet(rng, shape, cv, machines=1)[0] for _ in range(trials)]
    reported = [[c for c in cps if at(c.index)] for cps in out]
    hits = sum(bool(cps) and all(c.kind == want for c in cps) for cps in reported)
    found = sum(bool(cps) for cps in reported)
    rows.append(Row(f"{label}: reported as {want}", trials, hits, goal,
                    f"found at all in {found} of {trials}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a fifth of the trials")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    k = 5 if args.quick else 1
    started, load_before = time.time(), load()
    rows: list[Row] = []
    bisects(rows, 1000 // k, 16, 1.08, 0.05, full=True)
    bisects(rows, 400 // k, 64, 1.08, 0.05, full=False)
    bisects(rows, 400 // k, 16, 1.03, 0.01, full=False)
    step_fleets(rows, 1000 // k, 0.02, ">= 0.95")
    step_fleets(rows, 500 // k, 0.025, "")
    step_fleets(rows, 500 // k, 0.03, "")
    for n in (6, 10, 20, 50):
        flat(rows, 500 // k, n, 0.025)
    kinds(rows, 500 // k, "detect, 5% drift over 50 points at CV 1%",
          list(np.linspace(1.0, 1.05, 50)), 0.01, "drift", ">= 0.90", lambda i: True)
    kinds(rows, 500 // k, "detect, +5% step at point 25 of 50 at CV 2%",
          [1.0] * 25 + [1.05] * 25, 0.02, "step", "", lambda i: abs(i - 25) <= 1)
    t = Table.of("simulated guarantees: bisect and detect", [
        Column("model", "left"), "n", "rate", "95% CI (Wilson)", "goal", "met?",
        Column("note", "left")])
    for r in rows:
        lo, hi = r.ci
        goal = r.goal.replace(">=", "≥").replace("<=", "≤") or "-"
        t.add_row(r.model, str(r.n), f"{r.rate:.1%}", f"[{lo:.1%}, {hi:.1%}]", goal,
                  r.met, r.note)
    t.print(stdout_console())
    took = time.time() - started
    command = "python benchmarks/sim_verdicts.py" + (" --quick" if args.quick else "")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load_before} -> "
          f"{load()}, {took:.0f} s: {command}")
    save_figures({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command": command, "load_before": load_before, "load_after": load(),
                  "seconds": round(took, 1),
                  "rows": [{**asdict(r), "rate": r.rate, "ci95": list(r.ci), "met": r.met}
                           for r in rows],
                  "markdown": t.to_markdown()}, "sim-verdicts", args.out)
    return 0 if all(r.met != "NO" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
