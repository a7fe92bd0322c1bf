"""Simulated guarantees of the pooled lag-1 correlation (stats.pool_serial): families of series
measured the same way, each an A/A (or changed) comparison of 6-25 runs (the pool's range,
judging.SERIAL_POOL_MAX_RUNS), judged through perflab's own decision path:
stats.family_pools pools the family's series, stats.locate widens each interval for the pool's
bound, each comparison is judged alone at alpha and in its family by Holm or
Benjamini-Hochberg (the claim p, the adjusted level, the interval at it: as compare_result
does; checked against compare_result itself on the first interleaved families).

Noise (perflab.simulate.rounds): every run's log-value CV x N(0, 1), AR(1) in run order with
lag-1 rho for each configuration on its own, plus drift the two configurations share (AR(1) of
lag-1 0.95 over the run slots, A or B first at random).  rho common to the family's series, or
drawn for each series uniformly from 0..0.8 ("varying").  Band +-1%, CV 2%.  Interleaved: the
rounds paired (the runner's comparisons); not interleaved (compare --import of two files), each
sample judged as a sample: the same runs, recorded alternately (as
tests/fixtures/imports/gobench30 was), or recorded apart (each file its own AR(1) noise, no
drift: an offset between the sessions is not controlled by anything).

Goals (docs/statistics.md, "The guarantee"): a comparison judged alone is falsely called
slower or faster in at most 5% (2.5% a direction), A/A and at the band's edge (a true +1%,
where "slower" is wrong: the least favourable truth); a family judged by Holm holds a false
claim in at most 5% of A/A families and of families on the band's edge.

--long: only families of 30 series of 30, 40 and 60 runs a side, beyond the pool's range,
where each series is widened for the larger of its own estimate and the family's bound
(stats._rho_for); saved as sim-pooled-long-DATE.json.

Usage: python benchmarks/sim_pooled.py [--quick] [--long] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load  # noqa: E402 (benchmarks/neighbours.py)
from sim_verdicts import Row, report  # noqa: E402

from perflab import simulate  # noqa: E402
from perflab.judging import ALPHA, DEFAULT_ESTIMATOR, Plan  # noqa: E402
from perflab.metrics import MetricInfo  # noqa: E402
from perflab.model import Configuration, ResultSet, Run  # noqa: E402
from perflab.stats import (  # noqa: E402
    adjust,
    compare_result,
    family_pools,
    locate,
)

CV = 0.02
BAND = (float(np.log1p(-0.01)), float(np.log1p(0.01)))


MODES = {"interleaved": "interleaved", "alternate": "not interleaved, recorded alternately",
         "apart": "not interleaved, recorded apart"}


def family(rng: np.random.Generator, k: int, n: int, rho: float | None,
           ratios: dict[int, float] | None = None, mode: str = "interleaved"
           ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """``k`` series of ``n`` rounds; rho None: each series' own, uniform 0..0.8; ``ratios``:
    the candidate's true ratio of each series (1 where not given); ``mode`` (MODES): recorded
    apart, no drift the two share."""
    rhos = rng.uniform(0, 0.8, k) if rho is None else np.full(k, rho)
    ratios = ratios or {}
    return [simulate.rounds(rng, n, CV, float(rhos[j]), ratio=ratios.get(j, 1.0),
                            shared=mode != "apart") for j in range(k)], rhos


def judge(pairs: list[tuple[np.ndarray, np.ndarray]], pooled: bool = True, paired: bool = True,
          correction: str = "holm") -> tuple[np.ndarray, np.ndarray, float]:
    """Each comparison's verdict sign (+1 up, -1 down, 0 none) alone at ALPHA and by
    ``correction`` over the family, as compare_result judges them, and the lag-1 correlation
    the intervals were widened for on average."""
    pool = (family_pools([("t", a, b, paired) for a, b in pairs], DEFAULT_ESTIMATOR)
            .get(("t", paired)) if pooled else None)
    locs = [locate(a, b, paired, DEFAULT_ESTIMATOR, "log", pool) for a, b in pairs]
    p = np.asarray([loc.claim_p(*BAND) for loc in locs])
    q = adjust(p, correction)
    alone, fam = np.zeros(len(locs)), np.zeros(len(locs))
    for i, loc in enumerate(locs):
        for out, level in ((alone, ALPHA), (fam, min(ALPHA, ALPHA * p[i] / q[i])
                                            if q[i] > 0 else ALPHA / len(locs))):
            lo, hi = loc.interval(level)
            out[i] = 1 if lo > BAND[1] else -1 if hi < BAND[0] else 0
    return alone, fam, float(np.mean([loc.serial for loc in locs]))


def check_against_compare_result(pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """The family's verdicts by compare_result itself (one cell per series) equal judge's."""
    rs = ResultSet(kind="compare", metrics={"t": MetricInfo("t", "ms", "simulated")},
                   settings={"interleaved": True, "primary_metric": "t"})
    for j, (a, b) in enumerate(pairs):
        for name, x in (("A", a), ("B", b)):
            cfg = Configuration(name=name, command=[name], cell=f'{{"s": {j}}}',
                                params={"s": j}, is_baseline=name == "A")
            cfg.runs = [Run(seq=i, values={"t": float(v)}) for i, v in enumerate(x)]
            rs.configurations.append(cfg)
    comps = compare_result(rs, plan=Plan())
    got = np.asarray([1 if c.verdict == "slower" else -1 if c.verdict == "faster" else 0
                      for c in sorted(comps, key=lambda c: int(c.cell.split(":")[1][:-1]))])
    _, fam, _ = judge(pairs)
    assert (got == fam).all(), (got, fam)


def _how(k: int, n: int, rho: float | None, mode: str) -> str:
    model = "varying 0..0.8" if rho is None else f"{rho:g}"
    return f"{k} series of {n} runs, {MODES[mode]}, lag-1 {model}"


def null(rows: list[Row], trials: int, k: int, n: int, rho: float | None, mode: str,
         edge: bool) -> None:
    """A/A families (any claim false), or every series on the band's edge (+1%: slower false)."""
    paired = mode == "interleaved"
    seed = 7000 + 100 * k + n + int(10 * (rho if rho is not None else 9)) + 50 * len(mode)
    rng = np.random.default_rng(seed + 5000 * edge)
    up = down = families = hi_n = hi_false = pooled_rho = 0.0
    for t in range(trials):
        pairs, rhos = family(rng, k, n, rho, dict.fromkeys(range(k), 1.01) if edge else None,
                             mode)
        if t < 2 and paired and not edge:
            check_against_compare_result(pairs)
        alone, fam, widened_for = judge(pairs, paired=paired)
        up += float((alone > 0).sum())
        down += float((alone < 0).sum())
        families += bool((fam > 0).any() if edge else (fam != 0).any())
        hi = rhos >= 0.6
        hi_n += float(hi.sum())
        hi_false += float((alone[hi] > 0).sum() if edge else (alone[hi] != 0).sum())
        pooled_rho += widened_for
    total = trials * k
    extra = (f"; series of lag-1 >= 0.6: {hi_false / max(hi_n, 1):.1%}" if rho is None else "")
    widened = f"widened for {pooled_rho / trials:.2f} on average{extra}"
    if edge:
        rows.append(Row(f"+1% (the band's edge), {_how(k, n, rho, mode)}: compared alone, "
                        "false slower", total, int(up), "<= 0.025", widened))
        rows.append(Row(f"+1% (the band's edge), {_how(k, n, rho, mode)}: families (Holm) "
                        "with a false slower", trials, int(families), "<= 0.05"))
        return
    rows.append(Row(f"A/A, {_how(k, n, rho, mode)}: compared alone, false slower or faster",
                    total, int(up + down), "<= 0.05",
                    f"slower {up / total:.1%}, faster {down / total:.1%}; {widened}",
                    also=max(up, down) / total <= 0.025))
    rows.append(Row(f"A/A, {_how(k, n, rho, mode)}: families (Holm) with a false claim",
                    trials, int(families), "<= 0.05"))


def power(rows: list[Row], trials: int, k: int, n: int, rho: float | None, ratio: float,
          mode: str = "interleaved") -> None:
    """+(ratio - 1) in 3 of k series: the share called slower by Holm and by BH, and the
    families where BH names all 3; false claims on the others counted."""
    paired = mode == "interleaved"
    rng = np.random.default_rng(9000 + k + n + int(100 * ratio) + 50 * len(mode))
    hits = {"holm": 0, "bh": 0, "single": 0}
    all3 = {"holm": 0, "bh": 0}
    false = 0
    for _ in range(trials):
        pairs, _ = family(rng, k, n, rho, dict.fromkeys(range(3), ratio), mode)
        for key, corr, pooled in (("holm", "holm", True), ("bh", "bh", True),
                                  ("single", "holm", False)):
            _, fam, _ = judge(pairs, pooled, paired, corr)
            hits[key] += int((fam[:3] > 0).sum())
            all3[key] = all3.get(key, 0) + int((fam[:3] > 0).all())
            false += int((fam[3:] != 0).sum()) if pooled else 0
    rows.append(Row(f"+{ratio - 1:.0%} in 3 of {_how(k, n, rho, mode)}: called slower (Holm)",
                    3 * trials, hits["holm"], "",
                    f"BH: {hits['bh'] / (3 * trials):.1%}; all 3 named: Holm "
                    f"{all3['holm'] / trials:.1%}, BH {all3['bh'] / trials:.1%}; each series "
                    f"alone (0.8 below 20 runs, else its own lag-1; Holm): "
                    f"{hits['single'] / (3 * trials):.1%}; "
                    f"false claims on the other {k - 3} (Holm and BH): {false}"))


# Series longer than the pool's range (judging.SERIAL_POOL_MAX_RUNS): runs a side.
LONG_RUNS = (30, 40, 60)


def long_series(rows: list[Row], q: int) -> None:
    """Families of 30 series of LONG_RUNS runs a side, every way of measuring: A/A and on the
    band's edge under lag-1 0, 0.3, 0.6 and varying (400 families a cell), and the power of a
    10% change in 3 of them (200 families a cell)."""
    for mode in MODES:
        for n in LONG_RUNS:
            for rho in (0.0, 0.3, 0.6, None):
                for edge in (False, True):
                    null(rows, max(4, 400 // q), 30, n, rho, mode, edge)
        for n in LONG_RUNS:
            for rho in (0.0, None):
                power(rows, max(4, 200 // q), 30, n, rho, 1.10, mode)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a fifth of the trials")
    ap.add_argument("--long", action="store_true",
                    help="only series longer than the pool's range (30, 40, 60 runs a side), "
                    "saved as sim-pooled-long")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    q = 5 if args.quick else 1
    started, load_before = time.time(), load()
    rows: list[Row] = []
    if args.long:
        long_series(rows, q)
        command = "python benchmarks/sim_pooled.py --long" + (" --quick" if args.quick else "")
        report("simulated guarantees: series longer than the pooled range", rows, command,
               started, load_before, "sim-pooled-long", args.out)
        return 0 if all(r.met != "NO" for r in rows) else 1
    for mode in MODES:
        grid = ((5, 600), (30, 150), (100, 60))
        for k, trials in grid:
            for n in (6, 8, 10, 15, 20, 25) if mode == "interleaved" else (
                    6, 10, 15, 20, 25):
                for rho in (0.0, 0.3, 0.6, 0.8, None):
                    null(rows, max(4, trials // q), k, n, rho, mode, edge=False)
        for k, trials in grid[:2]:
            for n in (6, 10, 15, 20, 25):
                for rho in (0.0, 0.8, None):
                    null(rows, max(4, trials // q), k, n, rho, mode, edge=True)
        for rho in (0.0, 0.3, None):
            for ratio in (1.10, 1.05):
                power(rows, max(4, 200 // q), 30, 10, rho, ratio, mode)
        for n in (6, 8, 12, 15, 19, 20, 25, 30, 40):
            power(rows, max(4, 200 // q), 30, n, 0.0, 1.10, mode)
    command = "python benchmarks/sim_pooled.py" + (" --quick" if args.quick else "")
    report("simulated guarantees: the pooled lag-1 correlation", rows, command, started,
           load_before, "sim-pooled", args.out)
    return 0 if all(r.met != "NO" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
