"""Simulated guarantees of compare's verdicts, bisect and detect: seeded runs through
perflab's own decision path, noise drawn instead of measured.  compare (perflab.simulate):
stats.compare_samples for a fixed --runs, at stats.look_level's levels for adaptive measuring,
stats.compare_result for a whole table; bisect (perflab.history.simulate: the Bisector's
StepRule, stats.bisect_step at stats.bisect_levels, the band from the check); detect
(detect_series then across_machines).

Goals (issue 33):
  compare, A/A: false slower/faster at most 5% (2.5% a direction) under AR(1) noise of lag-1
  up to 0.8 at every number of runs; power non-decreasing in the runs; +5% at CV 5% decided
  within 60 runs in >= 90% of adaptive measurements; an A/A table of 10 exploratory metrics:
  a false exploratory claim in at most 5% of tables.
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

from perflab import simulate  # noqa: E402
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
    also: bool = True  # a second condition of the goal, said in the note (a direction's share)

    def __post_init__(self) -> None:
        self.hits, self.also = int(self.hits), bool(self.also)  # numpy's, for the JSON

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
        return "yes" if self.also and (self.rate >= float(bound) if op == ">=" else
                                       self.rate <= float(bound)) else "NO"


def _rho(rho: float) -> str:
    return "independent" if rho == 0 else f"AR(1) rho {rho:g}"


def aa_fixed(rows: list[Row], trials: int, n: int, rho: float, cv: float = 0.02) -> None:
    """A/A, fixed --runs n: a false slower or faster against the +-1% band."""
    rng = np.random.default_rng(1000 * n + int(rho * 10))
    v = [simulate.fixed(*simulate.rounds(rng, n, cv, rho)).verdict for _ in range(trials)]
    up, down = v.count("slower"), v.count("faster")
    rows.append(Row(f"compare A/A, --runs {n}, {_rho(rho)}, CV {cv:.0%}: false slower or "
                    "faster", trials, up + down, "<= 0.05",
                    f"slower {up / trials:.1%}, faster {down / trials:.1%} (each <= 2.5%)",
                    also=max(up, down) <= 0.025 * trials))


def edge(rows: list[Row], trials: int, n: int) -> None:
    """A true +1%, on the band's edge, independent runs: a false slower."""
    rng = np.random.default_rng(2000 + n)
    v = [simulate.fixed(*simulate.rounds(rng, n, 0.01, ratio=1.01)).verdict
         for _ in range(trials)]
    rows.append(Row(f"compare +1% (the band's edge), --runs {n}, independent, CV 1%: false "
                    "slower", trials, v.count("slower"), "<= 0.025"))


def power(rows: list[Row], trials: int, ns: tuple[int, ...], ratio: float, cv: float,
          band: float, label: str) -> None:
    """Power of a fixed --runs n, independent runs; the goal: non-decreasing in n."""
    found: list[int] = []
    for n in ns:
        rng = np.random.default_rng(3000 + n)
        found.append(sum(simulate.fixed(*simulate.rounds(rng, n, cv, ratio=ratio),
                                        threshold=band).verdict in ("slower", "larger")
                         for _ in range(trials)))
    slack = 2 * np.sqrt(trials * 0.25)  # non-decreasing within 2 standard errors
    for i, (n, hits) in enumerate(zip(ns, found, strict=True)):
        dip = i > 0 and hits < found[i - 1] - slack
        rows.append(Row(f"compare {label}, --runs {n}, independent: decided", trials, hits,
                        "", "a dip from the runs before" if dip else ""))
    rises = sum(b >= a - slack for a, b in zip(found, found[1:], strict=False))
    rows.append(Row(f"compare {label}: runs {', '.join(map(str, ns))}, no dip in power",
                    len(ns) - 1, rises, ">= 1.0", "steps between them without a dip"))


def adaptive(rows: list[Row], trials: int, max_runs: int, shared: bool, ratio: float,
             cv: float, goal: str) -> None:
    """Adaptive measuring with 60 runs at most (--max-runs 60, or the budget ending at 60 runs
    of the default --max-runs 1000)."""
    rng = np.random.default_rng(4000 + max_runs + shared)
    done = [simulate.adaptive(*simulate.rounds(rng, 60, cv, ratio=ratio, shared=shared),
                              max_runs=max_runs) for _ in range(trials)]
    how = "--max-runs 60" if max_runs == 60 else "the budget ends at 60 runs (--max-runs 1000)"
    noise = "shared drift + independent" if shared else "independent"
    if ratio == 1.0:
        hits = sum(d.verdict in ("slower", "faster") for d in done)
        what = f"adaptive A/A, {how}, {noise}, CV {cv:.0%}: false slower or faster"
    else:
        hits = sum(d.verdict == "slower" for d in done)
        what = f"adaptive {ratio - 1:+.0%} at CV {cv:.0%}, {how}, {noise}: decided slower"
    rows.append(Row(what, trials, hits, goal,
                    f"{np.mean([d.runs for d in done]):.0f} runs a side on average"))


def tables(rows: list[Row], trials: int, n: int, rho: float, goal: str) -> None:
    """A/A tables of a primary and 10 exploratory metrics (compare_result's families)."""
    rng = np.random.default_rng(5000 + n + int(rho * 10))
    out = [simulate.false_claims(simulate.table(rng, n, 0.02, rho, 10)) for _ in range(trials)]
    primary = sum(p for _, p in out)
    either = sum(e or p for e, p in out)
    rows.append(Row(f"compare A/A table, 10 exploratory metrics, --runs {n}, {_rho(rho)}, CV "
                    "2%: tables with a false exploratory claim", trials,
                    sum(e for e, _ in out), goal,
                    f"primary {primary / trials:.1%}, any metric {either / trials:.1%}"))


def compare_rows(rows: list[Row], k: int) -> None:
    for rho in (0.0, 0.5, 0.8):
        for n in (6, 10, 20, 40):
            aa_fixed(rows, 2000 // k, n, rho)
    for n in (10, 20):
        edge(rows, 2000 // k, n)
    power(rows, 1000 // k, (6, 10, 14, 20, 32), 1.03, 0.01, 0.01, "+3% at CV 1%")
    power(rows, 1000 // k, (6, 10, 20, 32), 1.005, 0.001, 0.002,
          "memory +0.5% at CV 0.1% (band 0.2%)")
    for max_runs in (60, 1000):
        adaptive(rows, 1000 // k, max_runs, False, 1.05, 0.05, ">= 0.90")
    for max_runs in (60, 1000):
        adaptive(rows, 500 // k, max_runs, True, 1.05, 0.05, "")
    adaptive(rows, 1000 // k, 60, False, 1.0, 0.02, "<= 0.05")
    for n, rho, goal in ((10, 0.0, "<= 0.05"), (20, 0.0, "<= 0.05"), (20, 0.5, "<= 0.05"),
                         (20, 0.8, ""), (40, 0.8, "")):
        tables(rows, 1000 // k, n, rho, goal)


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


def history_rows(rows: list[Row], k: int) -> None:
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


def report(title: str, rows: list[Row], command: str, started: float, load_before: list[float],
           name: str, out: Path | None) -> None:
    """The rows as a table on stdout, the time and load it took, and the figures saved as
    benchmarks/NAME-DATE.json (the simulations' one way to report)."""
    t = Table.of(title, [Column("model", "left"), "n", "rate", "95% CI (Wilson)", "goal",
                         "met?", Column("note", "left")])
    for r in rows:
        lo, hi = r.ci
        goal = r.goal.replace(">=", "≥").replace("<=", "≤") or "-"
        t.add_row(r.model, str(r.n), f"{r.rate:.1%}", f"[{lo:.1%}, {hi:.1%}]", goal,
                  r.met, r.note)
    t.print(stdout_console())
    took = time.time() - started
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load_before} -> "
          f"{load()}, {took:.0f} s: {command}")
    save_figures({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command": command, "load_before": load_before, "load_after": load(),
                  "seconds": round(took, 1),
                  "rows": [{**asdict(r), "rate": r.rate, "ci95": list(r.ci), "met": r.met}
                           for r in rows],
                  "markdown": t.to_markdown()}, name, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a fifth of the trials")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", choices=("compare", "history"), default=None,
                    help="only compare's rows, or only bisect's and detect's")
    args = ap.parse_args()
    k = 5 if args.quick else 1
    started, load_before = time.time(), load()
    rows: list[Row] = []
    if args.only != "history":
        compare_rows(rows, k)
    if args.only != "compare":
        history_rows(rows, k)
    command = ("python benchmarks/sim_verdicts.py" + (" --quick" if args.quick else "")
               + (f" --only {args.only}" if args.only else ""))
    report("simulated guarantees: compare, bisect and detect", rows, command, started,
           load_before, "sim-verdicts", args.out)
    return 0 if all(r.met != "NO" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
