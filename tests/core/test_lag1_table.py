"""The pooled lag-1 correlation's calibration (stats._lag1_calibration) read from the package's
precomputed table (data/lag1_calibration.npz, scripts/make_lag1_table.py): it holds every
combination pool_serial can ask for, equals the simulation it caches, and a combination it
lacks is simulated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from perflab import stats
from perflab.judging import SERIAL_POOL_MAX_RUNS, parse_estimator, trim_counts
from perflab.simulate import ar1
from perflab.stats import (
    _lag1_calibration,
    _lag1_table,
    pool_serial,
    read_lag1_table,
    simulate_lag1_calibration,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def fresh_calibration() -> Iterator[None]:
    """No calibration cached from another test, nor left for the next one."""
    _lag1_calibration.cache_clear()
    yield
    _lag1_calibration.cache_clear()


def _asked() -> set[tuple[int, int, int]]:
    """Every (runs, low, high) pool_serial can ask for under the estimators perflab names
    (mean, median, the default trim): series of 3 to SERIAL_POOL_MAX_RUNS runs (pool_serial
    pools 3 or more)."""
    ests = [parse_estimator(t) for t in ("mean", "median", "trim")]
    return {(n, *trim_counts(n, e)) for n in range(3, SERIAL_POOL_MAX_RUNS + 1) for e in ests}


def test_the_table_holds_every_combination_the_named_estimators_ask_for() -> None:
    asked = _asked()
    assert (10, 2, 2) in asked and (25, 5, 5) in asked and (10, 0, 0) in asked
    assert asked <= set(_lag1_table())
    assert not {k for k in _lag1_table() if k[0] > SERIAL_POOL_MAX_RUNS}


@pytest.mark.parametrize("n", [3, 6, 10, 19])
def test_the_table_equals_the_simulation(n: int) -> None:
    table = _lag1_table()
    trims = sorted((kl, kh) for m, kl, kh in table if m == n)
    trims = [trims[0], trims[len(trims) // 2], trims[-1]]
    for (kl, kh), (mean, sd) in zip(trims, simulate_lag1_calibration(n, trims), strict=True):
        np.testing.assert_allclose(table[(n, kl, kh)][0], mean, rtol=0, atol=1e-12)
        np.testing.assert_allclose(table[(n, kl, kh)][1], sd, rtol=0, atol=1e-12)


def test_a_combination_not_in_the_table_is_simulated(monkeypatch: pytest.MonkeyPatch,
                                                     fresh_calibration: None) -> None:
    planted = (np.zeros(len(stats._RHO_GRID)), np.ones(len(stats._RHO_GRID)))
    monkeypatch.setattr(stats, "_lag1_table", lambda: {(10, 2, 2): planted})
    assert _lag1_calibration(10, 2, 2) is planted  # read from the table
    mean, sd = _lag1_calibration(9, 1, 1)  # not in it
    want = simulate_lag1_calibration(9, [(1, 1)])[0]
    assert np.array_equal(mean, want[0]) and np.array_equal(sd, want[1])
    assert mean[-1] > mean[0] and sd.min() > 0


def test_a_table_of_another_simulation_or_none_is_not_used(tmp_path: Path) -> None:
    with np.load(Path(stats.__file__).parent / stats.LAG1_TABLE) as z:
        arrays = dict(z)
    np.savez(tmp_path / "same.npz", **arrays)
    np.savez(tmp_path / "other.npz", **{**arrays, "series": 1000})
    assert len(read_lag1_table(tmp_path / "same.npz")) == len(arrays["keys"])
    assert read_lag1_table(tmp_path / "other.npz") == {}
    assert read_lag1_table(tmp_path / "missing.npz") == {}


def test_pool_serial_is_the_same_with_and_without_the_table(
        monkeypatch: pytest.MonkeyPatch, fresh_calibration: None) -> None:
    rng = np.random.default_rng(11)
    xs = [ar1(rng, n, 0.4, 0.02) for n in (6, 8, 8, 10, 12)]
    for est in ("trim", "trim:0.1:0.25"):
        with_table = pool_serial(xs, parse_estimator(est))
        _lag1_calibration.cache_clear()
        with monkeypatch.context() as m:
            m.setattr(stats, "_lag1_table", dict)
            simulated = pool_serial(xs, parse_estimator(est))
        _lag1_calibration.cache_clear()
        assert with_table is not None and simulated is not None
        assert (with_table.series, with_table.pairs) == (simulated.series, simulated.pairs)
        assert with_table.rho == pytest.approx(simulated.rho, abs=1e-12)
        assert with_table.estimate == pytest.approx(simulated.estimate, abs=1e-12)
