"""The metric registry: every fact perflab knows of a metric by its name or its unit, in one
place, as pyperf's ``_metadata.py`` keeps its fields.

- what a metric is (MetricInfo): unit, source, direction, resolution, deterministic;
- perflab's own metrics (BUILTIN_METRICS: the collectors'; DERIVED_METRICS: derived from them)
  and what a name alone tells of any other (named_metric, metric_direction);
- units (UNITS): each unit's kind (time, memory, count) and its size in the kind's base unit
  (seconds, KiB, events), which says how a value is scaled for print (format.fmt_value), which
  bands may be given in it, and which words a change reads in (verdict_word); a time label
  in nanoseconds (ns_in), with the longer ones harnesses print (HARNESS_TIMES), for the
  harness readers;
- the default band of each kind (MEMORY_BAND, COUNT_FLOOR: judging.default_band);
- units earlier perflabs stored a metric in (FORMER_UNITS).

It imports nothing of perflab's: every stage asks it, and it asks none.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is: its unit, where it came from, and whether it has noise."""

    name: str
    unit: str
    source: str
    # Deterministic metrics (valgrind instruction counts) are compared exactly, without CIs.
    deterministic: bool = False
    # For throughput-like metrics a larger value is better; for times and counts it is worse.
    higher_is_better: bool = False
    description: str = ""
    # Which way is better: "lower" (times, memory, counts), "higher" (throughput) or "none"
    # (a checksum, an operation count: compared for equality, never a regression).  Empty:
    # derived from higher_is_better.
    direction: str = ""
    # A run's value is counted in steps of this size (in the metric's unit; 0: fine-grained).
    # rusage's user and system times are the run's CPU time split by which mode the scheduler
    # tick found it in: a run shorter than a tick reads all user or all system (RUSAGE_TICK).
    resolution: float = 0.0

    def __post_init__(self) -> None:
        d = self.direction or ("higher" if self.higher_is_better else "lower")
        if d not in DIRECTIONS:
            raise ValueError(f"metric {self.name}: direction {d!r} is not one of "
                             f"{', '.join(DIRECTIONS)}")
        object.__setattr__(self, "direction", d)
        object.__setattr__(self, "higher_is_better", d == "higher")

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "source": self.source,
            "deterministic": self.deterministic,
            "higher_is_better": self.higher_is_better,
            "direction": self.direction,
            "description": self.description,
            **({"resolution": self.resolution} if self.resolution else {}),
        }

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any]) -> MetricInfo:
        return cls(
            name=name,
            unit=d.get("unit", ""),
            source=d.get("source", ""),
            deterministic=bool(d.get("deterministic", False)),
            higher_is_better=bool(d.get("higher_is_better", False)),
            description=d.get("description", ""),
            direction=str(d.get("direction", "") or ""),
            resolution=float(d.get("resolution", _builtin_resolution(name, d))),
        )


def _builtin_resolution(name: str, d: dict[str, Any]) -> float:
    """The resolution of one of perflab's own metrics stored before resolutions were: what
    its collector has (rusage times: RUSAGE_TICK), else 0."""
    own = BUILTIN_METRICS.get(name)
    return own.resolution if own is not None and own.source == d.get("source") else 0.0


DIRECTIONS = ("lower", "higher", "none")
# Workload JSON keys that are bookkeeping, not costs: never a regression (the results among them,
# is_result_key, are also compared for equality across configurations).
NO_DIRECTION_KEYS = ("checksum", "ops", "iterations", "threads", "result", "n", "seed", "depth",
                     "count", "items")


def is_result_key(name: str) -> bool:
    """A key that is what the workload computed (a checksum, a result), as opposed to the size
    of the work (ops, iterations) or a runtime's diagnostics (jitted_methods): configurations
    of one cell that do the same work must agree on it, so a difference is worth a warning."""
    return name == "result" or name.endswith("_checksum") or name.startswith("checksum")


# The keys that declare the size of a run's work (the bookkeeping keys that are not results):
# results are compared only between runs that declare the same (stats.differing_results).
WORK_KEYS = tuple(k for k in NO_DIRECTION_KEYS if not is_result_key(k))


def metric_direction(name: str) -> str:
    """A metric's direction by name, before any run: perflab's own, else a workload key's."""
    info = BUILTIN_METRICS.get(name) or _DERIVED.get(name)
    return info.direction if info is not None else workload_direction(name)


def metric_family(name: str) -> str:
    """The family a metric is judged in: a harness run's per-benchmark metric ``"BENCHMARK
    METRIC"`` (collectors/harness.py: ``Sum-8 ns_per_op``) belongs to METRIC's family, with
    every other benchmark's; any other metric (no space in its name) is its own family."""
    return name.rpartition(" ")[2]


def in_family(name: str, family: str | None) -> bool:
    """``name`` is ``family`` or one benchmark's metric of it (``Sum-8 ns_per_op``)."""
    return family is not None and (name == family or metric_family(name) == family)


def workload_direction(name: str) -> str:
    """A workload key's direction by its name (a workload may declare it instead, see
    collectors/workload_json.py): *_per_s higher, bookkeeping keys none, else lower."""
    if name.endswith("_per_s") or name.endswith("_per_sec") or name.startswith("ops_per"):
        return "higher"
    if name in NO_DIRECTION_KEYS or name.endswith("_checksum") or name.startswith("checksum"):
        return "none"
    return "lower"


# The metrics perflab itself collects, by collector.  Workload-reported keys are added at run
# time with source "workload" (see collectors/workload_json.py).
WAIT4 = "wait4/rusage"
PERF_SW = "perf_event_open (software)"
PERF_HW = "perf_event_open (hardware PMU)"
CALLGRIND = "valgrind callgrind"
CALLGRIND_EXACT = f"{CALLGRIND} (exact)"
# The scheduler tick of a 250 Hz kernel (Debian's, Ubuntu's, this project's machines): rusage
# splits a run's CPU time into user and system by the ticks that found it in each mode, so a
# run of 2 ms reads 2 ms user and 0 system or the reverse, and a 40 ms one 37 + 4 or 41 + 0.
# Their sum (cpu_time) is not counted in ticks.
RUSAGE_TICK = 0.004

BUILTIN_METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo("wall_time", "s", "monotonic clock around fork/exec..wait4",
                   description="elapsed time of the whole command"),
        MetricInfo("user_time", "s", WAIT4, description="user CPU time",
                   resolution=RUSAGE_TICK),
        MetricInfo("sys_time", "s", WAIT4, description="system CPU time",
                   resolution=RUSAGE_TICK),
        MetricInfo("max_rss", "KiB", WAIT4, description="peak resident set size"),
        MetricInfo("minor_faults", "count", WAIT4),
        MetricInfo("major_faults", "count", WAIT4),
        MetricInfo("voluntary_switches", "count", WAIT4),
        MetricInfo("involuntary_switches", "count", WAIT4),
        MetricInfo("run_delay", "s", "/proc/PID/schedstat of the command's main thread at exit",
                   description="time spent runnable, waiting for a CPU (run queue)"),
        MetricInfo("task_clock", "s", PERF_SW, description="CPU time of all threads"),
        MetricInfo("page_faults", "count", PERF_SW),
        MetricInfo("context_switches", "count", PERF_SW),
        MetricInfo("cpu_migrations", "count", PERF_SW),
        MetricInfo("cycles", "count", PERF_HW),
        MetricInfo("instructions", "count", PERF_HW),
        MetricInfo("branches", "count", PERF_HW),
        MetricInfo("branch_misses", "count", PERF_HW),
        MetricInfo("cache_references", "count", PERF_HW),
        MetricInfo("cache_misses", "count", PERF_HW),
    ]
}

# Units earlier perflabs stored a built-in metric in, with how many of them make one of its unit
# today: up to schema 4 task_clock was in ms, every other time in s.  The store's migrations
# (perflab.migrations) and the import of perflab's own JSON exports read old figures through
# them.
FORMER_UNITS: dict[tuple[str, str], float] = {("task_clock", "ms"): 1e3}


def former_unit_divisor(name: str, unit: str) -> float | None:
    """What a value of metric ``name`` stored in ``unit`` is divided by to be in its unit today
    (BUILTIN_METRICS); None when it is in that unit already."""
    return FORMER_UNITS.get((name, unit))


def in_today_unit(value: float, divisor: float) -> float:
    """``value`` / ``divisor`` on the value's shortest decimal text: the launcher's 350062 ns
    was stored as 350062 / 1e6 ms, which prints as "0.350062"; shifting that text gives exactly
    the 350062 / 1e9 s today's collector stores (0.350062 / 1e3 is 0.00035006199999999994)."""
    return float(Decimal(repr(value)) / Decimal(repr(divisor)))


# Metrics perflab derives beside the collectors' own (collectors/process._derive, the
# workload JSON line).
DERIVED_METRICS = ("cpu_time", "cpu_ns_per_op", "region_time", "instructions_per_op",
                   "ns_per_op")
_DERIVED: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo("cpu_time", "s", WAIT4, description="user + system CPU time"),
        MetricInfo("region_time", "s", "timed region announced by the workload (wall clock)"),
        MetricInfo("instructions_per_op", "count", CALLGRIND_EXACT, deterministic=True),
    ]
}


# Times that count CPU time (of every thread, or of the process) rather than elapsed time.
CPU_TIMES = frozenset({"task_clock", "cpu_time", "cpu_ns_per_op", "user_time", "sys_time"})


def measures_elapsed(info: MetricInfo) -> bool:
    """A time read off a clock on the wall (wall_time, region_time, a workload's ns_per_op):
    not a CPU time, nor the time spent waiting for a CPU (run_delay)."""
    return (seconds_per(info.unit) is not None and info.name not in CPU_TIMES
            and info.name != "run_delay" and not info.deterministic)


def perflab_defines(name: str) -> bool:
    """A metric perflab collects or derives itself: never a workload's declared key."""
    return name in BUILTIN_METRICS or name in _DERIVED or name == "cpu_ns_per_op"


def named_metric(name: str, benchmark: str, region_used: bool = False) -> MetricInfo:
    """What a metric's name alone tells of it: a built-in metric's facts (a perf_event counter
    counts the timed region only when the run had one), else those of a metric perflab derives
    (cpu_time, region_time, the per-op ones), else a key of ``benchmark``'s workload JSON with
    the unit its name suggests (``_ns``: ns, ``_per_s``: 1/s, ``_kib``: KiB).  The runner
    starts from it; a stored result whose header was never written (its perflab killed before
    the end) is read with it."""
    source = f"workload JSON ({benchmark})"
    if name in BUILTIN_METRICS:
        info = BUILTIN_METRICS[name]
        if region_used and info.source.startswith("perf_event_open"):
            return MetricInfo(info.name, info.unit, info.source + ", timed region only",
                              description=info.description)
        return info
    if name in _DERIVED:
        return _DERIVED[name]
    if name == "cpu_ns_per_op" and region_used:
        return MetricInfo(name, "ns", "perf_event_open task-clock in the timed region / ops",
                          description="CPU time per operation, all threads")
    if name == "cpu_ns_per_op":
        return MetricInfo(name, "ns", source, description="CPU time per operation")
    unit = "ns" if name.endswith("_ns") or name.startswith("ns_") else (
        "1/s" if name.endswith("_per_s") else "KiB" if name.endswith("_kib") else "")
    return MetricInfo(name, unit, source, direction=workload_direction(name))


def declared_metric(name: str, benchmark: str, unit: str, direction: str,
                    description: str) -> MetricInfo:
    """A key of ``benchmark``'s workload JSON as its workload declares it ([metrics.NAME])."""
    return MetricInfo(name, unit, f"workload JSON ({benchmark})", direction=direction,
                      description=description)


# The perf_event counters by kind, read off the table above (one list: collectors/perf_events
# gives each of these names its event code).
SOFTWARE_COUNTERS = tuple(n for n, m in BUILTIN_METRICS.items() if m.source == PERF_SW)
HARDWARE_COUNTERS = tuple(n for n, m in BUILTIN_METRICS.items() if m.source == PERF_HW)




# --- units --------------------------------------------------------------------------------------
# Each unit a metric is measured in, or a band given in: its kind and how many of the kind's
# base unit (seconds, KiB, events) one of it is.  A metric without a unit is a count.
BAND_KINDS = ("time", "memory", "count")
UNITS: dict[str, tuple[str, float]] = {
    "ns": ("time", 1e-9), "us": ("time", 1e-6), "µs": ("time", 1e-6), "ms": ("time", 1e-3),
    "s": ("time", 1.0),
    "B": ("memory", 1 / 1024), "KiB": ("memory", 1.0), "KB": ("memory", 1000 / 1024),
    "MiB": ("memory", 1024.0), "MB": ("memory", 1e6 / 1024), "GiB": ("memory", 1024.0 ** 2),
    "events": ("count", 1.0), "event": ("count", 1.0), "count": ("count", 1.0),
}
# Metrics read in the words of time (slower/faster): times, and rates of operations.
TIME_UNITS = ("s", "ms", "us", "µs", "ns", "1/s")


def unit_kind(unit: str) -> str | None:
    """The kind a band may be given in ``unit`` (time | memory | count); None for no known
    unit."""
    return UNITS[unit][0] if unit in UNITS else None


def metric_kind(unit: str) -> str:
    """time | memory | count | other, from a metric's unit."""
    return unit_kind(unit) or ("count" if unit == "" else "other")


def in_base_unit(unit: str) -> float:
    """How many of its kind's base unit (seconds, KiB, events) one ``unit`` is (1 if unknown)."""
    return UNITS[unit][1] if unit in UNITS else 1.0


def seconds_per(unit: str) -> float | None:
    """Seconds in one ``unit`` (s, ms, us/µs, ns); None when the unit is not a time."""
    return UNITS[unit][1] if unit_kind(unit) == "time" else None


# Longer time labels harnesses print (JMH's TimeUnit short names) -> seconds: read from their
# output, never a unit perflab stores a metric in (so no band is given in them).
HARNESS_TIMES: dict[str, float] = {"min": 60.0, "m": 60.0, "hr": 3600.0, "h": 3600.0,
                                   "day": 86400.0, "d": 86400.0}


def ns_in(unit: str, longer: bool = False) -> float | None:
    """Nanoseconds in one ``unit`` of time, exactly (ns, us/µs, ms, s; with ``longer`` also
    HARNESS_TIMES' labels); None when the unit is not a time."""
    s = seconds_per(unit)
    if s is None and longer:
        s = HARNESS_TIMES.get(unit)
    return None if s is None else float(round(s * 1e9))


def is_time_like(info: MetricInfo | None) -> bool:
    return info is not None and info.unit in TIME_UNITS


def verdict_word(info: MetricInfo | None, up: bool) -> str:
    """The words a metric is read in: times (and throughputs) slower/faster; memory, counts and
    everything else larger/smaller; a metric with no direction is just 'different'."""
    direction = info.direction if info is not None else "lower"
    if direction == "none":
        return "different"
    if is_time_like(info):
        if info is not None and info.unit == "1/s":
            return "faster" if up else "slower"
        return "slower" if up else "faster"
    return "larger" if up else "smaller"


# Each kind's default band (judging.default_band): times +-threshold (1%); memory +-0.2%,
# which calls a +0.5% change measured with a CV of 0.1% over 16 interleaved runs in 97-98.5% of
# simulated trials (docs/statistics.md), where +-1% read "equivalent" for call counting's
# +209 KB on 21 MB; counts +-threshold or half an event a run, whichever is wider, so a count
# that is 0 in most runs has a band.
MEMORY_BAND = 0.002
COUNT_FLOOR = 0.5  # events a run
