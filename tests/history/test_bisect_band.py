"""bisect's guarantees on a small seeded simulation through the Bisector's own step rule
(history.simulate: StepRule, stats.bisect_step at stats.bisect_levels, the band from the
check): a true 8% step at 5% noise a run, bisect's defaults (--runs 10, 8 rounds at most),
16 commits after good."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.history.simulate import bisect_trial
from perflab.judging import DEFAULT_THRESHOLD
from perflab.stats import bisect_band

pytestmark = pytest.mark.unit


def test_the_right_commit_is_named_and_unchanged_commits_are_good() -> None:
    rng = np.random.default_rng(33)
    trials = [bisect_trial(rng, 16, 1.08, 0.05) for _ in range(60)]
    steps = [s for t in trials for s in t.steps]
    unchanged = [d for changed, d in steps if not changed]
    changed = [d for c, d in steps if c]
    assert all(t.checked for t in trials)
    assert sum(t.named for t in trials) >= 0.85 * len(trials)  # goal 90%; 95% in 300
    assert unchanged.count("good") >= 0.80 * len(unchanged)
    assert unchanged.count("bad") <= 0.01 * len(unchanged)
    assert changed.count("good") <= 0.01 * len(changed)


def test_the_band_is_the_midpoint_of_the_step() -> None:
    assert bisect_band(1.21) == pytest.approx(0.10)
    assert bisect_band(1.01) == DEFAULT_THRESHOLD  # never below the default
    assert bisect_band(0.9) == DEFAULT_THRESHOLD
    assert bisect_band(float("nan")) == DEFAULT_THRESHOLD


def test_after_the_check_the_band_is_in_the_worse_direction_and_the_levels_relax() -> None:
    from pathlib import Path

    from perflab.history.bisect import BisectSpec, StepRule
    from perflab.metrics import MetricInfo
    from perflab.stats import BISECT_ALPHA, BISECT_CHECK_ALPHA

    rule = StepRule.for_spec(BisectSpec(repo=Path("."), good="a", bad="b", build="true"))
    assert sum(rule.levels) == pytest.approx(BISECT_CHECK_ALPHA)
    rate = MetricInfo("ops_per_s", "1/s", "workload", direction="higher")
    after = rule.after_check(-20.0, rate)  # a throughput 20% lower: 1.25x worse
    assert after.threshold == pytest.approx(bisect_band(1.25))
    assert sum(after.levels) == pytest.approx(BISECT_ALPHA)
    assert rule.after_check(None, rate).threshold == rule.threshold
