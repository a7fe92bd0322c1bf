"""hyperfine's --export-json layout, so that its users' scripts (advanced_statistics.py,
plot_*.py read results[].times) keep working on perflab's results."""

from __future__ import annotations

from typing import Any

from perflab.reports.analysis import Analysis
from perflab.reports.export import clean, dumps


def result_to_hyperfine(a: Analysis) -> dict[str, Any]:
    """hyperfine's --export-json layout: one entry per configuration, ``times`` the wall time
    of each measured run in seconds, ``user``/``system`` the mean CPU seconds, ``exit_codes``
    one per run."""
    out = []
    for cfg in a.rs.configurations:
        runs = [r for r in cfg.measured_runs() if "wall_time" in r.values]
        times = [r.values["wall_time"] for r in runs]
        if not times:
            continue
        s = a.summary(cfg, "wall_time")  # times are cfg.samples("wall_time")
        user = [r.values["user_time"] for r in runs if "user_time" in r.values]
        system = [r.values["sys_time"] for r in runs if "sys_time" in r.values]
        out.append({"command": cfg.name if cfg.name else " ".join(cfg.command),
                    "mean": s.mean, "stddev": s.stdev if len(times) > 1 else None,
                    "median": s.median,
                    "user": sum(user) / len(user) if user else 0.0,
                    "system": sum(system) / len(system) if system else 0.0,
                    "min": s.min, "max": s.max, "times": times,
                    "exit_codes": [r.exit_code for r in runs],
                    "parameters": {k: str(v) for k, v in cfg.params.items()} or None})
    for entry in out:
        if entry["parameters"] is None:
            del entry["parameters"]
    return clean({"results": out})


def render(a: Analysis) -> str:
    return dumps(result_to_hyperfine(a))
