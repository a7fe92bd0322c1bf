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

from perflab.imports.common import bad, is_num, iso_date, mtime, read_json
from perflab.model import (
    BUILTIN_METRICS,
    Configuration,
    Fingerprint,
    MetricInfo,
    ResultSet,
    Run,
    Settings,
)

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


PYPERF_MEANING = {"ns_per_op": "per loop iteration",
                  "wall_time": "one whole run of a pyperf command benchmark"}


def read(path: Path, benchmark: str | None) -> ResultSet:
    data = read_json(path, "pyperf")
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) \
            or not data["benchmarks"]:
        raise bad(path, "pyperf", "no 'benchmarks' list")
    meta = data.get("metadata") or {}
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"pyperf {path.name}",
                   fingerprint=Fingerprint.from_json(_pyperf_fingerprint(meta)),
                   settings=Settings(file=str(path), import_format="pyperf",
                                     extra={"pyperf_version": data.get("version")}))
    seq = 0
    first_date: float | None = None
    for i, bench in enumerate(data["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
            raise bad(path, "pyperf", f"benchmark {i + 1} has no 'runs'")
        bmeta = {**meta, **(bench.get("metadata") or {})}
        name = str(bmeta.get("name") or f"benchmark {i + 1}")
        unit = bmeta.get("unit", "second")
        command = bmeta.get("command")
        argv = [name]
        if unit == "second" and isinstance(command, str):
            # pyperf command: a loop iteration is one whole run of the command.
            metric, factor = "wall_time", 1.0
            rs.metrics[metric] = BUILTIN_METRICS["wall_time"]
            argv = shlex.split(command)
        elif unit == "second":
            metric, factor = "ns_per_op", 1e9
            rs.metrics[metric] = MetricInfo(metric, "ns", "pyperf",
                                            description="time of one loop iteration")
        else:
            metric, factor = f"pyperf_{unit}", 1.0
            rs.metrics[metric] = MetricInfo(metric, str(unit), "pyperf")
        cfg = Configuration(name=name, command=argv, benchmark=benchmark or name,
                            is_baseline=(i == 0))
        for run in bench["runs"]:
            rmeta = run.get("metadata") or {}
            started = iso_date(rmeta.get("date"))
            if started and first_date is None:
                first_date = started
            for w in run.get("warmups") or []:
                if isinstance(w, list) and len(w) == 2 and is_num(w[1]):
                    cfg.runs.append(Run(seq=seq, values={metric: w[1] * factor}, warmup=True,
                                        started_at=started or 0.0))
                    seq += 1
            for v in run.get("values") or []:
                if not is_num(v) or v < 0:
                    raise bad(path, "pyperf", f"{'negative' if is_num(v) else 'non-numeric'} "
                              f"value {v!r} in '{name}'")
                cfg.runs.append(Run(seq=seq, values={metric: v * factor},
                                    started_at=started or 0.0,
                                    load1=rmeta.get("load_avg_1min")))
                seq += 1
        if not cfg.measured_runs():
            raise bad(path, "pyperf", f"benchmark '{name}' has no measured values")
        rs.configurations.append(cfg)
    if first_date:
        rs.created_at = first_date
    rs.notes.append("imported from pyperf: "
                    + ", ".join(sorted(f"{m} ({PYPERF_MEANING.get(m, 'as pyperf wrote them')})"
                                       for m in rs.metrics)))
    return rs
