"""One Analysis per result (issue 24): every view of a result reads the summaries computed once.

Before, stats.summarize ran inside each renderer (terminal x3, every export, the warnings, the
suite's matrix x4): rendering every view of one result summarized the same samples again and
again, each view with its own defaults."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from perflab import stats
from perflab.judging import Plan, parse_estimator
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import matrix, terminal
from perflab.reports.analysis import Analysis
from perflab.reports.export import EXPORTERS
from perflab.reports.warnings import result_warnings, suite_warnings
from perflab.stats import compare_result

pytestmark = pytest.mark.unit

METRICS = ("wall_time", "task_clock", "max_rss")


def _result() -> ResultSet:
    rs = ResultSet(kind="compare", status="complete",
                   settings={"interleaved": True, "primary_metric": "task_clock",
                             "comparison": {"threshold": 0.05, "correction": "bh"}},
                   metrics={m: BUILTIN_METRICS[m] for m in METRICS})
    for name, f in (("a", 1.0), ("b", 1.3), ("c", 1.001)):
        cfg = Configuration(name=name, command=[name], is_baseline=name == "a")
        # an outlier in the last run: the warnings read the primary metric's summary too;
        # each (configuration, metric) its own samples, so the test can tell them apart
        cfg.runs = [Run(seq=i, values={m: (k + 1) * f * (1 + 0.002 * i) * (3 if i == 9 else 1)
                                       for k, m in enumerate(METRICS)}) for i in range(10)]
        rs.configurations.append(cfg)
    return rs


def _render_every_view(a: Analysis, tmp_path: Path) -> dict[str, str]:
    """Every view of one result: its terminal tables and warnings, each export, and a suite
    report's tables and warnings."""
    rs = a.rs
    con = Console(width=250, record=True, file=io.StringIO())
    con.print(terminal.stat_table(a, rs.configurations[0], list(METRICS)))
    con.print(terminal.compare_table(a, list(METRICS), "{}"))
    con.print(terminal.correction_line(a, "task_clock"))
    out = {"terminal": con.export_text(), "warnings": "\n".join(result_warnings(a))}
    out.update({name: e.render(a) for name, e in EXPORTERS.items()})
    for m in METRICS:
        out[f"medians {m}"] = json.dumps(matrix.medians_rows(a, m))
        out[f"comparisons {m}"] = json.dumps(matrix.comparison_rows(a, m))
        out[f"suite warnings {m}"] = repr(suite_warnings(a, m))
    out["counters"] = json.dumps(matrix.counter_rows(a, "{}"))
    out["raw"] = matrix.to_csv(matrix.raw_rows(a, list(METRICS)))
    return out


def test_every_view_of_a_result_reads_its_summaries_computed_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rs = _result()
    plan = Plan.of(rs)
    a = Analysis.of(rs, compare_result(rs, list(METRICS), plan=plan), plan)
    calls: Counter[tuple[float, ...]] = Counter()
    real = stats.summarize

    def counting(samples: Sequence[float], *args: object, **kw: object) -> stats.Summary:
        calls[tuple(samples)] += 1
        return real(samples, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(stats, "summarize", counting)
    first = _render_every_view(a, tmp_path)
    again = _render_every_view(a, tmp_path)
    assert first == again
    # one summary per (configuration, metric) that has samples, however many views read it
    assert sum(calls.values()) == len(rs.configurations) * len(METRICS)
    assert set(calls.values()) == {1}


def test_the_views_read_the_plan_of_the_analysis_not_defaults() -> None:
    """No renderer keeps a threshold or correction of its own: the JSON export and the
    correction line state the analysis' plan (bh, 5%), not the defaults (holm, 1%)."""
    rs = _result()
    plan = Plan.of(rs)
    assert (plan.threshold, plan.correction) == (0.05, "bh")
    a = Analysis.of(rs, compare_result(rs, list(METRICS), plan=plan), plan)
    doc = json.loads(EXPORTERS["json"].render(a))
    assert (doc["threshold"], doc["correction"]) == (0.05, "bh")
    line = terminal.correction_line(a, "task_clock")
    assert "time ±5%" in line and "Benjamini-Hochberg" in line
    assert "outlier" in "\n".join(result_warnings(a))


def test_a_summary_is_the_stats_summary_of_the_configurations_samples() -> None:
    rs = _result()
    a = Analysis.of(rs)
    cfg = rs.configurations[1]
    assert a.summary(cfg, "wall_time") == stats.summarize(cfg.samples("wall_time"))
    assert a.summaries("wall_time")[(cfg.cell, "b")] is a.summary(cfg, "wall_time")
    est = parse_estimator("mean")
    assert a.summary(cfg, "wall_time", est).center == pytest.approx(
        sum(cfg.samples("wall_time")) / 10)
    assert a.comparisons == () and a.plan == Plan.of(rs)


def test_the_outlier_warning_names_the_estimator_the_analysis_judged_with() -> None:
    """`results show --estimator mean` judges with the mean: its outlier warning said the
    stored estimator (the trimmed mean) was robust to them; it reads the analysis' plan."""
    rs = _result()
    stored = Analysis.of(rs)
    assert "20% trimmed mean the verdicts use is robust" in "\n".join(result_warnings(stored))
    mean = Analysis.of(rs, plan=Plan.of(rs, estimator="mean"))
    assert "the mean the verdicts use is not robust" in "\n".join(result_warnings(mean))
