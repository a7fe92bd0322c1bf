"""The data every stage shares: metrics, runs, configurations and result sets.

A *result set* is one invocation (a ``stat``, a ``compare``, a suite run, a bisect, an import).
It holds *configurations* (a command measured under one name, in one cell of a parameter
matrix), each with its *runs*; a run holds one value per metric.  Storage, statistics and
reports all speak these types, so no stage reaches into another's internals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "source": self.source,
            "deterministic": self.deterministic,
            "higher_is_better": self.higher_is_better,
            "description": self.description,
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
        )


# The metrics perflab itself collects, by collector.  Workload-reported keys are added at run
# time with source "workload" (see collectors/workload_json.py).
WAIT4 = "wait4/rusage"
PERF_SW = "perf_event_open (software)"
PERF_HW = "perf_event_open (hardware PMU)"
CALLGRIND = "valgrind callgrind"

BUILTIN_METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo("wall_time", "s", "monotonic clock around fork/exec..wait4",
                   description="elapsed time of the whole command"),
        MetricInfo("user_time", "s", WAIT4, description="user CPU time"),
        MetricInfo("sys_time", "s", WAIT4, description="system CPU time"),
        MetricInfo("max_rss", "KiB", WAIT4, description="peak resident set size"),
        MetricInfo("minor_faults", "count", WAIT4),
        MetricInfo("major_faults", "count", WAIT4),
        MetricInfo("voluntary_switches", "count", WAIT4),
        MetricInfo("involuntary_switches", "count", WAIT4),
        MetricInfo("task_clock", "ms", PERF_SW, description="CPU time of all threads"),
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

SOFTWARE_COUNTERS = ("task_clock", "page_faults", "context_switches", "cpu_migrations")
HARDWARE_COUNTERS = (
    "cycles", "instructions", "branches", "branch_misses", "cache_references", "cache_misses",
)


def canonical_params(params: dict[str, Any]) -> str:
    """A stable text key for a parameter set (sorted JSON), used to identify cells and series."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass
class Run:
    """One execution of a configuration's command."""

    seq: int  # position in the interleaved schedule of its result set
    values: dict[str, float] = field(default_factory=dict)
    status: str = "ok"  # ok | failed | timeout | signal
    exit_code: int | None = 0
    warmup: bool = False
    started_at: float = 0.0  # unix time
    load1: float | None = None  # 1-minute load average when the run started
    error: str = ""
    id: int | None = None


@dataclass
class Configuration:
    """A command measured under one name, in one cell of a parameter matrix."""

    name: str
    command: list[str]
    benchmark: str = ""  # workload name (eh/cpp) or the command text
    params: dict[str, Any] = field(default_factory=dict)
    is_baseline: bool = False
    commit: str | None = None  # overrides the result set's commit (bisect measures several)
    shell: bool = False
    env: dict[str, str] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    id: int | None = None
    # The cell of the matrix this configuration belongs to: configurations in one cell are
    # compared with each other.  Defaults to its parameters; `compare` puts all its commands in
    # one cell even when their parameters differ (depth=0 vs depth=10 as A and B).
    cell: str = ""

    def __post_init__(self) -> None:
        if not self.cell:
            self.cell = canonical_params(self.params)

    def measured_runs(self) -> list[Run]:
        return [r for r in self.runs if not r.warmup and r.status == "ok"]

    def samples(self, metric: str) -> list[float]:
        return [r.values[metric] for r in self.measured_runs() if metric in r.values]


@dataclass
class ResultSet:
    """One invocation of perflab: its configurations, runs, metrics and environment."""

    kind: str  # stat | compare | suite | bisect | import
    configurations: list[Configuration] = field(default_factory=list)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    commit: str | None = None
    dirty: bool | None = None
    repo: str | None = None
    label: str = ""
    status: str = "running"  # running | complete | interrupted | failed
    created_at: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the collectors said once (no PMU, ...)
    id: int | None = None

    def cells(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.configurations:
            seen.setdefault(c.cell, None)
        return list(seen)

    def configurations_in(self, cell: str) -> list[Configuration]:
        return [c for c in self.configurations if c.cell == cell]

    def baseline_in(self, cell: str) -> Configuration | None:
        configs = self.configurations_in(cell)
        for c in configs:
            if c.is_baseline:
                return c
        return configs[0] if configs else None
