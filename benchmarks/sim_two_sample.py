"""Simulated guarantees of an upper-only trim for comparisons judged as two samples (compare
--import of two files, not interleaved): families of 30 series recorded alternately (the drift
both files share; sim_pooled's noise, CV 2%, band +-1%), each judged by perflab's rule
(Benjamini-Hochberg over the family, the pooled lag-1 correlation: compare --import's default)
with the default estimator (the 20% trimmed mean) and, on the same samples, with the
candidates `trim:0:0.4` (the slowest 40% of each sample left out) and `trim:0.3:0.3` (from
20 runs; at 10 it keeps 4, refused).  The median is left out: on two samples it bootstraps
(0.2-0.5 s a family of 30, against 5-40 ms for a trim).

Cells (sim_pooled --tails' slow runs: 1 + U(0.5, 1.0) with probability q, each run on its own
or in bursts of mean 3 run slots):
- main: lag-1 0 or each series' own from U(0, 0.8) ("varying"); no tails, q 15%, q 15% in
  bursts; A/A, the band's edge (+1% in all 30: slower is false) and +10% in 3 of 30;
- differing tails: A/A in the true per-run time, slow runs more frequent in the new file
  (q 5% -> 15%, 15% -> 30%), alone and in bursts, lag-1 0, also at 60 runs a side: the new
  program's mean is slower (by (1 + 0.75 q_new) / (1 + 0.75 q_old): +7.2%, +10.1%), so
  "slower" is the honest answer; each estimator's share of comparisons called slower, faster,
  equivalent or neither and the change it reports, and benchstat's rule beside them
  (Mann-Whitney U at 0.05, uncorrected; the ratio of the medians).

Saved as sim-two-sample-DATE.json.

Usage: python benchmarks/sim_two_sample.py [--quick] [--families N] [--runs 20 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load  # noqa: E402 (benchmarks/neighbours.py)
from sim_pooled import (  # noqa: E402
    BAND,
    TAIL_BURST,
    TRUTHS,
    benchstat,
    called,
    judge,
    judged,
    tailed_family,
    tails_rows,
    tally,
    truth_ratios,
)
from sim_verdicts import Row, report  # noqa: E402

from perflab.judging import (  # noqa: E402
    DEFAULT_ESTIMATOR,
    Estimator,
    check_estimator_runs,
    parse_estimator,
)

# Main cells: (lag-1: 0, or None for each series' own from 0..0.8; q; bursts).
MAIN_CELLS = ((0.0, 0.0, False), (0.0, 0.15, False), (0.0, 0.15, True),
              (None, 0.0, False), (None, 0.15, False), (None, 0.15, True))
# Differing tails: (the old file's q, the new file's q, bursts).
DIFFERING = ((0.05, 0.15, False), (0.15, 0.30, False), (0.05, 0.15, True), (0.15, 0.30, True))
# The differing tails are also judged at this many runs a side (beyond the pool's range).
DIFFERING_MORE_RUNS = (60,)
CANDIDATES = ("trim:0:0.4", "trim:0.3:0.3")
# Mean slow-down of a slow run (1 + U(0.5, 1.0)).
SLOW_MEAN = 0.75


def estimators(n: int) -> list[tuple[str, Estimator]]:
    """(label, estimator) each family is judged with at ``n`` runs a side."""
    out = [(f"default ({DEFAULT_ESTIMATOR.label})", DEFAULT_ESTIMATOR)]
    for text in CANDIDATES:
        est = parse_estimator(text)
        if check_estimator_runs(est, n) is None:
            out.append((f"candidate {text}", est))
    return out


def mean_ratio(q_old: float, q_new: float) -> float:
    """The new file's true mean over the old one's where only the share of slow runs differs."""
    return (1 + SLOW_MEAN * q_new) / (1 + SLOW_MEAN * q_old)


def _tails(q: float, burst: bool) -> str:
    return (f"{q:.0%} of runs +50-100%" if q else "no tails") + (
        f" in bursts of {TAIL_BURST:g}" if burst else "")


def main_cell(rows: list[Row], trials: int, n: int, rho: float | None, q: float, burst: bool,
              truth: str, k: int = 30) -> None:
    """``trials`` families of k series of n runs a side, recorded alternately, judged as two
    samples by perflab's rule with each estimator on the same families."""
    rng = np.random.default_rng([71, TRUTHS.index(truth), n, int(100 * q), int(burst),
                                 int(rho is None)])
    ratios = truth_ratios(truth, k)
    judges = estimators(n)
    keys = ("up", "down", "false_fams", "named", "all3", "false", "fams")
    counts = {name: dict.fromkeys(keys, 0.0) for name, _ in judges}
    for _ in range(trials):
        pairs = tailed_family(rng, k, n, q, burst, ratios, rho)
        for name, est in judges:
            alone, fam, _ = judge(pairs, paired=False, correction="bh", est=est)
            tally(counts[name], alone, fam, truth)
    how = (f"{k} series of {n} runs, two samples, lag-1 "
           + ("varying 0..0.8" if rho is None else f"{rho:g}") + f", {_tails(q, burst)}")
    for name, _ in judges:
        tails_rows(rows, how, name, counts[name], truth, k, goals=True)


def outcomes(pairs: list[tuple[np.ndarray, np.ndarray]], est: Estimator
             ) -> tuple[np.ndarray, np.ndarray]:
    """Each comparison's verdict in the family (BH, two samples): +1 slower, -1 faster,
    2 equivalent (the interval inside the band), 0 inconclusive; and the change it reports."""
    locs, levels = judged(pairs, paired=False, correction="bh", est=est)
    out = np.zeros(len(locs))
    for i, (loc, level) in enumerate(zip(locs, levels, strict=True)):
        lo, hi = loc.interval(level)
        out[i] = called(lo, hi) or (2 if BAND[0] <= lo and hi <= BAND[1] else 0)
    return out, np.expm1([loc.est for loc in locs])


def differing_cell(rows: list[Row], trials: int, n: int, q_old: float, q_new: float,
                   burst: bool, k: int = 30) -> None:
    """A/A in the per-run time, slow runs more frequent in the new file: how often each
    estimator (and benchstat's rule) calls the new file slower, faster, equivalent or
    neither, and the change each reports (benchstat: the ratio of the medians)."""
    rng = np.random.default_rng([72, n, int(100 * q_old), int(100 * q_new), int(burst)])
    judges = estimators(n)
    got: dict[str, list[np.ndarray]] = {name: [] for name in [*dict(judges), "benchstat"]}
    change: dict[str, list[np.ndarray]] = {name: [] for name in got}
    for _ in range(trials):
        pairs = tailed_family(rng, k, n, q_old, burst, None, 0.0, q_new)
        got["benchstat"].append(benchstat(pairs))
        change["benchstat"].append(np.asarray([np.median(b) / np.median(a) - 1
                                               for a, b in pairs]))
        for name, est in judges:
            verdicts, reported = outcomes(pairs, est)
            got[name].append(verdicts)
            change[name].append(reported)
    how = (f"{k} series of {n} runs, two samples, lag-1 0, slow runs (+50-100%) {q_old:.0%} "
           f"-> {q_new:.0%}" + (f" in bursts of {TAIL_BURST:g}" if burst else "")
           + f": the mean +{mean_ratio(q_old, q_new) - 1:.1%}")
    for name, v in got.items():
        who = "benchstat (Mann-Whitney U at 0.05, uncorrected)" if name == "benchstat" else name
        fams = np.asarray(v)
        share = {c: float((fams == c).mean()) for c in (1, -1, 2, 0)}
        lo, mid, hi = np.percentile(change[name], (25, 50, 75))
        rows.append(Row(f"{how}: {who}: called slower", fams.size, int((fams == 1).sum()), "",
                        f"faster {share[-1]:.1%}, equivalent {share[2]:.1%}, neither "
                        f"{share[0]:.1%}; families with a slower {(fams == 1).any(1).mean():.1%}"
                        f", with a faster {(fams == -1).any(1).mean():.1%}; change reported: "
                        f"median {mid:+.1%} (middle half {lo:+.1%} to {hi:+.1%})"))


def run(rows: list[Row], trials: int, runs: list[int]) -> None:
    """Every main cell at each of ``runs`` runs a side and the differing tails also at
    DIFFERING_MORE_RUNS, ``trials`` families each."""
    for n in runs:
        for rho, q, burst in MAIN_CELLS:
            for truth in TRUTHS:
                main_cell(rows, trials, n, rho, q, burst, truth)
    for n in [*runs, *DIFFERING_MORE_RUNS]:
        for q_old, q_new, burst in DIFFERING:
            differing_cell(rows, trials, n, q_old, q_new, burst)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the families")
    ap.add_argument("--families", type=int, default=None,
                    help="families a cell (default 400; --quick 40)")
    ap.add_argument("--runs", type=int, nargs="+", default=[20, 10],
                    help="runs a side (default 20 10)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    started, load_before = time.time(), load()
    rows: list[Row] = []
    run(rows, args.families or (40 if args.quick else 400), args.runs)
    command = ("python benchmarks/sim_two_sample.py" + (" --quick" if args.quick else "")
               + (f" --families {args.families}" if args.families else "")
               + (f" --runs {' '.join(map(str, args.runs))}" if args.runs != [20, 10] else ""))
    report("simulated guarantees: an upper-only trim on two samples", rows, command, started,
           load_before, "sim-two-sample", args.out)
    return 0 if all(r.met != "NO" for r in rows if "candidate" not in r.model) else 1


if __name__ == "__main__":
    raise SystemExit(main())
