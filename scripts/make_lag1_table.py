#!/usr/bin/env python3
"""Write src/perflab/data/lag1_calibration.npz: the calibration of the pooled lag-1 correlation
(stats.simulate_lag1_calibration) for every (runs, trimmed low, trimmed high) that
stats.pool_serial can ask for, so that judging a family of short series looks it up
(stats._lag1_calibration) instead of simulating it.

    python scripts/make_lag1_table.py [--out PATH]

The combinations: every series length pool_serial pools (3 runs up to SERIAL_POOL_MAX_RUNS),
each with the trim counts (judging.trim_counts) of the estimators perflab names: mean and
median (none trimmed) and the default trim.  A trim:LOW:HIGH of the user's own is simulated
when first asked for (0.1-0.4 s of CPU), which keeps the file at tens of KB instead of a
megabyte.  Run it again after a change to the simulation (its grid, series count or seed,
which the file records: a table simulated otherwise is not used) or to the estimators.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from perflab.judging import SERIAL_POOL_MAX_RUNS, parse_estimator, trim_counts
from perflab.stats import (
    _CALIBRATION_SEED,
    _CALIBRATION_SERIES,
    _RHO_GRID,
    LAG1_TABLE,
    simulate_lag1_calibration,
)

ROOT = Path(__file__).resolve().parent.parent
SHORTEST = 3  # pool_serial pools series of 3 runs or more


NAMED = ("mean", "median", "trim")


def trims(n: int) -> list[tuple[int, int]]:
    """The (low, high) trim counts the named estimators give ``n`` runs."""
    return sorted({trim_counts(n, parse_estimator(text)) for text in NAMED})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "perflab" / LAG1_TABLE)
    args = ap.parse_args()
    keys, mean, sd = [], [], []
    for n in range(SHORTEST, SERIAL_POOL_MAX_RUNS + 1):
        ts = trims(n)
        for (kl, kh), (m, s) in zip(ts, simulate_lag1_calibration(n, ts), strict=True):
            keys.append((n, kl, kh))
            mean.append(m)
            sd.append(s)
    # Uncompressed: the doubles hardly compress (9%), and it loads in 1 ms instead of 10.
    np.savez(args.out, keys=np.asarray(keys, dtype=np.int16), mean=np.asarray(mean),
             sd=np.asarray(sd), rho_grid=_RHO_GRID, series=_CALIBRATION_SERIES,
             seed=_CALIBRATION_SEED)
    print(f"{args.out}: {len(keys)} combinations, {args.out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
