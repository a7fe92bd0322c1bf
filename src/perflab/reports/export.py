"""Exports of a result set: JSON (the documented schema), CSV, Markdown, and hyperfine's and
pyperf's JSON; each format is one entry of EXPORTERS (its option and its writer).

JSON schema (version 1), see docs/export-schema.md:
{
  "schema": "perflab-result/1", "perflab_version", "id", "kind", "status", "created_at",
  "commit", "dirty", "environment": {...fingerprint...}, "settings", "notes", "warnings",
  "configurations": [{"name", "command", "benchmark", "params", "cell", "is_baseline",
     "runs", "failed_runs",
     "metrics": {NAME: {"samples": [...], "median", "ci_low", "ci_high", "mean", "stdev", "cv",
                         "min", "max", "n", "unit", "source", "deterministic"}}}],
  "comparisons": [{"baseline", "candidate", "cell", "metric", "ratio", "ci_low", "ci_high",
                   "change_pct", "p_value", "raw_p_value", "verdict", "runs_needed",
                   "deterministic", "paired"}],
  "correction": "holm" | "bh" | "none", "threshold": 0.01
}
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab import __version__
from perflab.model import ResultSet
from perflab.reports.format import fmt_change, fmt_value, md_text
from perflab.reports.terminal import metrics_to_show
from perflab.reports.warnings import result_warnings
from perflab.stats import Comparison, Plan, summarize

SCHEMA = "perflab-result/1"


def _clean(x: Any) -> Any:
    """NaN/inf are not JSON: they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def result_to_json(rs: ResultSet, comparisons: Sequence[Comparison],
                   correction: str = "holm", threshold: float = 0.01) -> dict[str, Any]:
    configs = []
    for cfg in rs.configurations:
        metrics: dict[str, Any] = {}
        for m, info in rs.metrics.items():
            xs = cfg.samples(m)
            if not xs:
                continue
            s = summarize(xs, info.deterministic)
            metrics[m] = {"samples": xs, "median": s.median, "ci_low": s.ci_low,
                          "ci_high": s.ci_high, "mean": s.mean, "stdev": s.stdev, "cv": s.cv,
                          "min": s.min, "max": s.max, "n": s.n, "unit": info.unit,
                          "source": info.source, "deterministic": info.deterministic}
        configs.append({
            "name": cfg.name, "command": cfg.command, "benchmark": cfg.benchmark,
            "params": cfg.params, "cell": cfg.cell, "is_baseline": cfg.is_baseline,
            "commit": cfg.commit, "runs": len(cfg.measured_runs()),
            "failed_runs": sum(1 for r in cfg.runs if r.status != "ok"), "metrics": metrics})
    comps = []
    for c in comparisons:
        d = c.to_dict()
        comps.append({k: d[k] for k in (
            "baseline", "candidate", "cell", "metric", "ratio", "ci_low", "ci_high", "change_pct",
            "p_value", "raw_p_value", "verdict", "runs_needed", "deterministic", "paired",
            "base_median", "cand_median", "diff", "diff_low", "diff_high", "ci_level",
            "estimator", "scale", "note", "direction", "regression", "correction")})
    return _clean({
        "schema": SCHEMA, "perflab_version": __version__, "id": rs.id, "kind": rs.kind,
        "status": rs.status, "created_at": rs.created_at, "label": rs.label,
        "commit": rs.commit, "dirty": rs.dirty, "environment": rs.fingerprint,
        "settings": rs.settings.to_dict(), "notes": rs.notes, "warnings": result_warnings(rs),
        "configurations": configs, "comparisons": comps, "correction": correction,
        "threshold": threshold})


CSV_FIELDS = ["configuration", "cell", "metric", "unit", "n", "median", "ci_low", "ci_high",
              "cv", "min", "max", "source", "baseline", "ratio", "ratio_ci_low",
              "ratio_ci_high", "p_value", "verdict"]


def result_to_csv(rs: ResultSet, comparisons: Sequence[Comparison]) -> str:
    by_key = {(c.cell, c.candidate, c.metric): c for c in comparisons}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    w.writeheader()
    for cfg in rs.configurations:
        for m, info in rs.metrics.items():
            xs = cfg.samples(m)
            if not xs:
                continue
            s = summarize(xs, info.deterministic)
            row: dict[str, Any] = {
                "configuration": cfg.name, "cell": cfg.cell, "metric": m, "unit": info.unit,
                "n": s.n, "median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high,
                "cv": s.cv, "min": s.min, "max": s.max, "source": info.source}
            c = by_key.get((cfg.cell, cfg.name, m))
            if c is not None:
                row.update(baseline=c.baseline, ratio=c.ratio, ratio_ci_low=c.ci_low,
                           ratio_ci_high=c.ci_high, p_value=c.p_value, verdict=c.verdict)
            w.writerow(_clean(row))
    return buf.getvalue()


def result_to_markdown(rs: ResultSet, comparisons: Sequence[Comparison],
                       metrics: Sequence[str] | None = None) -> str:
    """The side-by-side table (one per cell) as GitHub Markdown."""
    shown = metrics_to_show(rs, metrics)
    by_key = {(c.cell, c.candidate, c.metric): c for c in comparisons}
    lines: list[str] = []
    for cell in rs.cells():
        configs = rs.configurations_in(cell)
        base = rs.baseline_in(cell)
        if base is None:
            continue
        others = [c for c in configs if c is not base]
        if cell != "{}":
            lines.append(f"**cell {md_text(cell)}**\n")
        head = ["metric", f"{md_text(base.name)} (baseline)"]
        for c in others:
            head += [md_text(c.name), "change [CI]", "verdict"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for m in shown:
            info = rs.metrics[m]
            bs = base.samples(m)
            if not bs:
                continue
            row = [md_text(m), fmt_value(summarize(bs).median, info.unit)]
            for c in others:
                comp = by_key.get((cell, c.name, m))
                cs = c.samples(m)
                if not cs or comp is None:
                    row += ["-", "-", "-"]
                    continue
                row += [fmt_value(summarize(cs).median, info.unit),
                        fmt_change(comp, info.unit), comp.label]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    for w in result_warnings(rs):
        lines.append(f"- warning: {md_text(w)}")
    for n in rs.notes:
        lines.append(f"- note: {md_text(n)}")
    return "\n".join(lines) + "\n"


# --- other tools' formats -----------------------------------------------------------------------
# Written so that their users' scripts keep working on perflab's results: hyperfine's
# --export-json (scripts/advanced_statistics.py, plot_*.py read results[].times) and pyperf's
# JSON (`python -m pyperf compare_to a.json b.json`).

def _time_in_seconds(rs: ResultSet, metric: str) -> float | None:
    """The factor from ``metric``'s unit to seconds, None when it is not a time."""
    info = rs.metrics.get(metric)
    factors = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    return factors.get(info.unit) if info is not None else None


def result_to_hyperfine(rs: ResultSet) -> dict[str, Any]:
    """hyperfine's --export-json layout: one entry per configuration, ``times`` the wall time
    of each measured run in seconds, ``user``/``system`` the mean CPU seconds, ``exit_codes``
    one per run."""
    out = []
    for cfg in rs.configurations:
        runs = [r for r in cfg.measured_runs() if "wall_time" in r.values]
        times = [r.values["wall_time"] for r in runs]
        if not times:
            continue
        s = summarize(times)
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
    return _clean({"results": out})


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
    meta = {k: v for k, v in {"hostname": fp.get("hostname"), "cpu_model_name": fp.get("cpu_model"),
                              "cpu_count": fp.get("cpu_count"),
                              "platform": fp.get("kernel")}.items() if v is not None}
    benchmarks = []
    for cfg in rs.configurations:
        runs = [{"metadata": {"date": _iso(r.started_at)} if r.started_at else {},
                 "values": [r.values[primary] * factor]}
                for r in cfg.measured_runs() if primary in r.values]
        if runs:
            benchmarks.append({"metadata": {"name": cfg.name, "unit": "second",
                                            "perflab_metric": primary,
                                            "command": " ".join(cfg.command)},
                               "runs": runs})
    return _clean({"version": "1.0", "metadata": meta, "benchmarks": benchmarks})


def _iso(ts: float) -> str:
    from datetime import datetime
    return datetime.fromtimestamp(ts).isoformat(sep=" ")


# --- the registry: every export is one entry (its option and what it writes) ---------------------

@dataclass(frozen=True)
class Exporter:
    option: str  # the command-line option that asks for it
    render: Callable[[ResultSet, Sequence[Comparison], Plan], str]


def _dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


EXPORTERS: dict[str, Exporter] = {
    "json": Exporter("--export-json", lambda rs, comps, plan: _dumps(
        result_to_json(rs, comps, plan.correction, plan.threshold))),
    "csv": Exporter("--export-csv", lambda rs, comps, plan: result_to_csv(rs, comps)),
    "markdown": Exporter("--export-markdown",
                         lambda rs, comps, plan: result_to_markdown(rs, comps)),
    "hyperfine": Exporter("--export-hyperfine",
                          lambda rs, comps, plan: _dumps(result_to_hyperfine(rs))),
    "pyperf": Exporter("--export-pyperf", lambda rs, comps, plan: _dumps(result_to_pyperf(rs))),
}


def export_all(rs: ResultSet, comps: Sequence[Comparison], plan: Plan,
               paths: dict[str, Path | None]) -> list[Path]:
    """Write every export asked for (format -> path); returns the paths written.  Raises
    OSError with ``filename`` set to the path that could not be written."""
    written = []
    for fmt, path in paths.items():
        if path is None:
            continue
        text = EXPORTERS[fmt].render(rs, comps, plan)
        try:
            path.write_text(text)
        except OSError as e:
            e.filename = str(path)
            raise
        written.append(path)
    return written
