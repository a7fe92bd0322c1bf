"""Google Benchmark JSON (``--benchmark_out=F --benchmark_out_format=json``, or
``--benchmark_format=json`` on stdout): {"context": {host_name, num_cpus, mhz_per_cpu, caches,
load_avg, library_build_type, date, ...}, "benchmarks": [row...]}.

A row of ``run_type`` "iteration" is one repetition of one benchmark (``--benchmark_repetitions=N``
gives N of them): its ``real_time`` and ``cpu_time`` are per iteration of the benchmark's loop,
in its ``time_unit`` -> ns_per_op and cpu_ns_per_op (ns).  Rows of ``run_type`` "aggregate"
(mean, median, stddev, cv, BigO, RMS) summarize the repetitions and are not samples.  Every
other numeric key of a row is a user counter (``state.counters``, bytes_per_second,
items_per_second) and becomes a metric of its own name.  A row is read by
collectors.harness (gbench_kind, gbench_row), as a harness run's output is (``compare
--harness gbench``).  The benchmarks are read one row at a
time, so a file of any size is read in bounded memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perflab import notes as said
from perflab.collectors.harness import (
    HarnessOutputError,
    gbench_kind,
    gbench_metric,
    gbench_name,
    gbench_row,
)
from perflab.imports.common import bad, is_num, iso_date, json_members, mtime
from perflab.model import Configuration, Fingerprint, ResultSet, Run, Settings

FORMAT = "gbench"


def sniff(head: str) -> bool:
    return (head.lstrip().startswith("{") and '"benchmarks"' in head
            and ('"run_type"' in head or '"library_build_type"' in head
                 or '"mhz_per_cpu"' in head))


def _fingerprint(path: Path, context: Any) -> dict[str, Any]:
    if not isinstance(context, dict):
        raise bad(path, FORMAT, "'context' is not an object")
    fp: dict[str, Any] = {}
    for key, field, kind in (("host_name", "hostname", str), ("num_cpus", "cpu_count", int),
                             ("mhz_per_cpu", "cpu_mhz", int | float),
                             ("library_build_type", "gbench_library_build_type", str),
                             ("library_version", "gbench_library_version", str),
                             ("cpu_scaling_enabled", "cpu_scaling_enabled", bool),
                             ("caches", "cpu_caches", list), ("load_avg", "load_at_start", list)):
        if key not in context:
            continue
        if not isinstance(context[key], kind) or (kind is int and isinstance(context[key], bool)):
            raise bad(path, FORMAT, f"context.{key} is {context[key]!r}, not "
                      f"{getattr(kind, '__name__', 'a number')}")
        fp[field] = context[key]
    if "load_at_start" in fp and not all(is_num(x) for x in fp["load_at_start"]):
        raise bad(path, FORMAT, "context.load_avg holds a value that is not a number")
    return fp


def _row(path: Path, i: int, row: Any) -> tuple[str, str]:
    """A row's kind and benchmark name (collectors.harness.gbench_kind), a bad row refused."""
    try:
        kind = gbench_kind(row)
    except HarnessOutputError as e:
        raise bad(path, FORMAT, f"benchmarks[{i}] {e.what}") from None
    return kind, (gbench_name(row) if kind != "aggregate" else "")


def _row_values(path: Path, i: int, row: dict[str, Any]) -> dict[str, float]:
    try:
        return gbench_row(row)
    except HarnessOutputError as e:
        raise bad(path, FORMAT, f"benchmarks[{i}] ('{e.name}') {e.what}") from None


def read(path: Path, benchmark: str | None) -> ResultSet:
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"gbench {path.name}",
                   settings=Settings(file=str(path), import_format=FORMAT))
    configs: dict[str, Configuration] = {}
    aggregates = skipped = failed = seq = 0
    context: Any = None
    for key, i, row in json_members(path, FORMAT, arrays=("benchmarks",)):
        if key == "context":
            context = row
        if key == "benchmarks" and i is None:
            raise bad(path, FORMAT, "'benchmarks' is not a list")
        if key != "benchmarks" or i is None:
            continue
        kind, name = _row(path, i, row)
        if kind == "aggregate":
            aggregates += 1
            continue
        if kind == "skipped":
            skipped += 1
            continue
        cfg = configs.get(name)
        if cfg is None:
            cfg = configs[name] = Configuration(name=name, command=[name],
                                                benchmark=benchmark or name,
                                                is_baseline=not configs)
        if kind == "error":
            failed += 1
            cfg.runs.append(Run(seq=seq, status="failed", exit_code=None,
                                error=str(row.get("error_message", ""))))
            seq += 1
            continue
        values = _row_values(path, i, row)
        for m in values:
            if m not in rs.metrics:
                rs.metrics[m] = gbench_metric(m)
        cfg.runs.append(Run(seq=seq, values=values))
        seq += 1
    if not configs:
        raise bad(path, FORMAT, "no 'benchmarks' rows of run_type 'iteration'"
                  + (f" ({aggregates} aggregate rows only: run without "
                     "--benchmark_report_aggregates_only)" if aggregates else ""))
    if context is not None:
        rs.fingerprint = Fingerprint.from_json(_fingerprint(path, context))
        rs.created_at = iso_date(context.get("date")) or rs.created_at
    rs.configurations = list(configs.values())
    _notes(rs, aggregates, skipped, failed)
    return rs


def _notes(rs: ResultSet, aggregates: int, skipped: int, failed: int) -> None:
    fp = rs.fingerprint.extra
    most = max(len(c.runs) for c in rs.configurations)
    rs.notes.add(said.imported(
        "imported from Google Benchmark: ns_per_op and cpu_ns_per_op per iteration "
        f"of each benchmark's loop, one run per repetition ({most} at most)"))
    if most < 2:
        rs.notes.add(said.imported(
            "one repetition per benchmark: no spread to judge a change by (run "
            "with --benchmark_repetitions=10)"))
    if aggregates:
        rs.notes.add(said.imported(f"{aggregates} aggregate rows (mean, median, stddev, cv...) are "
                                   "summaries of the repetitions, not samples: not imported"))
    if skipped:
        rs.notes.add(said.imported(f"{skipped} benchmark rows were skipped (SkipWithMessage)"))
    if failed:
        rs.notes.add(said.imported(
            f"{failed} benchmark rows are errors (SkipWithError): failed runs"))
    if fp.get("gbench_library_build_type") == "debug":
        rs.notes.add(said.imported(
            "the Google Benchmark library was built as debug (it warns that timings "
            "may be affected)"))
    if fp.get("cpu_scaling_enabled") is True:
        rs.notes.add(said.imported("CPU frequency scaling was enabled when the file was made"))
