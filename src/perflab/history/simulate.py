"""Seeded simulations of bisect and detect through perflab's own decision path.

What a user is promised about bisect and detect (docs/statistics.md, "Simulated guarantees")
is measured here, with runs drawn from a noise model instead of measured: bisect's steps are
judged by the Bisector's StepRule (stats.bisect_step at stats.bisect_levels), its band set by
StepRule.after_check as after a real check; detect's series go through change_points_of and
classify, as ``perflab detect`` sends them.  git's part of a bisect (which commit to try next)
is modelled: the commit nearest the middle of what is left, skipped commits set aside, as
``git bisect`` does on a linear history.  Benchmarks/sim_verdicts.py prints the table; the unit
tests run small versions.  The A/B verdicts' own simulation is perflab.simulate (whose
simulated task_clock, TIME, the runs here are measured in).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perflab.history.bisect import BisectSpec, StepRule
from perflab.history.detect import ChangePoint, DetectSettings, across_machines, detect_series
from perflab.history.series import Point, Series, SeriesKey
from perflab.simulate import TIME


@dataclass
class BisectTrial:
    named: bool  # the first bad commit named, and it is the right one
    checked: bool  # the check found bad slower than good
    steps: list[tuple[bool, str]] = field(default_factory=list)  # (changed, decision)
    runs: int = 0  # runs per side, over the check and every step


def judge(rule: StepRule, rng: np.random.Generator, ratio: float, cv: float,
          runs: int) -> tuple[str, float, int]:
    """One step as Bisector.judge runs it: rounds of ``runs`` interleaved runs per side (each
    run log-normal with sd ``cv``; the candidate ``ratio`` times the good one), a look after
    each: (decision, measured change in %, runs per side)."""
    base: list[float] = []
    cand: list[float] = []
    change = float("nan")
    for rnd in range(len(rule.levels)):
        base += list(np.exp(rng.normal(0.0, cv, runs)))
        cand += list(ratio * np.exp(rng.normal(0.0, cv, runs)))
        decision, c = rule.decide(rnd, base, cand, TIME)
        change = c.change_pct
        if decision != "inconclusive":
            return decision, change, len(base)
    return "skip", change, len(base)


def bisect_trial(rng: np.random.Generator, commits: int, step: float, cv: float, *,
                 runs: int = 10, rounds: int | None = None) -> BisectTrial:
    """One bisect of ``commits`` commits after good (the last one is --bad), the first bad
    one drawn uniformly, every commit from it on ``step`` times slower."""
    spec = BisectSpec(repo=Path("."), good="good", bad="bad", build="true", runs=runs)
    if rounds is not None:
        spec.max_rounds = rounds
    rule = StepRule.for_spec(spec)
    first = int(rng.integers(1, commits + 1))
    decision, change, n = judge(rule, rng, step, cv, runs)
    trial = BisectTrial(False, decision == "bad", runs=n)
    if not trial.checked:
        return trial
    rule = rule.after_check(change, TIME)
    good, bad, skipped = 0, commits, set()
    while True:
        left = [i for i in range(good + 1, bad) if i not in skipped]
        if not left:
            break
        mid = min(left, key=lambda i: abs(i - (good + bad) / 2))
        decision, _, n = judge(rule, rng, step if mid >= first else 1.0, cv, runs)
        trial.steps.append((mid >= first, decision))
        trial.runs += n
        if decision == "good":
            good = mid
        elif decision == "bad":
            bad = mid
        else:
            skipped.add(mid)
    trial.named = bad == first and not any(good < s < bad for s in skipped)
    return trial


def _series(values: list[float], machine: int, commits: list[str]) -> Series:
    key = SeriesKey("sim/b", "{}", "A", machine, "task_clock", machine=f"m{machine}")
    pts = [Point(i + 1, float(i), "stat", c, False, [], median=v)
           for i, (c, v) in enumerate(zip(commits, values, strict=True))]
    return Series(key, unit="ms", points=pts)


def detect_fleet(rng: np.random.Generator, shape: list[float], cv: float, machines: int = 3,
                 settings: DetectSettings | None = None) -> list[list[ChangePoint]]:
    """``machines`` series of the same commits, each point ``shape[i]`` times 1 with normal
    noise of sd ``cv`` (relative), through detect as ``perflab detect`` runs it: the search on
    each series, then the other machines tested at each range found (across_machines).  The
    change points reported on each machine (unchanged entries left out)."""
    sets = settings or DetectSettings()
    commits = [f"{i:040x}" for i in range(len(shape))]
    series = [_series(list(np.asarray(shape) * (1 + rng.normal(0, cv, len(shape)))), m,
                      commits) for m in range(machines)]
    items = [(s, detect_series(s, sets)) for s in series]
    extra = across_machines(items, sets)
    out = [list(cps) for _, cps in items]
    for s, cp in extra:
        if cp.kind != "unchanged":
            out[s.key.machine_id or 0].append(cp)
    return out
