"""A benchmark harness's own figures: one home for how a `go test -bench` result line and a
Google Benchmark JSON row become metrics, read both by the importers (perflab.imports.gobench,
perflab.imports.gbench: a file measured apart) and by the runner (a harness run interleaved:
``compare --harness``), so a benchmark's metrics are the same either way.

A harness run is one run of a command whose output holds a figure per benchmark.  Its
per-benchmark figures become metrics named ``"BENCHMARK METRIC"`` (``Sum-8 ns_per_op``,
``BM_sum/512 cpu_ns_per_op``): the benchmark as the importer names it (benchstat's name for Go,
``run_name`` for Google Benchmark), a space, and the metric the importer gives its unit.  The
part after the last space is the metric's family (metrics.metric_family): every benchmark's
``ns_per_op`` is one family, judged together.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable
from typing import Any

from perflab.metrics import MetricInfo, ns_in, workload_direction

GOBENCH, GBENCH = "gobench", "gbench"
HARNESSES = (GOBENCH, GBENCH)
# The primary family of a harness run: Go's only timing (ns/op, wall time per b.N iteration);
# Google Benchmark's CPU time per iteration (what the code costs, which a busy machine's
# run-queue waits do not inflate), ns_per_op (its real time) beside it.
PRIMARY = {GOBENCH: "ns_per_op", GBENCH: "cpu_ns_per_op"}
SOURCES = {GOBENCH: "go test -bench", GBENCH: "Google Benchmark"}


class HarnessOutputError(ValueError):
    """A result line or row that cannot be read: ``what`` says what is wrong with it, without
    saying where (the importer adds the file and line, the runner the run)."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(f"{name} {what}")
        self.name, self.what = name, what


# -- go test -bench ---------------------------------------------------------------------------
# unit -> (metric, factor to its unit, unit, description)
GO_UNITS: dict[str, tuple[str, float, str, str]] = {
    "ns/op": ("ns_per_op", 1.0, "ns", "time per operation (b.N loop iteration)"),
    "sec/op": ("ns_per_op", 1e9, "ns", "time per operation (b.N loop iteration)"),
    "B/op": ("bytes_per_op", 1.0, "B", "bytes allocated per operation (-benchmem)"),
    "allocs/op": ("allocs_per_op", 1.0, "count", "heap allocations per operation (-benchmem)"),
}
GO_RESULT_LINE = re.compile(r"Benchmark(\S*)\s+(\S+)\s+(.*)")
# A time of its own per op (b.ReportMetric(v, "cpu-ns/op")): a time in ns, as benchstat reads
# it (cpu-sec/op).
GO_PREFIXED_TIME = re.compile(r"([A-Za-z0-9_.]+)-(ns|sec)/op")


def go_unit(unit: str) -> tuple[str, float, str, str] | None:
    """(metric, factor, unit, description) of a unit perflab knows: ns/op, sec/op, B/op,
    allocs/op, and a prefixed time (cpu-ns/op -> cpu_ns_per_op in ns)."""
    if unit in GO_UNITS:
        return GO_UNITS[unit]
    m = GO_PREFIXED_TIME.fullmatch(unit)
    if m is None:
        return None
    prefix = re.sub(r"[^a-z0-9]+", "_", m.group(1).lower())
    return (f"{prefix}_ns_per_op", 1e9 if m.group(2) == "sec" else 1.0, "ns",
            f"{m.group(1)} time per operation (reported in {unit})")


@functools.lru_cache(maxsize=1024)
def go_metric(unit: str, source: str = SOURCES[GOBENCH]) -> MetricInfo:
    """The metric a unit becomes: perflab's name for ns/op, B/op, allocs/op (and X-ns/op);
    else the unit's own (MB/s -> mb_per_s, bytes/hash -> bytes_per_hash), higher-is-better
    for a rate."""
    known = go_unit(unit)
    if known is not None:
        name, _, u, desc = known
        return MetricInfo(name, u, source, description=desc)
    name = re.sub(r"[^a-z0-9]+", "_", unit.lower().replace("/", "_per_")).strip("_") or "value"
    rate = unit.endswith("/s")
    return MetricInfo(name, unit, source, direction="higher" if rate else "lower",
                      description=f"reported in {unit}")


def go_result(line: str) -> tuple[str, dict[str, tuple[float, MetricInfo]]] | None:
    """A result line's benchmark name (without "Benchmark": ``Sum-8``) and metrics; None for a
    line that is not a result (a name alone, or followed by the benchmark's own output, as
    benchstat skips it).  A value that is not a finite number >= 0, or a value without its
    unit: HarnessOutputError."""
    m = GO_RESULT_LINE.fullmatch(line.rstrip())
    if m is None or not m.group(2).isdigit():
        return None
    name, rest = m.group(1), m.group(3).split()
    if not rest or len(rest) % 2:
        raise HarnessOutputError(name, "has a value without its unit" if rest else
                                 "has no measurements")
    values: dict[str, tuple[float, MetricInfo]] = {}
    for value, unit in zip(rest[::2], rest[1::2], strict=True):
        try:
            v = float(value)
        except ValueError:
            raise HarnessOutputError(name, f"has the value {value!r} for {unit}, not a "
                                     "number") from None
        if not math.isfinite(v) or v < 0:
            raise HarnessOutputError(name, f"has the value {value} for {unit}")
        info, known = go_metric(unit), go_unit(unit)
        values[info.name] = (v * (known[1] if known is not None else 1.0), info)
    return name, values


# -- Google Benchmark ---------------------------------------------------------------------------
# The time_unit labels Google Benchmark writes (each one's size: metrics.ns_in)
GB_TIME_UNITS = ("ns", "us", "ms", "s")
# The keys of a row that are not user counters (benchmark/src/json_reporter.cc).
GB_ROW_KEYS = frozenset((
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "aggregate_name", "aggregate_unit", "error_occurred",
    "error_message", "skipped", "skip_message", "iterations", "real_time", "cpu_time",
    "time_unit", "cpu_coefficient", "real_coefficient", "big_o", "rms", "label"))
# The memory manager's keys: lower is better.
GB_MEMORY_KEYS = frozenset(("allocs_per_iter", "max_bytes_used", "total_allocated_bytes",
                            "net_heap_growth"))
GB_TIME_METRICS = {
    "real_time": MetricInfo("ns_per_op", "ns", SOURCES[GBENCH],
                            description="real (wall) time per iteration of the benchmark loop"),
    "cpu_time": MetricInfo("cpu_ns_per_op", "ns", SOURCES[GBENCH],
                           description="CPU time per iteration of the benchmark loop"),
}


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def gbench_counter_direction(name: str) -> str:
    """A user counter's direction by its name: a rate (bytes_per_second, items_per_second, the
    ``*_per_s`` of perflab's workloads) is higher-is-better; memory and any other counter
    lower-is-better, as a workload's keys."""
    if name.endswith("_per_second") or name in GB_MEMORY_KEYS:
        return "higher" if name.endswith("_per_second") else "lower"
    return workload_direction(name)


def gbench_counter_unit(name: str) -> str:
    if name.endswith("_per_second"):
        return "B/s" if name.startswith("bytes") else "1/s"
    return "B" if name in GB_MEMORY_KEYS and name != "allocs_per_iter" else ""


def gbench_metric(name: str) -> MetricInfo:
    """What a row's metric is: ns_per_op, cpu_ns_per_op, or a user counter of its name."""
    return next((t for t in GB_TIME_METRICS.values() if t.name == name), None) or MetricInfo(
        name, gbench_counter_unit(name), SOURCES[GBENCH],
        direction=gbench_counter_direction(name), description="user counter")


def gbench_kind(row: Any) -> str:
    """A row's kind: "iteration" (a sample), "aggregate" (a summary), "skipped", "error";
    HarnessOutputError for a row that is none of them."""
    if not isinstance(row, dict):
        raise HarnessOutputError("?", "is not an object")
    if row.get("run_type") == "aggregate" or "aggregate_name" in row:
        return "aggregate"
    name = row.get("run_name", row.get("name"))
    if not isinstance(name, str) or not name:
        raise HarnessOutputError("?", "has no 'name'")
    if row.get("run_type", "iteration") != "iteration":
        raise HarnessOutputError(name, f"has the run_type {row['run_type']!r}, not "
                                 "'iteration' or 'aggregate'")
    if row.get("skipped") is True:
        return "skipped"
    return "error" if row.get("error_occurred") is True else "iteration"


def gbench_name(row: dict[str, Any]) -> str:
    return str(row.get("run_name", row.get("name")))


def gbench_row(row: dict[str, Any]) -> dict[str, float]:
    """An iteration row's metrics: its times in ns per iteration and its user counters."""
    name = gbench_name(row)
    unit = row.get("time_unit")
    if unit not in GB_TIME_UNITS:
        raise HarnessOutputError(name, f"has the time_unit {unit!r}, not one of "
                                 f"{', '.join(GB_TIME_UNITS)}")
    values: dict[str, float] = {}
    for key, info in GB_TIME_METRICS.items():
        v = row.get(key)
        if not is_num(v) or v < 0:
            raise HarnessOutputError(name, f"has no '{key}'" if v is None else
                                     f"has the {key} {v!r}, not a time >= 0")
        values[info.name] = float(v) * (ns_in(str(unit)) or 1.0)
    for key, v in row.items():
        if key in GB_ROW_KEYS or isinstance(v, bool | str):
            continue
        if not isinstance(v, int | float):
            raise HarnessOutputError(name, f"has the counter {key} {v!r}, not a number")
        if is_num(v):  # a NaN counter (a rate over no time) is left out of the run
            values[key] = float(v)
    return values


# -- a harness run's output -------------------------------------------------------------------
def harness_metric(benchmark: str, metric: str) -> str:
    """The name of one benchmark's metric in a harness run (metrics.metric_family reads it)."""
    return f"{benchmark} {metric}"


def _mean_of(samples: dict[str, list[float]]) -> dict[str, float]:
    # -test.count N or --benchmark_repetitions=N: one figure per run, their mean
    return {k: math.fsum(v) / len(v) for k, v in samples.items()}


def _go_figures(stdout: str) -> tuple[dict[str, float], dict[str, MetricInfo]]:
    samples: dict[str, list[float]] = {}
    infos: dict[str, MetricInfo] = {}
    for line in stdout.splitlines():
        if not line.startswith("Benchmark"):
            continue
        got = go_result(line)
        if got is None:
            continue
        name, values = got
        for metric, (v, info) in values.items():
            key = harness_metric(name, metric)
            samples.setdefault(key, []).append(v)
            infos.setdefault(key, _named(key, info))
    return _mean_of(samples), infos


def _gbench_figures(stdout: str) -> tuple[dict[str, float], dict[str, MetricInfo]]:
    start = stdout.find("{")
    try:
        doc: Any = json.loads(stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError as e:
        raise HarnessOutputError("the output", f"is not Google Benchmark's JSON ({e.msg} at "
                                 f"line {e.lineno})") from None
    rows = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise HarnessOutputError("the output", "has no 'benchmarks' list")
    samples: dict[str, list[float]] = {}
    infos: dict[str, MetricInfo] = {}
    for row in rows:
        kind = gbench_kind(row)
        if kind == "error":
            raise HarnessOutputError(gbench_name(row), "failed: "
                                     f"{row.get('error_message', '')}")
        if kind != "iteration":
            continue
        for metric, v in gbench_row(row).items():
            key = harness_metric(gbench_name(row), metric)
            samples.setdefault(key, []).append(v)
            infos.setdefault(key, _named(key, gbench_metric(metric)))
    return _mean_of(samples), infos


def _named(key: str, info: MetricInfo) -> MetricInfo:
    return MetricInfo(key, info.unit, info.source + " (run by perflab)",
                      direction=info.direction, description=info.description)


def figures(harness: str, stdout: str) -> tuple[dict[str, float], dict[str, MetricInfo]]:
    """One harness run's per-benchmark figures and what each metric is; HarnessOutputError for
    output with no benchmark result, or a result that cannot be read."""
    values, infos = (_go_figures if harness == GOBENCH else _gbench_figures)(stdout)
    if not values:
        raise HarnessOutputError("the output", "holds no benchmark result" + (
            " (does -test.bench match a benchmark?)" if harness == GOBENCH else ""))
    return values, infos


# -- a harness's command line ------------------------------------------------------------------
def _given(args: Iterable[str], *flags: str) -> bool:
    return any(a.lstrip("-").split("=", 1)[0] in flags for a in args)


def harness_argv(harness: str, build: str, args: list[str]) -> list[str]:
    """The command one run of ``build`` is: its harness arguments, and what perflab adds so its
    output can be read: for a Go test binary ``-test.run=^$`` (no tests, as ``go test -run '^$'
    -bench``) and ``-test.bench=.`` unless given; for Google Benchmark
    ``--benchmark_format=json`` (the JSON on stdout)."""
    if harness == GOBENCH:
        extra = [] if _given(args, "test.run", "run") else ["-test.run=^$"]
        extra += [] if _given(args, "test.bench", "bench") else ["-test.bench=."]
        return [build, *extra, *args]
    return [build, *args, "--benchmark_format=json"]


def refused_arg(harness: str, args: list[str]) -> str | None:
    """A harness argument perflab cannot read the output of (None: all fine)."""
    if harness == GBENCH and _given(args, "benchmark_format"):
        return ("--benchmark_format: perflab reads the JSON it adds itself "
                "(--benchmark_format=json on stdout)")
    if harness == GOBENCH and _given(args, "test.json", "json", "test.v", "v"):
        return "-test.v / -test.json: perflab reads the plain benchmark lines"
    return None
