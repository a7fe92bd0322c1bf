"""MeasureOptions are made in one place (issue 24): MeasureOptions.of, which stat and compare
(session.build_options), a suite (suites.execute.measure_options) and a bisect
(Bisector._options) all call."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from perflab import session
from perflab.errors import PerflabError
from perflab.judging import DEFAULT_ESTIMATOR, Plan
from perflab.runner import MeasureOptions, measured_plan

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "perflab"


def test_no_metric_named_lets_the_warm_up_choose() -> None:
    o = MeasureOptions.of(metric=None, default_primary="ns_per_op", runs=6)
    assert o.primary_metric == "ns_per_op" and o.auto_primary and o.runs == 6
    named = MeasureOptions.of(metric="max_rss")
    assert named.primary_metric == "max_rss" and not named.auto_primary
    assert not MeasureOptions.of(metric=None, auto_primary=False).auto_primary


def test_the_plan_travels_through_the_options() -> None:
    plan = Plan(threshold=0.05, correction="bh", estimator="median", bands={"max_rss": "64KiB"})
    o = MeasureOptions.of(metric=None, plan=plan, runs=6)
    assert o.plan is plan  # passed through, not unpacked
    stored = measured_plan(o)  # what the measurement stores: the caller's, with its looks
    assert stored == replace(plan, looks=1) and stored is not plan
    assert stored.bands is not plan.bands  # the measurement's own copy
    assert MeasureOptions.of(metric=None).plan == Plan()


def test_the_command_line_builds_through_it() -> None:
    plan = session.judging_plan(None, 0.02, "bh", {"max_rss": "64KiB"})
    assert (plan.threshold, plan.correction, plan.estimator, plan.bands) == (
        0.02, "bh", str(DEFAULT_ESTIMATOR), {"max_rss": "64KiB"})
    o = session.build_options(session.Schedule(max_runs=100, seed=3),
                              session.RunSetup(no_counters=True), plan, None)
    assert o.auto_primary and o.primary_metric == "wall_time" and o.counters == "none"
    assert o.plan is plan and (o.seed, o.max_runs) == (3, 100)
    with pytest.raises(PerflabError, match="--budget"):
        session.build_options(session.Schedule(budget=-1.0), session.RunSetup(), plan, None)


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
