"""The heavy-tailed families of benchmarks/sim_pooled.py (--tails) and sim_two_sample.py slow
the share of runs each file is asked for: the same share in both files, or more slow runs in
the new file than in the old, each run on its own or in bursts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from sim_pooled import tailed_family  # noqa: E402
from sim_two_sample import mean_ratio  # noqa: E402

pytestmark = pytest.mark.unit

K, N = 300, 20
# A slowed run is 1.5-2.0 times its value; the noise (CV 2% and the drift both files share)
# keeps every other run within a few percent of 1.
SLOW = 1.3


def slowed(q: float, burst: bool, q_new: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Which runs of the old and of the new file were slowed (K x N each)."""
    pairs = tailed_family(np.random.default_rng(3), K, N, q, burst, None, 0.0, q_new)
    return (np.asarray([a for a, _ in pairs]) > SLOW, np.asarray([b for _, b in pairs]) > SLOW)


def next_slowed(s: np.ndarray) -> float:
    """The share of a file's slowed runs whose next run in that file is slowed too."""
    return float((s[:, 1:] & s[:, :-1]).sum() / s[:, :-1].sum())


@pytest.mark.parametrize("burst", [False, True])
@pytest.mark.parametrize(("q", "q_new"), [(0.05, 0.15), (0.15, 0.30), (0.15, None)])
def test_each_file_gets_its_share_of_slow_runs(q: float, q_new: float | None,
                                               burst: bool) -> None:
    old, new = slowed(q, burst, q_new)
    want_new = q if q_new is None else q_new
    # Binomial sd over 6,000 runs at most 0.6 points; bursts about sqrt(5) times that.
    assert abs(old.mean() - q) < 0.025, old.mean()
    assert abs(new.mean() - want_new) < 0.025, new.mean()
    for s, share in ((old, q), (new, want_new)):
        if burst:
            assert next_slowed(s) > share + 0.15, (next_slowed(s), share)
        else:
            assert abs(next_slowed(s) - share) < 0.06, (next_slowed(s), share)


def test_no_slow_runs_without_tails() -> None:
    old, new = slowed(0.0, True, None)
    assert not old.any() and not new.any()


def test_the_same_share_shares_the_slow_spells_of_the_machine() -> None:
    # One chain over the run slots: in bursts, a slowed old run is often followed by a slowed
    # new run in the next slot; where the shares differ, each file's chain is its own.
    same_old, same_new = slowed(0.15, True, None)
    own_old, own_new = slowed(0.15, True, 0.30)
    together = (same_old & same_new).sum() / same_old.sum()
    apart = (own_old & own_new).sum() / own_old.sum()
    assert together > 0.4 > apart, (together, apart)


def test_mean_ratio_of_more_slow_runs() -> None:
    rng = np.random.default_rng(4)
    runs = 400_000
    old = np.where(rng.random(runs) < 0.15, 1 + rng.uniform(0.5, 1.0, runs), 1.0)
    new = np.where(rng.random(runs) < 0.30, 1 + rng.uniform(0.5, 1.0, runs), 1.0)
    assert new.mean() / old.mean() == pytest.approx(mean_ratio(0.15, 0.30), abs=0.005)
