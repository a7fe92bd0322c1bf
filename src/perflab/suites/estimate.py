"""The machine's speed now, for a suite's estimate (SuitePlan.estimate_seconds, report_seconds).

Estimates made from constants measured on a quiet machine are 4-12x too low at load 17-21.
Before planning a run, perflab measures, in well under a second on a quiet machine:

- the CPU share one thread gets now: a busy loop of PROBE_S wall seconds and the CPU time it
  received (1.0 on an idle machine, about 2/3 beside two busy neighbours on 2 CPUs); its inverse
  is the slowdown applied to perflab's own costs, to report writing and to a suite's
  expected_run_s;
- each calibrated configuration's start-up: one launch with one iteration, timed (start-up and
  in-process warm-up, the part of a run outside its timed region), in up to START_SAMPLES of
  its cells drawn across the plan, and their mean used for every cell: a JIT runtime's start
  on this machine at this load is in the estimate, not the project machine's figure.

A dry run also launches each workload configuration that is not calibrated (a fixed amount of
work: the memory suites' runtimes start, JIT thousands of methods and force a GC) once, whole,
in up to START_SAMPLES of its cells, within RUN_PROBES_S in all: a suite's expected_run_s is
one figure for every runtime and knows nothing of the load, where a CoreCLR run of
suites/memory-coreclr.toml takes 1.3 s at load 2 and a Mono one of memory-csharp.toml 0.3 s.
A real run does not (those launches would cost it an eighth of its runs); it takes
expected_run_s at the slowdown, and its ETA follows the pace of the cells measured.

A workload that is not built yet (a dry run builds nothing) keeps RUNTIME_START_S (or
expected_run_s), scaled by the slowdown.
"""

from __future__ import annotations

import itertools
import os
import random
import time

from perflab.collectors.process import RunRequest, execute
from perflab.errors import PerflabError
from perflab.suites.plan import PlannedConfig, Speed, SuitePlan

PROBE_S = 0.25
START_SAMPLES = 4  # launches per configuration (cells drawn across the plan)
# A run-away start-up (a JIT at load 20) must not hold up a dry run: one launch at most this long.
START_TIMEOUT_S = 30.0
# What a dry run spends on whole runs of configurations that are not calibrated, at most (the
# launch that crosses it finishes; configurations left take expected_run_s at the slowdown).
RUN_PROBES_S = 60.0


def cpu_share(seconds: float = PROBE_S) -> float:
    """The share of one CPU this thread gets now: CPU time over wall time of a busy loop.

    Written by hand: the load average lags by a minute and counts tasks, not the CPU a new one
    would get (psutil's cpu_percent is the machine's busy fraction, not a share either)."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall0 < seconds:
        sum(range(1000))
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    return min(1.0, max(cpu / wall, 0.02)) if wall > 0 else 1.0


def measure_speed(plan: SuitePlan, *, launch: bool = True, runs: bool = False) -> Speed:
    """The slowdown now and, with ``launch``, the start-up of each calibrated configuration of
    the plan: the mean of one launch in each of up to START_SAMPLES of its cells; with ``runs``
    too, the mean of whole runs of each workload configuration that is not calibrated."""
    speed = Speed(slowdown=1.0 / cpu_share())
    if not launch:
        return speed
    starts, wholes = configs_to_launch(plan)
    for name, configs in starts.items():
        got = [t for p in sample_cells(configs, plan.fingerprint() + name)
               if (t := launch_seconds(p)) is not None]
        if got:
            speed.start_s[name] = sum(got) / len(got)
            speed.probe_s += sum(got)  # a run measures them again before its first cell
    if runs:
        timeout = min(START_TIMEOUT_S, float(plan.suite.measure.get("timeout") or START_TIMEOUT_S))
        spent = 0.0
        for name, configs in wholes.items():
            got = []
            for p in sample_cells(configs, plan.fingerprint() + name):
                if spent >= RUN_PROBES_S:
                    break
                t = run_seconds_now(p, timeout)
                if t is not None:
                    got.append(t)
                    spent += t
            if got:
                speed.run_s[name] = sum(got) / len(got)
    return speed


def configs_to_launch(plan: SuitePlan) -> tuple[dict[str, list[PlannedConfig]],
                                                dict[str, list[PlannedConfig]]]:
    """Per configuration name, its planned cells: those calibrated (a start-up to measure) and
    the workload configurations that are not (a whole run to measure); commands are neither."""
    starts: dict[str, list[PlannedConfig]] = {}
    wholes: dict[str, list[PlannedConfig]] = {}
    for cell in plan.cells:
        for p in cell.configs:
            if plan.calibrated(p):
                starts.setdefault(p.name, []).append(p)
            elif p.workload is not None:
                wholes.setdefault(p.name, []).append(p)
    return starts, wholes


def sample_cells(configs: list[PlannedConfig], seed: str,
                 k: int = START_SAMPLES) -> list[PlannedConfig]:
    """One configuration's cells to launch: all of them up to ``k``, else one drawn at random
    in each of ``k`` equal runs of the plan's order (seeded: the same plan, the same draws).
    The start-up depends on the cell (a CoreCLR hardware fault warms up for 1.5 s where its
    software throw takes 0.3 s, a depth-100 async chain for 1 s), and the matrix's order
    alternates its axes, so evenly spaced picks could all land on one kind."""
    if len(configs) <= k:
        return configs
    rng = random.Random(seed)
    bounds = [round(i * len(configs) / k) for i in range(k + 1)]
    return [configs[rng.randrange(lo, hi)] for lo, hi in itertools.pairwise(bounds)]


def launch_seconds(p: PlannedConfig) -> float | None:
    """Wall seconds of one launch of ``p`` with one iteration, or None when it cannot run here
    (not built yet: the table's figure is used)."""
    try:
        out = execute(RunRequest(argv=p.argv_with(1), env={**os.environ, **p.env}, counters=[],
                                 region=False, timeout=START_TIMEOUT_S))
    except (PerflabError, OSError):
        return None
    wall = out.values.get("wall_time", 0.0)
    return wall if out.status == "ok" and wall > 0 else None


def run_seconds_now(p: PlannedConfig, timeout: float) -> float | None:
    """Wall seconds of one whole run of ``p`` as planned; ``timeout`` when it took longer (it
    takes at least that); None when it cannot run here."""
    try:
        out = execute(RunRequest(argv=p.argv, env={**os.environ, **p.env}, counters=[],
                                 region=False, timeout=timeout))
    except (PerflabError, OSError):
        return None
    if out.status == "timeout":
        return timeout
    wall = out.values.get("wall_time", 0.0)
    return wall if out.status == "ok" and wall > 0 else None
