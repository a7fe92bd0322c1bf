"""``perf stat -j``: one JSON object per event and line (counter-value, unit, event,
pcnt-running...); a repeated event starts a new run, so several perf stat outputs appended to
one file become several runs.  Event names map to perflab's metric names.  Read line by line."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from perflab import notes as said
from perflab.format import fmt_fixed
from perflab.imports.common import bad, is_num, loads, mtime, text_lines
from perflab.metrics import BUILTIN_METRICS, HARDWARE_COUNTERS, PERF_HW, PERF_SW, MetricInfo
from perflab.model import Configuration, ResultSet, Run, Settings

FORMAT = "perf-stat"

# perf event -> (perflab metric, factor to perflab's unit)
PERF_EVENTS: dict[str, tuple[str, float]] = {
    "task-clock": ("task_clock", 1e-3),  # perf reports msec; perflab's task_clock is s
    "cpu-clock": ("cpu_clock", 1.0),
    "page-faults": ("page_faults", 1.0),
    "faults": ("page_faults", 1.0),
    "minor-faults": ("minor_faults", 1.0),
    "major-faults": ("major_faults", 1.0),
    "context-switches": ("context_switches", 1.0),
    "cs": ("context_switches", 1.0),
    "cpu-migrations": ("cpu_migrations", 1.0),
    "migrations": ("cpu_migrations", 1.0),
    "cycles": ("cycles", 1.0),
    "cpu-cycles": ("cycles", 1.0),
    "instructions": ("instructions", 1.0),
    "branches": ("branches", 1.0),
    "branch-instructions": ("branches", 1.0),
    "branch-misses": ("branch_misses", 1.0),
    "cache-references": ("cache_references", 1.0),
    "cache-misses": ("cache_misses", 1.0),
    "duration_time": ("wall_time", 1e-9),  # ns -> s
    "user_time": ("user_time", 1e-9),
    "system_time": ("sys_time", 1e-9),
}



def sniff(head: str) -> bool:
    # Its JSON lines may follow other lines (perf stat -o FILE).
    return '"counter-value"' in head and '"event"' in head


def read(path: Path, benchmark: str | None) -> ResultSet:
    name = benchmark or path.stem
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"perf stat {path.name}",
                   settings=Settings(file=str(path), import_format="perf-stat"))
    cfg = Configuration(name=name, command=[name], benchmark=name, is_baseline=True)
    current: dict[str, float] = {}
    unsupported: set[str] = set()
    multiplexed: dict[str, float] = {}
    repeated = False
    events_seen = 0

    def flush() -> None:
        if current:
            cfg.runs.append(Run(seq=len(cfg.runs), values=dict(current)))
            current.clear()

    for line in text_lines(path, "perf stat -j"):
        line = line.strip()
        if not line.startswith("{"):
            continue  # the measured program's own stderr is interleaved with perf's
        try:
            obj = loads(line, path, "perf stat -j")
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or "event" not in obj or "counter-value" not in obj:
            continue
        events_seen += 1
        event = str(obj["event"])
        base = event.split(":")[0]  # instructions:u -> instructions
        pmu = re.fullmatch(r"[\w-]+/([\w-]+)/\w*", base)  # cpu_core/instructions/ -> instructions
        if pmu:
            base = pmu.group(1)
        metric, factor = PERF_EVENTS.get(base, (re.sub(r"[^a-z0-9]+", "_", base.lower())
                                                .strip("_"), 1.0))
        raw = obj["counter-value"]
        try:
            value = float(raw)
        except (TypeError, ValueError):
            unsupported.add(event)  # "<not supported>" / "<not counted>"
            continue
        if not math.isfinite(value) or value < 0:
            raise bad(path, "perf stat -j", f"event {event} has the counter value {raw!r} "
                      "(counters are finite and >= 0)")
        if metric in current:
            flush()  # the same event again: the next perf stat run starts here
        current[metric] = value * factor
        if "variance" in obj:
            repeated = True
        pr = obj.get("pcnt-running")
        if is_num(pr) and pr < 100:
            multiplexed[metric] = min(pr, multiplexed.get(metric, 100.0))
        if metric not in rs.metrics:
            if metric in BUILTIN_METRICS:
                rs.metrics[metric] = BUILTIN_METRICS[metric]
            else:
                src = PERF_HW if metric in HARDWARE_COUNTERS else PERF_SW
                rs.metrics[metric] = MetricInfo(metric, str(obj.get("unit") or "count"), src)
    flush()
    if events_seen == 0:
        raise bad(path, "perf stat -j", "no JSON event lines")
    if not cfg.runs:
        raise bad(path, "perf stat -j", "every event was <not supported> or <not counted>")
    rs.configurations.append(cfg)
    if unsupported:
        rs.notes.add(said.imported(f"perf stat could not count: {', '.join(sorted(unsupported))} "
                                   "(no hardware PMU on the measured machine?)"))
    if multiplexed:
        rs.notes.add(said.imported(
            "multiplexed counters (perf scaled them; % of time counted): " + ", ".join(
            f"{m} {fmt_fixed(p)}%" for m, p in sorted(multiplexed.items()))))
    if repeated:
        rs.notes.add(said.imported("perf stat -r: each imported run is the MEAN of perf's repeats"))
    if "wall_time" not in rs.metrics:
        rs.notes.add(said.imported("no duration_time event: no wall_time (add -e duration_time)"))
    return rs
