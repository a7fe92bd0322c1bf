"""Summaries as CSV: one row per configuration and metric, with its comparison."""

from __future__ import annotations

import csv
import io
from typing import Any

from perflab.reports.analysis import Analysis
from perflab.reports.export import clean
from perflab.table import csv_cell

CSV_FIELDS = ["configuration", "cell", "metric", "unit", "n", "median", "ci_low", "ci_high",
              "cv", "min", "max", "source", "baseline", "ratio", "ratio_ci_low",
              "ratio_ci_high", "p_value", "verdict", "label", "status"]


def result_to_csv(a: Analysis) -> str:
    rs = a.rs
    by_key = {(c.cell, c.candidate, c.metric): c for c in a.comparisons}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    w.writeheader()
    for cfg in rs.configurations:
        for m, info in rs.metrics.items():
            if not cfg.samples(m):
                continue
            s = a.summary(cfg, m)
            row: dict[str, Any] = {
                "configuration": cfg.name, "cell": cfg.cell, "metric": m, "unit": info.unit,
                "n": s.n, "median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high,
                "cv": s.cv, "min": s.min, "max": s.max, "source": info.source,
                "status": rs.status}
            c = by_key.get((cfg.cell, cfg.name, m))
            if c is not None:
                row.update(baseline=c.baseline, ratio=c.ratio, ratio_ci_low=c.ci_low,
                           ratio_ci_high=c.ci_high, p_value=c.p_value, verdict=c.verdict,
                           label=c.label)  # as printed: "(regression, not interleaved)"
            w.writerow({k: csv_cell(v) for k, v in clean(row).items()})
    return buf.getvalue()


def render(a: Analysis) -> str:
    return result_to_csv(a)
