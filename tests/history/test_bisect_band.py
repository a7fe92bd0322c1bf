"""bisect's band, derived from the measured step (issue 19, item 7).  A seeded simulation of
bisect's own step rule (stats.bisect_step) with bisect's defaults: --runs 10 --max-rounds 3,
a true 8% step at 5% noise a run."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.model import MetricInfo
from perflab.stats import (
    BISECT_STEP_LOOKS,
    DEFAULT_THRESHOLD,
    bisect_band,
    bisect_step,
    parse_estimator,
)

pytestmark = pytest.mark.unit

INFO = MetricInfo("task_clock", "ms", "perf")
EST = parse_estimator("trim")


def _judge(rng: np.random.Generator, ratio: float, threshold: float, looks: int,
           runs: int = 10, rounds: int = 3) -> tuple[str, float]:
    """One bisect step: rounds of interleaved runs until decided, else skip."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        a += list(np.exp(rng.normal(0, 0.05, runs)))
        b += list(ratio * np.exp(rng.normal(0, 0.05, runs)))
        decision, c = bisect_step(a, b, threshold=threshold, looks=looks, info=INFO,
                                  paired=True, estimator=EST)
        if decision != "inconclusive":
            return decision, c.ratio
    return "skip", c.ratio


def test_unchanged_commits_are_good_and_never_wrongly_bad() -> None:
    rng = np.random.default_rng(4)
    unchanged: dict[str, int] = {}
    stepped: dict[str, int] = {}
    checks = 0
    for _ in range(150):
        decision, ratio = _judge(rng, 1.08, DEFAULT_THRESHOLD, 3)  # the check: bad vs good
        if decision != "bad":
            continue
        checks += 1
        band = bisect_band(ratio)
        for out, true in ((unchanged, 1.0), (stepped, 1.08)):
            d, _ = _judge(rng, true, band, BISECT_STEP_LOOKS)
            out[d] = out.get(d, 0) + 1
    assert checks >= 140
    assert unchanged.get("good", 0) >= 0.80 * checks, unchanged
    assert unchanged.get("bad", 0) <= 0.025 * checks, unchanged
    assert stepped.get("good", 0) <= 0.025 * checks, stepped
    assert stepped.get("bad", 0) >= 0.5 * checks, stepped


def test_the_band_is_the_midpoint_of_the_step() -> None:
    assert bisect_band(1.21) == pytest.approx(0.10)
    assert bisect_band(1.01) == DEFAULT_THRESHOLD  # never below the default
    assert bisect_band(0.9) == DEFAULT_THRESHOLD
    assert bisect_band(float("nan")) == DEFAULT_THRESHOLD
