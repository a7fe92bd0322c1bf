"""The machine's speed now, for a suite's estimate (SuitePlan.estimate_seconds, report_seconds).

Estimates made from constants measured on a quiet machine were 4-12x too low at load 17-21
(issue 25).  Before planning a run, perflab measures two things, in well under a second on a
quiet machine:

- the CPU share one thread gets now: a busy loop of PROBE_S wall seconds and the CPU time it
  received (1.0 on an idle machine, about 2/3 beside two busy neighbours on 2 CPUs); its inverse
  is the slowdown applied to perflab's own costs and to report writing;
- each calibrated configuration's start-up: one launch with one iteration, timed (start-up and
  in-process warm-up, the part of a run outside its timed region), so a JIT runtime's start on
  this machine at this load is in the estimate, not the project machine's figure.

A workload that is not built yet (a dry run builds nothing) keeps RUNTIME_START_S, scaled by
the slowdown.
"""

from __future__ import annotations

import os
import time

from perflab.collectors.process import RunRequest, execute
from perflab.errors import PerflabError
from perflab.suites.plan import Speed, SuitePlan

PROBE_S = 0.25
# A run-away start-up (a JIT at load 20) must not hold up a dry run: one launch at most this long.
START_TIMEOUT_S = 30.0


def cpu_share(seconds: float = PROBE_S) -> float:
    """The share of one CPU this thread gets now: CPU time over wall time of a busy loop.

    Written by hand: the load average lags by a minute and counts tasks, not the CPU a new one
    would get (psutil's cpu_percent is the machine's busy fraction, not a share either)."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall0 < seconds:
        sum(range(1000))
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    return min(1.0, max(cpu / wall, 0.02)) if wall > 0 else 1.0


def measure_speed(plan: SuitePlan, *, launch: bool = True) -> Speed:
    """The slowdown now and, with ``launch``, the start-up of each calibrated configuration of
    the plan (one launch per configuration name, in its first cell)."""
    speed = Speed(slowdown=1.0 / cpu_share())
    if not launch or not plan.calibrate:
        return speed
    seen: set[str] = set()
    for cell in plan.cells:
        for p in cell.configs:
            if p.name in seen or not p.calibratable():
                continue
            seen.add(p.name)
            try:
                out = execute(RunRequest(argv=p.argv_with(1), env={**os.environ, **p.env},
                                         counters=[], region=False, timeout=START_TIMEOUT_S))
            except (PerflabError, OSError):  # not built here yet: the table's figure
                continue
            if out.status == "ok" and out.values.get("wall_time", 0) > 0:
                speed.start_s[p.name] = out.values["wall_time"]
    return speed
