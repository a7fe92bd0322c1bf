"""MeasureOptions are made in one place (issue 24): MeasureOptions.of, which stat and compare
(session.build_options), a suite (suites.execute.measure_options) and a bisect
(Bisector._options) all call."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from perflab import session
from perflab.judging import Plan
from perflab.runner import MeasureOptions

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"


def test_no_metric_named_lets_the_warm_up_choose() -> None:
    o = MeasureOptions.of(metric=None, default_primary="ns_per_op", runs=6)
    assert o.primary_metric == "ns_per_op" and o.auto_primary and o.runs == 6
    named = MeasureOptions.of(metric="max_rss")
    assert named.primary_metric == "max_rss" and not named.auto_primary
    assert not MeasureOptions.of(metric=None, auto_primary=False).auto_primary


def test_the_plan_travels_into_the_options() -> None:
    plan = Plan(threshold=0.05, correction="bh", estimator="median", bands={"max_rss": "64KiB"})
    o = MeasureOptions.of(metric=None, plan=plan)
    assert (o.threshold, o.correction, o.estimator, o.bands) == (
        0.05, "bh", "median", {"max_rss": "64KiB"})
    assert o.bands is not plan.bands  # the options' own copy
    d = MeasureOptions.of(metric=None)
    assert (d.threshold, d.correction, d.bands) == (Plan().threshold, Plan().correction, {})


def test_the_command_line_builds_through_it() -> None:
    o = session.build_options(warmup=1, runs=None, min_runs=None, max_runs=100, budget=None,
                              precision=None, metric=None, pin=None, timeout=None, env=None,
                              ignore_failure=False, no_counters=True, region_symbol=None,
                              seed=3, threshold=0.02, correction="bh")
    assert o.auto_primary and o.primary_metric == "wall_time" and o.counters == "none"
    assert (o.threshold, o.correction, o.seed) == (0.02, "bh", 3)


def test_options_are_constructed_only_by_measure_options_of() -> None:
    """A second constructor call would be a second place deciding what the options mean."""
    calls = []
    for p in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name == "MeasureOptions":
                    calls.append(f"{p.relative_to(SRC)}:{node.lineno}")
    assert calls == [], f"make MeasureOptions with MeasureOptions.of: {calls}"
