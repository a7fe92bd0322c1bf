"""The band printed beside the verdicts is the band that decided them, for each kind of metric,
in every view (terminal verdicts line, HTML and Markdown headings, Markdown export, JSON): a
memory suite said "verdicts at ±1%" while the ±0.2% memory band decided its -0.6% "smaller"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perflab.judging import Plan
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports.analysis import Analysis
from perflab.reports.export import EXPORTERS
from perflab.reports.terminal import bands_text, correction_line, verdicts_heading
from perflab.stats import bands_used

pytestmark = pytest.mark.unit

METRICS = {"task_clock": BUILTIN_METRICS["task_clock"], "max_rss": BUILTIN_METRICS["max_rss"],
           "minor_faults": BUILTIN_METRICS["minor_faults"],
           "heap_kib": MetricInfo("heap_kib", "KiB", "workload JSON"),
           "instructions_per_op": MetricInfo("instructions_per_op", "", "workload JSON")}


def _result() -> ResultSet:
    rng = np.random.default_rng(11)
    rs = ResultSet(kind="compare", metrics=dict(METRICS),
                   settings={"interleaved": True, "primary_metric": "task_clock"})
    centre = {"task_clock": 0.01, "max_rss": 40_000.0, "minor_faults": 300.0,
              "heap_kib": 9_000.0, "instructions_per_op": 120.0}
    for name, f in (("a", 1.0), ("b", 0.994)):
        cfg = Configuration(name=name, command=[name], cell="{}", is_baseline=name == "a")
        cfg.runs = [Run(seq=i, values={m: round(v * f * rng.normal(1, 0.001), 3)
                                       for m, v in centre.items()}) for i in range(20)]
        rs.configurations.append(cfg)
    return rs


@pytest.mark.parametrize("own", [{}, {"heap_kib": "64KiB"}, {"memory": "1%"}])
def test_the_band_printed_for_each_kind_is_the_band_that_decided(own: dict[str, str]) -> None:
    rs = _result()
    plan = Plan(threshold=0.03, bands=own)
    a = Analysis.judge(rs, list(METRICS), plan)
    used = bands_used(a.comparisons)
    for c in a.comparisons:
        decided = plan.band_for(c.metric, rs.metrics[c.metric])
        assert (c.threshold, c.abs_band) == (decided.rel, decided.absolute)
        (b,) = [b for b in used if c.metric in b.metrics]
        assert b.band == decided, c.metric
    text = bands_text(a.comparisons)
    assert "time ±3%" in text and "counts ±3% or ±0.5" in text
    memory = {"memory": "memory ±1%"}.get(next(iter(own), ""), "memory ±0.2%")
    assert memory in text
    if own.get("heap_kib"):
        assert "heap_kib ±64 KiB" in text
    assert "instructions_per_op ±3%" in text  # a count of its own: no half-event floor
    views = [correction_line(a, "task_clock"), verdicts_heading(a),
             EXPORTERS["markdown"].render(a)]
    for v in views:
        assert text in v
    doc = json.loads(EXPORTERS["json"].render(a))
    assert [(b["name"], b["text"]) for b in doc["bands"]] == [
        (b.name, t.split(" ", 1)[1]) for b, t in zip(used, text.split(", "), strict=True)]


def test_a_memory_change_decided_by_its_band_is_printed_with_that_band() -> None:
    """-0.6% on max_rss is "smaller" against ±0.2%, and the line says ±0.2%, not ±1%."""
    a = Analysis.judge(_result(), ["max_rss"], Plan(threshold=0.01))
    (c,) = a.comparisons
    assert c.verdict == "smaller"
    assert "memory ±0.2%" in correction_line(a, "task_clock")
    assert "±1%" not in bands_text(a.comparisons)


def test_claims_on_metrics_other_than_the_primary_are_marked_exploratory_everywhere() -> None:
    from perflab.reports.matrix import comparison_rows
    from perflab.reports.terminal import compare_table

    a = Analysis.judge(_result(), list(METRICS), Plan(threshold=0.003))
    by = {c.metric: c for c in a.comparisons}
    assert by["task_clock"].verdict != "inconclusive" and not by["task_clock"].exploratory
    assert "exploratory" not in by["task_clock"].label
    claims = [c for c in a.comparisons if c.metric != "task_clock" and c.verdict != "inconclusive"]
    assert claims and all(c.label.endswith("exploratory)") for c in claims)
    table = [[x.text for x in r] for r in compare_table(a, list(METRICS), "{}").rows]
    for c in claims:
        (row,) = [r for r in table if r[0] == c.metric]
        assert c.label in row
        assert comparison_rows(a, c.metric)[0]["verdict"] == c.label
    assert "exploratory (their claims so marked)" in correction_line(a, "task_clock")
    md = EXPORTERS["markdown"].render(a)
    assert all(c.label in md for c in claims)
    assert "exploratory: their claims so marked" in verdicts_heading(a)
