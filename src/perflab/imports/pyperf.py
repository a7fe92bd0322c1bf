"""pyperf JSON (``-o``): {"version", "metadata", "benchmarks": [{"metadata", "runs": [{"values",
"warmups": [[loops, value]]}]}]}; a value is the time of ONE loop iteration in the unit of
``metadata.unit`` -> ns_per_op (seconds x 1e9), as perflab's workloads report.  A ``pyperf
command`` benchmark (its metadata has "command") times whole runs of a command: a value is one
run's wall time -> wall_time in seconds, as hyperfine's imports are."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from perflab import notes as said
from perflab.imports.common import END, bad, is_num, iso_date, json_events, mtime
from perflab.metrics import BUILTIN_METRICS, MetricInfo, metric_direction, seconds_per
from perflab.model import Configuration, Fingerprint, ResultSet, Run, RunColumns, Settings

FORMAT = "pyperf"


def sniff(head: str) -> bool:
    return (head.lstrip().startswith("{") and '"benchmarks"' in head
            and ('"runs"' in head or '"version"' in head))


def _pyperf_fingerprint(meta: dict[str, Any]) -> dict[str, Any]:
    fp: dict[str, Any] = {}
    if meta.get("hostname"):
        fp["hostname"] = meta["hostname"]
    if meta.get("cpu_model_name"):
        fp["cpu_model"] = meta["cpu_model_name"]
    if is_num(meta.get("cpu_count")):
        fp["cpu_count"] = int(meta["cpu_count"])
    m = re.match(r"Linux-([^-]+(?:-[^-]+)*?)-(x86_64|aarch64|arm64|i686)",
                 str(meta.get("platform", "")))
    if m:
        fp["kernel"], fp["arch"] = m.group(1), m.group(2)
    return fp


def _other_meaning(metric: str) -> str:
    return ("as pyperf wrote them" if metric.startswith("pyperf_")
            else "the metric perflab's --export-pyperf wrote")


def _metric(bmeta: dict[str, Any], name: str) -> tuple[MetricInfo, float, list[str]]:
    """The metric a benchmark's values become, the factor from pyperf's unit to the metric's,
    and the command it names."""
    unit = bmeta.get("unit", "second")
    command = bmeta.get("command")
    argv = shlex.split(command) if isinstance(command, str) else [name]
    kept = bmeta.get("perflab_metric")
    if unit == "second" and isinstance(kept, str) and kept:
        # perflab's --export-pyperf: the metric it exported (task_clock, ns_per_op...), back in
        # its own unit (perflab_unit; an export without it: the metric's usual unit).
        builtin = BUILTIN_METRICS.get(kept)
        own = bmeta.get("perflab_unit")
        kept_unit = (str(own) if isinstance(own, str) and seconds_per(own) else
                     builtin.unit if builtin else "ns" if kept.endswith("ns_per_op") else "s")
        info = (builtin if builtin and builtin.unit == kept_unit else
                MetricInfo(kept, kept_unit, "pyperf", direction=metric_direction(kept)))
        return info, 1.0 / (seconds_per(kept_unit) or 1.0), argv
    if unit == "second" and isinstance(command, str):
        # pyperf command: a loop iteration is one whole run of the command.
        return BUILTIN_METRICS["wall_time"], 1.0, argv
    if unit == "second":
        return MetricInfo("ns_per_op", "ns", "pyperf",
                          description="time of one loop iteration"), 1e9, [name]
    return MetricInfo(f"pyperf_{unit}", str(unit), "pyperf"), 1.0, [name]


PYPERF_MEANING = {"ns_per_op": "per loop iteration",
                  "wall_time": "one whole run of a pyperf command benchmark"}


def read(path: Path, benchmark: str | None) -> ResultSet:
    """Read one pyperf run at a time (json_events), its values kept in columns (RunColumns) as
    pyperf wrote them; the metric they become is told at the end, by the benchmark's metadata
    merged over the file's (which pyperf may write after the benchmarks)."""
    benches: list[tuple[dict[str, Any], RunColumns]] = []
    top: dict[str, Any] = {}
    bmeta: dict[str, Any] = {}
    runs = RunColumns()
    has_runs = False  # the benchmark read so far has a 'runs' list
    seq = 0
    first_date: float | None = None
    for where, v, _ in json_events(path, "pyperf", ("benchmarks[]/runs[]",)):
        if where == "benchmarks[]/runs[]":
            name = str(bmeta.get("name") or f"benchmark {len(benches) + 1}")
            seq, started = _run(path, name, v, runs, seq)
            first_date = first_date or started
        elif where == "benchmarks[]/metadata":
            bmeta = v if isinstance(v, dict) else {}
        elif where == "benchmarks[]/runs":
            has_runs = v is END
        elif where == "benchmarks[]":
            if v is not END or not has_runs:
                raise bad(path, "pyperf", f"benchmark {len(benches) + 1} has no 'runs'")
            benches.append((bmeta, runs))
            bmeta, runs, has_runs = {}, RunColumns(), False
        elif where == "benchmarks" and v is not END:
            raise bad(path, "pyperf", "no 'benchmarks' list")
        elif where in ("metadata", "version"):
            top[where] = v
    if not benches:
        raise bad(path, "pyperf", "no 'benchmarks' list")
    return _result_set(path, benchmark, top, benches, first_date)


_RAW = "pyperf_raw"  # a run's value as pyperf wrote it, until its metric is known


def _run(path: Path, name: str, run: Any, runs: RunColumns, seq: int
         ) -> tuple[int, float | None]:
    """One pyperf run's warm-ups and values appended to ``runs``; the next seq and its date."""
    if not isinstance(run, dict):
        raise bad(path, "pyperf", f"a run of '{name}' is not an object")
    rmeta = run.get("metadata") or {}
    started = iso_date(rmeta.get("date"))
    for w in run.get("warmups") or []:
        if isinstance(w, list) and len(w) == 2 and is_num(w[1]):
            runs.append(Run(seq=seq, values={_RAW: w[1]}, warmup=True,
                            started_at=started or 0.0))
            seq += 1
    load1 = rmeta.get("load_avg_1min")
    for v in run.get("values") or []:
        if not is_num(v) or v < 0:
            raise bad(path, "pyperf", f"{'negative' if is_num(v) else 'non-numeric'} "
                      f"value {v!r} in '{name}'")
        runs.append(Run(seq=seq, values={_RAW: v}, started_at=started or 0.0,
                        load1=load1 if is_num(load1) else None))
        seq += 1
    return seq, started


def _result_set(path: Path, benchmark: str | None, top: dict[str, Any],
                benches: list[tuple[dict[str, Any], RunColumns]],
                first_date: float | None) -> ResultSet:
    meta = top.get("metadata") if isinstance(top.get("metadata"), dict) else {}
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"pyperf {path.name}",
                   fingerprint=Fingerprint.from_json(_pyperf_fingerprint(meta)),
                   settings=Settings(file=str(path), import_format="pyperf",
                                     extra={"pyperf_version": top.get("version")}))
    for i, (own, runs) in enumerate(benches):
        bmeta = {**meta, **own}
        name = str(bmeta.get("name") or f"benchmark {i + 1}")
        info, factor, argv = _metric(bmeta, name)
        rs.metrics[info.name] = info
        raw = runs.metrics.pop(_RAW, None)
        if raw is not None:  # pyperf's unit to the metric's, in place
            column = np.frombuffer(raw, dtype=np.float64)
            column *= factor
            runs.metrics[info.name] = raw
        cfg = Configuration(name=name, command=argv, benchmark=benchmark or name,
                            is_baseline=(i == 0), runs=runs)
        if not cfg.measured_count():
            raise bad(path, "pyperf", f"benchmark '{name}' has no measured values")
        rs.configurations.append(cfg)
    if first_date:
        rs.created_at = first_date
    rs.notes.add(said.imported("imported from pyperf: " + ", ".join(sorted(
        f"{m} ({PYPERF_MEANING.get(m, _other_meaning(m))})" for m in rs.metrics))))
    return rs
