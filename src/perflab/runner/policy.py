"""Which metric decides: CPU time for CPU-bound work, wall time where it waits, chosen from the
first runs and kept with the benchmark (with hysteresis) so a series keeps one metric."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from perflab import notes as said
from perflab.format import fmt_fixed, fmt_seconds
from perflab.model import Configuration, PrimaryChoice, ResultSet, Run
from perflab.runner.options import MeasureOptions

if TYPE_CHECKING:
    from perflab.quickwrite import ResultWriter

# -- which metric decides -------------------------------------------------------------------
# A wall-clock metric and the CPU-time metric that measures the same code's cost.  CPU time
# does not count run-queue waits, so on a busy machine it decides where wall time cannot
# (shared/notes/machine-facts.md: 5% found 12/12 on task_clock vs 3/12 on wall time at load 4).
CPU_COUNTERPART = {"wall_time": "task_clock", "ns_per_op": "cpu_ns_per_op"}
CPU_BOUND_SHARE = 0.8  # CPU time >= 80% of wall time x busy threads: CPU-bound
# Once run-queue waits are left out, exec and the launcher's hand-shake with perflab (which a
# busy machine slows too) still count as off-CPU: a lower bar.
CPU_BOUND_WITHOUT_WAITS = 0.7
# Below 80%, but off-CPU time explained by preemption, not by waiting (on a 2-CPU machine with
# 15 runnable tasks a CPU-bound loop gets 1/8 of a CPU).
PREEMPTED_SHARE = 0.1
# Voluntary context switches every run has without waiting for anything: the child stops or
# blocks in the launcher's handshake (until its counters are open) and in exec (measured: a
# spin loop has 1-3, `sleep 0.03` has 3; `true` has 2 with counters, 1 without, on both of
# the launcher's paths).
LAUNCH_VOLUNTARY = 2
# The runs a configuration has before the primary metric is chosen (warm-up runs first, then
# the first measured rounds): one warm-up run chose wall_time for a 1 ms CPU loop 2 times in 5
# at load 2-5, when a busy neighbour held the CPU for most of it.
PRIMARY_MIN_RUNS = 3
# Hysteresis (reconcile_primary): a benchmark's stored choice changes only on decisive
# evidence: CPU-bound with the median run (not the best one) at >= 90% of its wall time, or
# waiting with even the best run under 30% and voluntary switches beyond preemption's.
DECISIVE_CPU_SHARE = 0.9
DECISIVE_WAIT_SHARE = 0.3


def _cpu_and_wall(v: dict[str, float]) -> tuple[float, float, float] | None:
    """(CPU s, wall s, busy threads) of one run, over the timed region if the counters
    covered one."""
    cpu = v["task_clock"] if "task_clock" in v else (
        v["user_time"] + v["sys_time"] if "user_time" in v and "sys_time" in v else None)
    if cpu is None:
        return None
    wall = v["region_time"] if "region_time" in v and "task_clock" in v else v.get("wall_time")
    if not wall or wall <= 0:
        return None
    return cpu, wall, max(1.0, float(v.get("threads", 1.0)))


def _share_without_waits(v: dict[str, float]) -> tuple[float, float] | None:
    """(CPU share of the whole process once its run-queue wait is left out, that wait in s)."""
    if not all(k in v for k in ("user_time", "sys_time", "wall_time", "run_delay")):
        return None
    busy = v["wall_time"] - v["run_delay"]
    if busy <= 0:
        return None
    threads = max(1.0, float(v.get("threads", 1.0)))
    # task_clock when it covers the whole process: rusage's times are counted in scheduler
    # ticks here (4 ms), too coarse for a run of a few milliseconds.
    whole = "task_clock" in v and "region_time" not in v
    cpu = v["task_clock"] if whole else v["user_time"] + v["sys_time"]
    return cpu / (busy * threads), v["run_delay"]


def choose_primary(default: str, runs: list[Run], *, seen: str = "warm-up") -> PrimaryChoice:
    """The default primary metric: CPU time for CPU-bound work, wall time where it waits.

    ``default`` is the wall-clock metric perflab would otherwise use (wall_time, or a
    workload's ns_per_op); ``runs`` are the runs seen so far (the warm-up runs and the first
    rounds: at least PRIMARY_MIN_RUNS a configuration where there are that many).  A command is
    CPU-bound when its CPU time is close to wall time x busy threads, or when the time it spent
    off the CPU was preemption (involuntary context switches: a busy machine) rather than
    waiting (voluntary switches: sleeps, I/O, locks).  The one place this choice is made:
    stat, compare, suites, bisect use it through measure(), which keeps a benchmark's stored
    choice (reconcile_primary); history and detect read the metric it stored.
    """
    cpu_metric = CPU_COUNTERPART.get(default)
    if cpu_metric is None:
        return PrimaryChoice(default, f"{default} (the workload's primary metric)")
    ok = [r for r in runs if r.status == "ok"]
    if cpu_metric == "task_clock" and ok and not all("task_clock" in r.values for r in ok):
        cpu_metric = "cpu_time"  # no perf events: user + system time from rusage
    if not ok or not all(cpu_metric in r.values for r in ok):
        return PrimaryChoice(default, f"{default}: no {cpu_metric} to choose from", None)
    figures = [f for f in (_cpu_and_wall(r.values) for r in ok) if f is not None]
    if not figures:
        return PrimaryChoice(default, f"{default}: no CPU time was measured", None)
    # The best run, not the median: a command that waits (sleeps, I/O, locks) never gets
    # close to its wall time on CPU, while a CPU-bound one does whenever the machine lets it;
    # on a busy machine one of two warm-up runs is often preempted for most of its time.
    shares = sorted(c / (w * t) for c, w, t in figures)
    share, typical = float(shares[-1]), float(np.median(shares))
    vol = float(np.median([r.values.get("voluntary_switches", 0.0) for r in ok]))
    invol = float(np.median([r.values.get("involuntary_switches", 0.0) for r in ok]))
    n = len(ok)
    runs_txt = (f"the first {n} run{'s' if n != 1 else ''}" if seen == "first"
                else f"{n} {seen} run{'s' if n != 1 else ''}")
    tail = _beside(default)

    def cpu(why: str) -> PrimaryChoice:
        return PrimaryChoice(cpu_metric, f"{cpu_metric} ({why}){tail}", True, default, why, n,
                             decisive=typical >= DECISIVE_CPU_SHARE)

    if share >= CPU_BOUND_SHARE:
        return cpu(f"CPU-bound: cpu/wall {fmt_fixed(share, 2)} over {runs_txt}")
    # A busy machine: leave out the time the command waited for a CPU (run_delay, from the
    # scheduler's statistics), over the whole process (a timed region's wall time also holds
    # its hand-shakes with perflab, which a busy machine slows as well).
    adjusted = [a for a in (_share_without_waits(r.values) for r in ok) if a is not None]
    if len(adjusted) == n:
        adj, delay = max(adjusted)
        if adj >= CPU_BOUND_WITHOUT_WAITS:
            return cpu(f"CPU-bound: cpu/wall {fmt_fixed(share, 2)}, {fmt_fixed(adj, 2)} without "
                       f"the {fmt_seconds(delay)} a run spent waiting for a CPU, over {runs_txt}")
    # The main thread's run_delay misses worker threads that ended before the command did:
    # off-CPU time with involuntary context switches and no more voluntary ones than a start
    # costs was preemption, not waiting.
    preempted = vol - LAUNCH_VOLUNTARY <= invol / 2 and (
        (share >= PREEMPTED_SHARE and invol >= 1) or invol >= 3)  # load 20: 9% of a CPU
    if preempted and share >= 0.02:
        return cpu(f"CPU-bound, preempted: cpu/wall {fmt_fixed(share, 2)} over {runs_txt}, "
                   f"{fmt_fixed(invol)} involuntary vs {fmt_fixed(vol)} voluntary context "
                   "switches a run")
    why = f"mostly waiting: cpu/wall {fmt_fixed(share, 2)} over {runs_txt}"
    # Decisive only with the waits seen: more voluntary switches than a start and preemption
    # explain, even in the run that got the most CPU.
    waits = vol - LAUNCH_VOLUNTARY > invol
    return PrimaryChoice(default, f"{default} ({why}){_beside(cpu_metric)}", False, default,
                         why, n,
                         decisive=share < DECISIVE_WAIT_SHARE and waits)


def reconcile_primary(fresh: PrimaryChoice, stored: dict[tuple[str, str], PrimaryChoice],
                      available: set[str]) -> PrimaryChoice:
    """The primary metric of a result: the benchmark's stored choice where it has one, so a
    series keeps one metric, with hysteresis: runs that read the other way change it only when
    their evidence is decisive (DECISIVE_CPU_SHARE, DECISIVE_WAIT_SHARE), never on one
    busy-machine run.  ``fresh`` is choose_primary over this result's runs, ``stored`` the
    choices stored for its configurations (Store.primary_choices), ``available`` the metrics
    the runs produced."""
    if fresh.cpu_bound is None or not stored:
        return fresh
    metrics = sorted({c.metric for c in stored.values()})
    if len(metrics) > 1:
        return dataclasses.replace(
            fresh, reason=f"{fresh.reason} (the stored choices of these benchmarks differ: "
                          f"{' vs '.join(metrics)}; chosen from these runs)")
    old = max(stored.values(), key=lambda c: c.from_result or 0)
    pair = (fresh.default or "", CPU_COUNTERPART.get(fresh.default or "", ""), "cpu_time")

    def beside(metric: str) -> str:  # the other of the pair, as choose_primary words it
        return _beside(next((m for m in pair if m in available and m != metric), ""))

    if old.metric not in available:
        return dataclasses.replace(
            fresh, reason=f"{fresh.metric} ({fresh.why}; the stored choice {old.metric} was "
                          f"not measured this time){beside(fresh.metric)}")
    if old.metric != fresh.metric and fresh.decisive:
        return dataclasses.replace(
            fresh, reason=f"{fresh.metric} ({fresh.why}; changed from {old.metric}, chosen by "
                          f"result {old.from_result}: these runs read the other way by a wide "
                          f"margin){beside(fresh.metric)}")
    now = "" if old.metric == fresh.metric else f"; these runs read {fresh.why}, not decisive"
    return dataclasses.replace(
        old, reason=f"{old.metric} (this benchmark's choice on this machine, made by result "
                    f"{old.from_result}: {old.why or old.reason}{now}){beside(old.metric)}",
        runs=fresh.runs, decisive=False)


def _beside(other: str) -> str:
    """The end of a primary-metric note: the metric shown beside the deciding one."""
    return (f"; {other} reported beside it" if other else "") + "; --metric overrides"



def settle_primary(rs: ResultSet, configs: list[Configuration], opts: MeasureOptions,
                    store: ResultWriter | None) -> None:
    """Choose the primary metric once per result set from the runs so far (or keep the
    benchmark's stored choice), store it with the result and say why (a note, printed once)."""
    runs = [r for c in configs for r in c.runs]
    seen = "warm-up" if all(r.warmup for r in runs) else "first"
    fresh = choose_primary(opts.primary_metric, runs, seen=seen)
    stored = {}
    if store is not None and fresh.cpu_bound is not None:
        stored = store.primary_choices(rs.fingerprint, [(c.benchmark_key, c.cell)
                                                        for c in configs],
                                       opts.primary_metric, before=rs.id)
    available = {m for r in runs for m in r.values}
    choice = reconcile_primary(fresh, stored, available)
    opts.primary_metric, opts.auto_primary = choice.metric, False
    rs.settings.primary_metric = choice.metric
    rs.settings.primary_choice = choice
    rs.notes.add(said.primary(choice.reason))

