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

--tails: only heavy tails, as real `go test -bench` files show them (some runs 50-100%
slower): families of 30 series of 10 and 20 runs a side (lag-1 0, the drift both share) whose
runs are each slowed by 1 + U(0.5, 1.0) with probability 5, 15 or 30%, alone or in bursts
(TAIL_CELLS), A/A, on the band's edge and +10% in 3 of 30; each family judged by perflab's
rule (Benjamini-Hochberg, compare --import's default) recorded alternately and interleaved, by
candidate estimators on the first of the same families (measured, not perflab's rule), and
by benchstat's rule (Mann-Whitney U per benchmark at 0.05, uncorrected); saved as
sim-pooled-tails-DATE.json.

Usage: python benchmarks/sim_pooled.py [--quick] [--long] [--tails [--families N]] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load  # noqa: E402 (benchmarks/neighbours.py)
from sim_verdicts import Row, report  # noqa: E402

from perflab import simulate  # noqa: E402
from perflab.judging import (  # noqa: E402
    ALPHA,
    DEFAULT_ESTIMATOR,
    Estimator,
    Plan,
    check_estimator_runs,
    parse_estimator,
)
from perflab.metrics import MetricInfo  # noqa: E402
from perflab.model import Configuration, ResultSet, Run  # noqa: E402
from perflab.stats import (  # noqa: E402
    Location,
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


def judged(pairs: list[tuple[np.ndarray, np.ndarray]], pooled: bool = True,
           paired: bool = True, correction: str = "holm", est: Estimator | None = None
           ) -> tuple[list[Location], np.ndarray]:
    """Each comparison's location and the level its interval is judged at in the family by
    ``correction`` (the claim p, the adjusted level: as compare_result judges them); ``est``: a
    candidate estimator for perflab's."""
    est = est or DEFAULT_ESTIMATOR
    pool = (family_pools([("t", a, b, paired) for a, b in pairs], est)
            .get(("t", paired)) if pooled else None)
    locs = [locate(a, b, paired, est, "log", pool) for a, b in pairs]
    p = np.asarray([loc.claim_p(*BAND) for loc in locs])
    q = adjust(p, correction)
    levels = np.asarray([min(ALPHA, ALPHA * p[i] / q[i]) if q[i] > 0 else ALPHA / len(locs)
                         for i in range(len(locs))])
    return locs, levels


def called(lo: float, hi: float) -> int:
    """+1 an interval (lo, hi) calls up (slower), -1 down (faster), 0 neither."""
    return 1 if lo > BAND[1] else -1 if hi < BAND[0] else 0


def sign(loc: Location, level: float) -> int:
    """+1 called up (slower), -1 down (faster), 0 neither, at ``level``."""
    return called(*loc.interval(level))


def judge(pairs: list[tuple[np.ndarray, np.ndarray]], pooled: bool = True, paired: bool = True,
          correction: str = "holm", est: Estimator | None = None
          ) -> tuple[np.ndarray, np.ndarray, float]:
    """Each comparison's verdict sign (+1 up, -1 down, 0 none) alone at ALPHA and by
    ``correction`` over the family, as compare_result judges them, and the lag-1 correlation
    the intervals were widened for on average; ``est``: a candidate estimator for perflab's."""
    locs, levels = judged(pairs, pooled, paired, correction, est)
    alone = np.asarray([sign(loc, ALPHA) for loc in locs], dtype=float)
    fam = np.asarray([sign(loc, level) for loc, level in zip(locs, levels, strict=True)],
                     dtype=float)
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


# --- heavy tails (--tails) --------------------------------------------------------------------
# Contamination: a run is slowed by 1 + U(0.5, 1.0) with probability q, each run on its own or
# in bursts (a two-state Markov chain over the run slots, A and B alternating, of the same
# stationary q and mean burst length TAIL_BURST); the Gaussian model (q 0) beside them.
TAIL_CELLS = ((0.0, False), (0.05, False), (0.15, False), (0.30, False), (0.05, True),
              (0.15, True), (0.30, True))
TAIL_BURST = 3.0
TAIL_RUNS = (10, 20)
TAIL_MODES = ("alternate", "interleaved")
# Candidates for perflab's estimator (measured, not the rule), and the families a cell each is
# judged on (the first of the same families: median on two samples bootstraps, and is slow).
CANDIDATES = {"median": 0.1, "trim:0.3:0.3": 0.3, "trim:0:0.4": 0.3}
TRUTHS = ("A/A", "edge", "+10% in 3")


def slow_runs(rng: np.random.Generator, k: int, slots: int, q: float, burst: bool
              ) -> np.ndarray:
    """k x slots: which runs are slowed (see TAIL_CELLS)."""
    if not burst or q == 0:
        return rng.random((k, slots)) < q
    stay = 1 - 1 / TAIL_BURST
    enter = q * (1 - stay) / (1 - q)
    out = np.zeros((k, slots), dtype=bool)
    state = rng.random(k) < q
    for i in range(slots):
        out[:, i] = state
        state = rng.random(k) < np.where(state, stay, enter)
    return out


def tailed_family(rng: np.random.Generator, k: int, n: int, q: float, burst: bool,
                  ratios: dict[int, float] | None, rho: float | None = 0.0,
                  q_new: float | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """sim_pooled's family (lag-1 ``rho``: None, each series' own from 0..0.8; the drift both
    share; runs alternating A B A B ...) with contaminated runs; ``q_new``: the new file's
    share of slow runs where it differs from the old file's ``q`` (each file's slow runs then
    its own chain over the same slots, TAIL_CELLS)."""
    pairs, _ = family(rng, k, n, rho, ratios, "alternate")
    slow = slow_runs(rng, k, 2 * n, q, burst)
    if q_new is not None and q_new != q:
        slow[:, 1::2] = slow_runs(rng, k, 2 * n, q_new, burst)[:, 1::2]
    factor = np.where(slow, 1 + rng.uniform(0.5, 1.0, (k, 2 * n)), 1.0)
    return [(a * factor[j, 0::2], b * factor[j, 1::2]) for j, (a, b) in enumerate(pairs)]


def truth_ratios(truth: str, k: int) -> dict[int, float] | None:
    """The true ratio of each changed series of a family of ``k`` (TRUTHS)."""
    return ({j: 1.01 for j in range(k)} if truth == "edge" else
            dict.fromkeys(range(3), 1.10) if truth == "+10% in 3" else None)


def benchstat(pairs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """benchstat's rule: Mann-Whitney U (exact: no ties) per benchmark at 0.05, uncorrected,
    the direction by the medians; +1 slower, -1 faster, 0 none."""
    a, b = np.asarray([x for x, _ in pairs]), np.asarray([y for _, y in pairs])
    p = mannwhitneyu(a, b, axis=1, method="exact").pvalue
    return np.where(p < 0.05, np.sign(np.median(b, axis=1) - np.median(a, axis=1)), 0)


def tally(t: dict[str, float], alone: np.ndarray, fam: np.ndarray, truth: str) -> None:
    """Counts of one family's verdicts: false claims (A/A: either way; the edge: slower),
    or the 3 changed ones named and false claims on the others."""
    if truth == "+10% in 3":
        t["named"] += float((fam[:3] > 0).sum())
        t["all3"] += float((fam[:3] > 0).all())
        t["false"] += float((fam[3:] != 0).sum())
        t["false_fams"] += float((fam[3:] != 0).any())
    else:
        bad = (lambda v: v > 0) if truth == "edge" else (lambda v: v != 0)
        t["up"] += float((alone > 0).sum())
        t["down"] += float((alone < 0).sum())
        t["false_fams"] += float(bad(fam).any())
    t["fams"] += 1


def tails_rows(rows: list[Row], how: str, who: str, t: dict[str, float], truth: str,
               k: int, goals: bool) -> None:
    fams, total = int(t["fams"]), int(t["fams"]) * k
    if truth == "+10% in 3":
        rows.append(Row(f"{how}, +10% in 3 of {k}: {who}: called slower", 3 * fams,
                        int(t["named"]), "", f"all 3 named in {t['all3'] / fams:.1%}; false "
                        f"claims on the other {k - 3}: {int(t['false'])} ({t['false_fams']:.0f}"
                        f" of {fams} families)"))
        return
    if truth == "edge":
        rows.append(Row(f"{how}, the band's edge (+1%): {who}: compared alone, called slower",
                        total, int(t["up"]), "<= 0.025" if goals else "",
                        "" if goals else "no band: a true +1% is a change by its rule"))
        rows.append(Row(f"{how}, the band's edge (+1%): {who}: families with a slower",
                        fams, int(t["false_fams"]), "<= 0.05" if goals else ""))
        return
    up, down = t["up"] / total, t["down"] / total
    rows.append(Row(f"{how}, A/A: {who}: compared alone, false slower or faster", total,
                    int(t["up"] + t["down"]), "<= 0.05" if goals else "",
                    f"slower {up:.1%}, faster {down:.1%}", also=max(up, down) <= 0.025))
    rows.append(Row(f"{how}, A/A: {who}: families with a false claim", fams,
                    int(t["false_fams"]), "<= 0.05" if goals else ""))


def _tails_judges(n: int) -> list[tuple[str, str, Estimator, float]]:
    """(label, mode, estimator, share of the families) to judge each family by."""
    out = [(f"perflab ({MODES[m]}, BH)", m, DEFAULT_ESTIMATOR, 1.0) for m in TAIL_MODES]
    for text, share in CANDIDATES.items():
        est = parse_estimator(text)
        if check_estimator_runs(est, n) is None:
            out += [(f"candidate --estimator {text} ({MODES[m]}, BH)", m, est, share)
                    for m in TAIL_MODES]
    return out


def tails_cell(rows: list[Row], trials: int, n: int, q: float, burst: bool, truth: str,
               k: int = 30) -> None:
    """One cell: ``trials`` families of k series of n runs a side, judged by perflab's rule
    both ways of measuring, by the candidates on their share of them, and by benchstat."""
    rng = np.random.default_rng(61000 + 1000 * TRUTHS.index(truth) + 10 * n
                                + int(100 * q) + 7 * burst)
    ratios = truth_ratios(truth, k)
    judges = _tails_judges(n)
    keys = ("up", "down", "false_fams", "named", "all3", "false", "fams")
    counts = {name: dict.fromkeys(keys, 0.0) for name, *_ in [*judges, ("benchstat",)]}
    for f in range(trials):
        pairs = tailed_family(rng, k, n, q, burst, ratios)
        if f < 2 and truth == "A/A" and q > 0:
            check_against_compare_result(pairs)
        bs = benchstat(pairs)
        tally(counts["benchstat"], bs, bs, truth)
        for name, mode, est, share in judges:
            if f < max(2, int(share * trials)):
                alone, fam, _ = judge(pairs, paired=mode == "interleaved", correction="bh",
                                      est=est)
                tally(counts[name], alone, fam, truth)
    how = (f"{k} series of {n} runs, " + (f"{q:.0%} of runs +50-100%" if q else "no tails")
           + (f", bursts of {TAIL_BURST:g}" if burst else ""))
    for name, *_ in judges:
        tails_rows(rows, how, name, counts[name], truth, k, goals=True)
    tails_rows(rows, how, "benchstat (Mann-Whitney U at 0.05, uncorrected)",
               counts["benchstat"], truth, k, goals=False)


def tails(rows: list[Row], trials: int) -> None:
    """Every TAIL_CELLS x TAIL_RUNS x TRUTHS cell, ``trials`` families each."""
    for n in TAIL_RUNS:
        for tail_q, burst in TAIL_CELLS:
            for truth in TRUTHS:
                tails_cell(rows, trials, n, tail_q, burst, truth)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a fifth of the trials")
    ap.add_argument("--long", action="store_true",
                    help="only series longer than the pool's range (30, 40, 60 runs a side), "
                    "saved as sim-pooled-long")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--tails", action="store_true",
                    help="only heavy tails: runs slowed 50-100%% (5, 15, 30%% of them, alone or "
                    "in bursts), perflab's rule, candidate estimators and benchstat's, saved "
                    "as sim-pooled-tails")
    ap.add_argument("--families", type=int, default=None,
                    help="--tails: families a cell (default 200; --quick 40)")
    args = ap.parse_args()
    q = 5 if args.quick else 1
    started, load_before = time.time(), load()
    rows: list[Row] = []
    if args.tails:
        tails(rows, args.families or 200 // q)
        command = ("python benchmarks/sim_pooled.py --tails" + (" --quick" if args.quick else "")
                   + (f" --families {args.families}" if args.families else ""))
        report("simulated guarantees under heavy tails", rows, command, started, load_before,
               "sim-pooled-tails", args.out)
        return 0 if all(r.met != "NO" for r in rows if "candidate" not in r.model) else 1
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
