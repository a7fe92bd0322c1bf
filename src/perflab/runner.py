"""The runner: plans runs, interleaves configurations, warms up, stops adaptively, saves each run.

Configurations are run in rounds; each round is a fresh random permutation of all of them
(A B / B A / ...), so a drifting machine (thermal, a neighbour's build) hits every configuration
alike, and the i-th runs of two configurations come from the same round and can be paired.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from perflab.collectors.perf_events import (
    HARDWARE_EVENTS,
    SOFTWARE_EVENTS,
    CounterBackend,
    KernelBackend,
)
from perflab.collectors.process import RunOutcome, RunRequest, execute
from perflab.collectors.valgrind import SOURCE as CALLGRIND_SOURCE
from perflab.collectors.valgrind import execute_callgrind, require_valgrind
from perflab.errors import PerflabError
from perflab.model import BUILTIN_METRICS, Configuration, MetricInfo, ResultSet, Run
from perflab.stats import summarize
from perflab.storage import Store


@dataclass
class MeasureOptions:
    warmup: int = 1
    runs: int | None = None
    min_runs: int = 5
    max_runs: int = 1000
    budget: float | None = None
    precision: float = 0.01
    primary_metric: str = "wall_time"
    pin: list[int] | None = None
    timeout: float | None = None
    ignore_failure: bool = False
    counters: str = "auto"  # auto | none
    instructions: str | None = None  # None | "valgrind"
    valgrind_runs: int = 2  # deterministic: the second run checks the first
    region: bool = True
    region_symbol: str | None = None  # callgrind --toggle-collect pattern for the region
    client_region: bool = False  # the binary toggles callgrind itself (perflab_region.h)
    seed: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    backend: CounterBackend | None = None  # tests inject a fake PMU here


class RunFailed(PerflabError):
    pass


def _counter_plan(opts: MeasureOptions, backend: CounterBackend,
                  notes: list[str]) -> list[str]:
    if opts.counters == "none":
        return []
    probe = backend.probe(list(SOFTWARE_EVENTS) + list(HARDWARE_EVENTS))
    names = [n for n, why in probe.items() if why is None]
    sw_why = next((probe[n] for n in SOFTWARE_EVENTS if probe[n]), None)
    hw_why = next((probe[n] for n in HARDWARE_EVENTS if probe[n]), None)
    said: list[str] = []
    if sw_why:
        said.append(f"software counters unavailable: {sw_why}")
    if hw_why and not any(n in names for n in HARDWARE_EVENTS):
        alt = ("instructions are counted by valgrind (--metric instructions)"
               if opts.instructions == "valgrind"
               else "use --metric instructions to count them with valgrind")
        said.append(f"hardware counters unavailable: {hw_why}; {alt}")
    notes += [n for n in said if n not in notes]  # said once, however many cells measured
    return names


def _metric_info(name: str, benchmark: str, region_used: bool) -> MetricInfo:
    if name in BUILTIN_METRICS:
        info = BUILTIN_METRICS[name]
        if region_used and info.source.startswith("perf_event_open"):
            return MetricInfo(info.name, info.unit, info.source + ", timed region only",
                              description=info.description)
        return info
    if name == "region_time":
        return MetricInfo(name, "s", "timed region announced by the workload (wall clock)")
    if name == "instructions_per_op":
        return MetricInfo(name, "count", CALLGRIND_SOURCE, deterministic=True)
    unit = "ns" if name.endswith("_ns") or name.startswith("ns_") else (
        "1/s" if name.endswith("_per_s") else "")
    return MetricInfo(name, unit, f"workload JSON ({benchmark})",
                      higher_is_better=name.endswith("_per_s"))


def _make_progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
        MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
        console=console, transient=True, disable=not console.is_terminal)


def measure(rs: ResultSet, configs: list[Configuration], opts: MeasureOptions,
            store: Store | None = None, progress: Progress | None = None,
            console: Console | None = None,
            on_run: Callable[[Configuration, Run], None] | None = None) -> ResultSet:
    """Measure ``configs`` into ``rs`` (see docs/core-api.md).  Ctrl-C returns an interrupted rs."""
    if not configs:
        raise PerflabError("nothing to measure", "give at least one command")
    console = console or Console(stderr=True)
    rng = random.Random(opts.seed)
    backend = opts.backend or KernelBackend()
    valgrind_mode = opts.instructions == "valgrind"
    if valgrind_mode:
        require_valgrind()
    counters = _counter_plan(opts, backend, rs.notes)
    timing_phase = not (valgrind_mode and opts.primary_metric in ("instructions",
                                                                  "instructions_per_op"))
    rs.settings.setdefault("interleaved", len(configs) > 1)
    rs.settings.setdefault("primary_metric", opts.primary_metric)
    rs.settings.setdefault("counters", counters)
    if store is not None and rs.id is None:
        store.begin_result(rs)
    for cfg in configs:
        if not any(c is cfg for c in rs.configurations):
            rs.configurations.append(cfg)
        if store is not None and cfg.id is None:
            assert rs.id is not None
            store.add_configuration(rs.id, cfg)

    seq = max((r.seq for c in rs.configurations for r in c.runs), default=-1) + 1
    started = time.monotonic()
    round_times: list[float] = []
    own_progress = progress is None
    progress = progress or _make_progress(console)
    fixed = opts.runs
    total = (len(configs) * ((fixed or 0) + opts.warmup) if fixed and timing_phase else None)
    task = progress.add_task("measuring", total=total, status="")

    def record(cfg: Configuration, outcome: RunOutcome, warmup: bool) -> Run:
        nonlocal seq
        run = Run(seq=seq, values=outcome.values, status=outcome.status,
                  exit_code=outcome.exit_code, warmup=warmup, started_at=time.time(),
                  load1=os.getloadavg()[0], error=outcome.error)
        seq += 1
        cfg.runs.append(run)
        for name in outcome.values:
            if name not in rs.metrics:
                info = _metric_info(name, cfg.benchmark or cfg.name, outcome.region_used)
                if valgrind_mode and name in ("instructions", "instructions_per_op"):
                    info = MetricInfo(name, "count", CALLGRIND_SOURCE + (
                        ", timed region only" if opts.region_symbol or opts.client_region
                        else ", whole program"), deterministic=True)
                rs.metrics[name] = info
        for name, frac in outcome.running_fraction.items():
            if frac < 0.999:
                note = (f"{name} was multiplexed (counted {frac:.0%} of the time) and scaled, "
                        "as perf stat does")
                if note not in rs.notes:
                    rs.notes.append(note)
        if outcome.counter_error and not any("counters could not" in n for n in rs.notes):
            rs.notes.append(f"counters could not be opened: {outcome.counter_error}")
        if store is not None and cfg.id is not None:
            store.add_run(cfg.id, run)
        if on_run:
            on_run(cfg, run)
        progress.advance(task)
        if run.status != "ok" and not opts.ignore_failure:
            rs.status = "failed"
            if store is not None:
                store.update_result(rs)
            fix = ("raise --timeout" if run.status == "timeout"
                   else "fix the command, or pass --ignore-failure to keep measuring")
            raise RunFailed(f"{cfg.name}: {run.error}", fix)
        return run

    def one(cfg: Configuration, warmup: bool, callgrind: bool) -> Run:
        argv = ["/bin/sh", "-c", " ".join(cfg.command)] if cfg.shell else list(cfg.command)
        env = {**os.environ, **opts.env, **cfg.env}
        req = RunRequest(argv=argv, env=env, pin=opts.pin, timeout=opts.timeout,
                         counters=[] if callgrind else counters, backend=backend,
                         region=opts.region and not callgrind)
        if callgrind:
            outcome = execute_callgrind(req, opts.region_symbol, opts.client_region)
        else:
            outcome = execute(req)
        return record(cfg, outcome, warmup)

    def precise_enough() -> bool:
        for cfg in configs:
            s = summarize(cfg.samples(opts.primary_metric))
            if s.n < opts.min_runs or s.rel_halfwidth > opts.precision:
                return False
        return True

    try:
        with progress if own_progress else contextlib.nullcontext():
            if timing_phase:
                for _ in range(opts.warmup):
                    for cfg in rng.sample(configs, len(configs)):
                        progress.update(task, status=f"warm-up {cfg.name}")
                        one(cfg, True, False)
                rounds = 0
                while True:
                    t_round = time.monotonic()
                    for cfg in rng.sample(configs, len(configs)):
                        progress.update(task, status=cfg.name)
                        one(cfg, False, False)
                    rounds += 1
                    round_times.append(time.monotonic() - t_round)
                    if opts.primary_metric not in rs.metrics:
                        raise PerflabError(
                            f"unknown metric {opts.primary_metric!r}: the runs produced "
                            f"{', '.join(sorted(rs.metrics))}",
                            "choose one of those with --metric")
                    if fixed is not None:
                        if rounds >= fixed:
                            break
                        continue
                    if rounds >= opts.max_runs:
                        break
                    if opts.budget is not None:
                        spent = time.monotonic() - started
                        if spent + sorted(round_times)[len(round_times) // 2] > opts.budget:
                            if rounds < opts.min_runs:
                                rs.notes.append(f"the {opts.budget:g} s budget allowed only "
                                                f"{rounds} runs per configuration")
                            break
                    if rounds >= opts.min_runs and precise_enough():
                        break
            if valgrind_mode:
                for _ in range(max(1, opts.valgrind_runs)):
                    for cfg in rng.sample(configs, len(configs)):
                        progress.update(task, status=f"callgrind {cfg.name}")
                        one(cfg, False, True)
                _check_determinism(rs, configs)
    except KeyboardInterrupt:
        rs.status = "interrupted"
        rs.notes.append("interrupted by the user: the runs finished so far are kept")
        if store is not None and rs.id is not None:
            store.update_result(rs)
        return rs
    finally:
        progress.remove_task(task)
    rs.status = "complete"
    if store is not None and rs.id is not None:
        store.update_result(rs)
    return rs


def _check_determinism(rs: ResultSet, configs: list[Configuration]) -> None:
    for cfg in configs:
        counts = set(cfg.samples("instructions"))
        if len(counts) > 1:
            lo, hi = min(counts), max(counts)
            rs.notes.append(
                f"instruction counts of {cfg.name} differ between runs ({lo:.0f}..{hi:.0f}, "
                f"{(hi - lo) / lo:.3%}): threads or timing-dependent work; compared "
                "statistically, not exactly")
            for m in ("instructions", "instructions_per_op"):
                if m in rs.metrics:
                    i = rs.metrics[m]
                    rs.metrics[m] = MetricInfo(m, i.unit, i.source, deterministic=False)



