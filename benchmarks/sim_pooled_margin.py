"""Where the pooled rule's margin goes: perflab's decision path for a family (sim_pooled's
family and judge) with one part of the rule changed at a time, on the power of a family of 30
imported benchmarks (10 runs a side, not interleaved, recorded alternately, 3 of them +10%)
and on the conditions that bound it (a family on the band's edge where lag-1 varies between
its series; 5 short series under lag-1 0.8); and series of 20 and 25 runs pooled (perflab's
rule) or each widened for its own estimate.

The variants patch perflab.stats for the length of their rows only (SERIAL_POOL_Z, _serial_df)
or change the estimator or the band: they are candidates measured, not perflab's rule.

Usage: python benchmarks/sim_pooled_margin.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim_pooled  # noqa: E402
from neighbours import load  # noqa: E402 (benchmarks/neighbours.py)
from sim_verdicts import Row, report  # noqa: E402

from perflab import stats  # noqa: E402
from perflab.judging import (  # noqa: E402
    DEFAULT_ESTIMATOR,
    SERIAL_MIN_RUNS,
    SERIAL_RHO_MAX,
    parse_estimator,
)


def _df(divide: Callable[[float, int], float]) -> Callable[[float, float, int, bool], float]:
    """_serial_df with the pooled bound's df divided by ``divide(rho, n)`` (same floor)."""
    current = stats._serial_df

    def df(df: float, rho: float, n: int, assumed: bool) -> float:
        if assumed or n >= SERIAL_MIN_RUNS:
            return current(df, rho, n, assumed)
        floor = df / math.sqrt(stats._ar1_mean_factor(SERIAL_RHO_MAX, n))
        return max(1.0, df / divide(rho, n), floor)
    return df


VARIANTS: dict[str, dict[str, object]] = {
    "perflab's rule": {},
    "the estimate, not the bound (SERIAL_POOL_Z 0)": {"z": 0.0},
    "df / g, Bartlett's variance factor, for df / f": {
        "df": _df(lambda rho, n: stats._ar1_mean_factor(rho * rho, n))},
    "df / sqrt(f) for df / f": {"df": _df(lambda rho, n: math.sqrt(
        stats._ar1_mean_factor(rho, n)))},
    "no df cut for the correlation": {"df": _df(lambda rho, n: 1.0)},
    "the mean (--estimator mean), not the 20% trimmed mean": {"est": "mean"},
    "a band of 0.1%, not 1%": {"band": 0.001},
}


@contextlib.contextmanager
def variant(parts: dict[str, object]) -> Iterator[None]:
    saved = (stats.SERIAL_POOL_Z, stats._serial_df, sim_pooled.DEFAULT_ESTIMATOR, sim_pooled.BAND)
    try:
        if "z" in parts:
            stats.SERIAL_POOL_Z = float(parts["z"])  # type: ignore[arg-type]
        if "df" in parts:
            stats._serial_df = parts["df"]  # type: ignore[assignment]
        if "est" in parts:
            sim_pooled.DEFAULT_ESTIMATOR = parse_estimator(str(parts["est"]))
        if "band" in parts:
            b = float(parts["band"])  # type: ignore[arg-type]
            sim_pooled.BAND = (math.log1p(-b), math.log1p(b))
        yield
    finally:
        (stats.SERIAL_POOL_Z, stats._serial_df, sim_pooled.DEFAULT_ESTIMATOR,
         sim_pooled.BAND) = saved


def rows_for(rows: list[Row], name: str, q: int) -> None:
    trials = max(4, 200 // q)
    rng = np.random.default_rng(20261128)
    hits = all3 = 0
    for _ in range(trials):
        pairs, _ = sim_pooled.family(rng, 30, 10, 0.0, dict.fromkeys(range(3), 1.10), "alternate")
        _, fam, _ = sim_pooled.judge(pairs, paired=False, correction="bh")
        hits += int((fam[:3] > 0).sum())
        all3 += int((fam[:3] > 0).all())
    rows.append(Row(f"{name}: +10% in 3 of 30 imported benchmarks, 10 runs a side, lag-1 0: "
                    "called slower (BH)", 3 * trials, hits, "",
                    f"all 3 named in {all3 / trials:.1%} of families"))
    for k, n, rho, mode, fams in ((30, 15, None, "apart", 400), (100, 15, None, "apart", 150),
                                  (5, 6, 0.8, "interleaved", 600)):
        edge = k != 100
        rng = np.random.default_rng(30000 + k + n)
        bad = alone = 0
        for _ in range(max(4, fams // q)):
            # The band's edge: a true change of exactly the band, where "slower" is wrong.
            pairs, _ = sim_pooled.family(rng, k, n, rho, dict.fromkeys(
                range(k), math.exp(sim_pooled.BAND[1])) if edge else None, mode)
            one, fam, _ = sim_pooled.judge(pairs, paired=mode == "interleaved")
            bad += bool((fam > 0).any() if edge else (fam != 0).any())
            alone += int((one > 0).sum())
        t = max(4, fams // q)
        how = sim_pooled._how(k, n, rho, mode)
        what = "the band's edge" if edge else "A/A"
        rows.append(Row(f"{name}: {what}, {how}: families (Holm) with a false claim", t, bad,
                        "<= 0.05", f"compared alone, false slower {alone / (t * k):.1%}"))


def pool_range_rows(rows: list[Row], q: int) -> None:
    """Series of 20 and 25 runs widened for the family's pooled bound (perflab's rule, up to
    SERIAL_POOL_MAX_RUNS) or each for its own estimate (no family's pool, as one comparison
    alone): the power above, and a family of 30 interleaved series on the band's edge whose
    lag-1 varies 0..0.8."""
    rule = f"pooled up to {stats.SERIAL_POOL_MAX_RUNS} runs (perflab's rule)"
    for pooled, name in ((True, rule), (False, "each series' own lag-1 from 20 runs")):
        for n in (20, 25):
            trials = max(4, 200 // q)
            rng = np.random.default_rng(20261128 + n)
            hits = all3 = 0
            for _ in range(trials):
                pairs, _ = sim_pooled.family(rng, 30, n, 0.0, dict.fromkeys(range(3), 1.10),
                                             "alternate")
                _, fam, _ = sim_pooled.judge(pairs, pooled, paired=False, correction="bh")
                hits += int((fam[:3] > 0).sum())
                all3 += int((fam[:3] > 0).all())
            rows.append(Row(f"{name}: +10% in 3 of 30 imported benchmarks, {n} runs a side, "
                            "lag-1 0: called slower (BH)", 3 * trials, hits, "",
                            f"all 3 named in {all3 / trials:.1%} of families"))
            fams = max(4, 300 // q)
            rng = np.random.default_rng(40000 + n)
            bad = alone = 0
            for _ in range(fams):
                pairs, _ = sim_pooled.family(rng, 30, n, None, dict.fromkeys(range(30), 1.01))
                one, fam, _ = sim_pooled.judge(pairs, pooled)
                bad += bool((fam != 0).any())
                alone += int((one > 0).sum())
            rows.append(Row(f"{name}: the band's edge, 30 series of {n} runs, interleaved, "
                            "lag-1 varying 0..0.8: families (Holm) with a false claim", fams,
                            bad, "<= 0.05" if pooled else "",
                            f"compared alone, false slower {alone / (30 * fams):.1%}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a fifth of the trials")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    q = 5 if args.quick else 1
    started, load_before = time.time(), load()
    rows: list[Row] = []
    assert sim_pooled.DEFAULT_ESTIMATOR == DEFAULT_ESTIMATOR
    for name, parts in VARIANTS.items():
        with variant(parts):
            rows_for(rows, name, q)
    pool_range_rows(rows, q)
    command = "python benchmarks/sim_pooled_margin.py" + (" --quick" if args.quick else "")
    report("where the pooled rule's margin goes", rows, command, started, load_before,
           "sim-pooled-margin", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
