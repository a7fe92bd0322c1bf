"""The median's CI from cached order-statistic ranks is scipy's quantile_test interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from perflab.stats import median_ci

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("n", [6, 7, 8, 10, 19, 20, 33, 100, 501])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_median_ci_is_quantile_tests_interval(n: int, confidence: float) -> None:
    rng = np.random.default_rng(n)
    for _ in range(3):
        x = rng.lognormal(size=n)
        x[1] = x[0]  # a tie
        want = sps.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(confidence)
        np.testing.assert_array_equal(median_ci(x, confidence), (want.low, want.high))
