"""The statistics written without scipy.stats (issue 25: its import is 0.35 s that `stat`,
`results show` and `report` need not pay) give scipy.stats' figures exactly: the median's CI
from cached order-statistic ranks is quantile_test's interval, and Benjamini-Hochberg is
false_discovery_control's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from perflab.stats import _median_ci_ranks, adjust, benjamini_hochberg, median_ci

pytestmark = pytest.mark.unit

LEVELS = [0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9999, 0.123, 0.6789]


@pytest.mark.parametrize("n", [6, 7, 8, 10, 19, 20, 33, 100, 501])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_median_ci_is_quantile_tests_interval(n: int, confidence: float) -> None:
    rng = np.random.default_rng(n)
    for _ in range(3):
        x = rng.lognormal(size=n)
        x[1] = x[0]  # a tie
        want = sps.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(confidence)
        np.testing.assert_array_equal(median_ci(x, confidence), (want.low, want.high))


@pytest.mark.parametrize("confidence", LEVELS)
def test_ranks_are_the_binomial_quantiles_quantile_test_uses(confidence: float) -> None:
    """quantile_test's interval of sorted x is x[binom.ppf(tail) - 1], x[binom.isf(tail)]
    (nan outside 0..n-1): checked for every n up to 700 and some up to 10,000, at levels that
    leave a rank at an end (0.5-0.9999)."""
    ns = np.r_[1:701, 1000, 2001, 5000, 10_000]
    tail = (1 - confidence) / 2
    low = sps.binom(ns, 0.5).ppf(tail).astype(int) - 1
    high = sps.binom(ns, 0.5).isf(tail).astype(int)
    for n, lo, hi in zip(ns.tolist(), low.tolist(), high.tolist(), strict=True):
        want = (lo if lo >= 0 else math.nan, hi if hi < n else math.nan)
        np.testing.assert_array_equal(_median_ci_ranks(n, confidence), want, err_msg=str(n))


def test_ranks_refuse_a_level_outside_0_1() -> None:
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            _median_ci_ranks(10, bad)


def _p_value_sets() -> list[np.ndarray]:
    rng = np.random.default_rng(25)
    sets = [np.array([0.01, 0.04, 0.03, 0.005]), np.array([0.5]), np.array([0.0, 1.0, 1.0]),
            np.array([0.02, 0.02, 0.02, 0.5, 0.5])]  # ties
    for m in (2, 3, 5, 10, 37, 200, 1000):
        sets.append(rng.uniform(size=m))
        sets.append(rng.uniform(size=m) ** 6)  # many small ones, as in a regressed suite
        sets.append(np.round(rng.uniform(size=m), 2))  # many ties
    return sets


@pytest.mark.parametrize("p", _p_value_sets(), ids=lambda p: f"m{len(p)}")
def test_benjamini_hochberg_is_scipys(p: np.ndarray) -> None:
    want = sps.false_discovery_control(p, method="bh")
    np.testing.assert_array_equal(benjamini_hochberg(p), want)  # bit for bit
    np.testing.assert_array_equal(adjust(p.tolist(), "bh"), want)


def test_benjamini_hochberg_refuses_what_scipy_refuses() -> None:
    for bad in ([0.1, 1.5], [0.1, math.nan], [-0.1, 0.2]):
        with pytest.raises(ValueError):
            sps.false_discovery_control(np.asarray(bad), method="bh")
        with pytest.raises(ValueError):
            benjamini_hochberg(bad)
