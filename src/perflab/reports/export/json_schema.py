"""perflab's own JSON export, the documented schema (docs/export-schema.md); `perflab import`
reads it back.

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
                   "deterministic", "paired", "base_center", "cand_center", "coarse",
                   "exploratory", ...,
                   "threshold", "abs_band", "unit"}],
                   (base_center, cand_center: the values the change is made of, their ratio
                   the ratio)
                   (the comparison's band: relative part, absolute part in its unit)
  "correction": "holm" | "bh" | "none", "threshold": 0.01,
  "bands": [{"kind", "applies_to": "kind" | "metric", "name", "relative", "absolute", "unit",
             "text", "metrics"}]   (the bands that decided, stats.bands_used)
}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab import __version__
from perflab.format import fmt_band
from perflab.reports.analysis import Analysis
from perflab.reports.export import clean, dumps
from perflab.reports.warnings import result_warnings
from perflab.stats import Comparison, bands_used

SCHEMA = "perflab-result/1"


def result_to_json(a: Analysis) -> dict[str, Any]:
    """The result as perflab-result/1 JSON; the analysis' plan is how its comparisons were
    judged (no default: a suite's result.json once stated holm and 1% whatever the suite
    said)."""
    rs, plan = a.rs, a.plan
    configs = []
    for cfg in rs.configurations:
        metrics: dict[str, Any] = {}
        for m, info in rs.metrics.items():
            xs = cfg.samples(m)
            if not xs:
                continue
            s = a.summary(cfg, m)
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
    for c in a.comparisons:
        d = c.to_dict()
        comps.append({k: d[k] for k in (
            "baseline", "candidate", "cell", "metric", "ratio", "ci_low", "ci_high", "change_pct",
            "p_value", "raw_p_value", "verdict", "runs_needed", "deterministic", "paired",
            "base_median", "cand_median", "base_center", "cand_center", "coarse", "exploratory",
            "diff",
            "diff_low", "diff_high", "ci_level",
            "estimator", "scale", "note", "direction", "regression", "correction",
            "threshold", "abs_band", "unit")})
    return clean({
        "schema": SCHEMA, "perflab_version": __version__, "id": rs.id, "kind": rs.kind,
        "status": rs.status, "created_at": rs.created_at, "label": rs.label,
        "commit": rs.commit, "dirty": rs.dirty, "environment": rs.fingerprint.to_json(),
        "settings": rs.settings.to_dict(), "notes": rs.notes, "warnings": result_warnings(a),
        "configurations": configs, "comparisons": comps, "correction": plan.correction,
        "threshold": plan.threshold, "bands": bands_json(a.comparisons)})


def bands_json(comps: Sequence[Comparison]) -> list[dict[str, Any]]:
    """The bands the comparisons were judged against, by kind (stats.bands_used), as the
    verdict lines print them."""
    return [{"kind": b.kind, "applies_to": "kind" if b.name == b.kind else "metric",
             "name": b.name, "relative": b.band.rel, "absolute": b.band.absolute,
             "unit": b.unit, "text": fmt_band(b.band.rel, b.band.absolute, b.unit),
             "metrics": list(b.metrics)} for b in bands_used(comps)]


def render(a: Analysis) -> str:
    return dumps(result_to_json(a))
