"""detect on few points, drift, and the machines that measured a range: seeded simulations
through detect's own path (history.simulate.detect_fleet: detect_series, then
across_machines), small enough for the unit tier."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.history.detect import Thresholds, classify, series_level
from perflab.history.simulate import detect_fleet

pytestmark = pytest.mark.unit

STEP = [1.0] * 3 + [1.14] * 3  # a week of nightly runs: 3 points each side of a +14% step


def test_a_short_series_is_judged_at_the_series_alpha_split_over_its_places() -> None:
    t = Thresholds()
    assert series_level(6, t) == pytest.approx(0.01 / 3)  # 3 places with 2-point levels
    assert series_level(100, t) == pytest.approx(t.max_pvalue, rel=0.05)
    assert series_level(200, t) == t.max_pvalue  # long series: max_pvalue, as before
    assert series_level(20, t) > series_level(50, t) > t.max_pvalue


def test_the_3_plus_3_step_is_found_as_a_step_on_every_machine() -> None:
    rng = np.random.default_rng(7)
    fleets = [detect_fleet(rng, STEP, 0.02) for _ in range(40)]
    every = sum(all(any(c.index == 3 and c.kind == "step" for c in cps) for cps in f)
                for f in fleets)
    assert every >= 38, every  # goal: every machine; 100% of 1,000 fleets at CV 2%
    assert not any(c.index != 3 for f in fleets for cps in f for c in cps)


def test_a_change_found_on_one_machine_is_tested_on_the_others_at_its_range() -> None:
    rng = np.random.default_rng(3)
    ranged = [c for _ in range(20) for cps in detect_fleet(rng, STEP, 0.02) for c in cps
              if c.found_by == "range"]
    assert ranged and all(c.index == 3 and c.regression for c in ranged)


def test_flat_short_series_give_few_false_points() -> None:
    rng = np.random.default_rng(11)
    false = sum(len(cps) for n in (6, 10, 20) for _ in range(40)
                for cps in detect_fleet(rng, [1.0] * n, 0.025))
    assert false <= 2, false  # 3 x 120 series; measured 1.3% at 6 points, 0.2% at 20


def test_a_slow_drift_is_reported_as_drift_and_a_step_as_a_step() -> None:
    rng = np.random.default_rng(21)
    drift = [detect_fleet(rng, list(np.linspace(1, 1.05, 50)), 0.01, machines=1)[0]
             for _ in range(30)]
    assert all(cps for cps in drift)
    assert sum(all(c.kind == "drift" for c in cps) for cps in drift) >= 26
    x = np.arange(40, dtype=float)
    assert classify(list(1 + 0.001 * x), [20]) == ["drift"]
    assert classify([1.0] * 20 + [1.1] * 20, [20]) == ["step"]
    assert classify([1.0, 1.01, 0.99, 1.1, 1.12, 1.11], [3]) == ["step"]  # levels too short
