"""pyperf's JSON (version 1.0), so that `python -m pyperf compare_to a.json b.json` reads
perflab's results."""

from __future__ import annotations

from typing import Any

from perflab.metrics import seconds_per
from perflab.model import ResultSet
from perflab.reports.analysis import Analysis
from perflab.reports.export import clean, dumps


def _time_in_seconds(rs: ResultSet, metric: str) -> float | None:
    """The factor from ``metric``'s unit to seconds, None when it is not a time."""
    info = rs.metrics.get(metric)
    return seconds_per(info.unit) if info is not None else None


def result_to_pyperf(rs: ResultSet, metric: str | None = None) -> dict[str, Any]:
    """pyperf's JSON (version 1.0): one benchmark per configuration, named as it; one pyperf
    run per measured run holding its value in seconds.  The metric is the result's primary
    one when it is a time (wall_time, task_clock, ns_per_op: per operation, like pyperf's
    per-loop values), else wall_time."""
    primary = metric or rs.settings.primary_metric or "wall_time"
    if _time_in_seconds(rs, primary) is None:
        primary = "wall_time"
    factor = _time_in_seconds(rs, primary) or 1.0
    fp = rs.fingerprint
    meta = {k: v for k, v in {"hostname": fp.hostname, "cpu_model_name": fp.cpu_model,
                              "cpu_count": fp.cpu_count,
                              "platform": fp.kernel}.items() if v is not None}
    benchmarks = []
    for cfg in rs.configurations:
        runs = [{"metadata": {"date": _iso(r.started_at)} if r.started_at else {},
                 "values": [r.values[primary] * factor]}
                for r in cfg.measured_runs() if primary in r.values]
        if runs:
            benchmarks.append({"metadata": {"name": cfg.name, "unit": "second",
                                            "perflab_metric": primary,
                                            "perflab_unit": rs.metrics[primary].unit,
                                            "command": " ".join(cfg.command)},
                               "runs": runs})
    return clean({"version": "1.0", "metadata": meta, "benchmarks": benchmarks})


def _iso(ts: float) -> str:
    from datetime import datetime
    return datetime.fromtimestamp(ts).isoformat(sep=" ")


def render(a: Analysis) -> str:
    return dumps(result_to_pyperf(a.rs))
