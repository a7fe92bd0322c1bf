"""Which change-point library fits perflab's history? Figures on the tests' synthetic series.

Candidates (each must be installed to be measured; a missing one is reported, not faked):
- perflab's detector (perflab.history.detect.change_points_of: ruptures' kernel PELT
  candidates + Otava's t-test merge), as it ships, and with ``algorithm = "otava"`` (Otava's
  E-divisive + perflab's min_segment rule);
- apache-otava (``otava.analysis.compute_change_points``: E-divisive + t-test), the optional
  extra ``perflab[otava]``;
- signal-processing-algorithms (MongoDB's E-divisive with a permutation test);
- ruptures alone (PELT, l2 cost, a BIC-like penalty, no significance test).

Series (as tests/history/test_history_detect.py): 120 points with +20%, -10%, +5% steps every
30 points in 2% Gaussian noise; flat Gaussian noise (100 points, 3% sd); flat heavy-tailed noise
(100 points, Student t with 3 degrees of freedom, scale 3%).  A step counts as found when a
change point lies within one point of it; a flat series with any change point is a false alarm.

usage: python benchmarks/changepoint_libraries.py [--trials 50]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import time
import warnings
from collections.abc import Callable

import numpy as np

STEPS = {30: "+20%", 60: "-10%", 90: "+5%"}


def stepped(r: np.random.Generator) -> list[float]:
    levels = [100.0, 120.0, 108.0, 113.4]
    return [float(v) for m in levels for v in r.normal(m, 0.02 * m, 30)]


def flat_normal(r: np.random.Generator) -> list[float]:
    return [float(v) for v in r.normal(100, 3, 100)]


def flat_heavy(r: np.random.Generator) -> list[float]:
    return [float(v) for v in 100 + 3 * r.standard_t(3, 100)]


def _perflab() -> Callable[[list[float]], list[int]]:
    from perflab.history.detect import Thresholds, change_points_of

    return lambda x: [i for i, _ in change_points_of(x, Thresholds())]


def _perflab_otava() -> Callable[[list[float]], list[int]]:
    from perflab.history.detect import Thresholds, change_points_of

    return lambda x: [i for i, _ in change_points_of(x, Thresholds(algorithm="otava"))]


def _otava() -> Callable[[list[float]], list[int]]:
    from otava.analysis import compute_change_points

    def run(x: list[float]) -> list[int]:
        cps, _ = compute_change_points(x, window_len=50, max_pvalue=1e-4, min_magnitude=0.0)
        return [int(c.index) for c in cps]

    return run


def _spa() -> Callable[[list[float]], list[int]]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return lambda x: sorted(int(i) for i in e_divisive(x, pvalue=0.01, permutations=100))


def _ruptures_bare() -> Callable[[list[float]], list[int]]:
    import ruptures as rpt

    def run(x: list[float]) -> list[int]:
        a = np.asarray(x)
        sigma = 1.4826 * np.median(np.abs(np.diff(a))) / math.sqrt(2)
        bkps = rpt.Pelt(model="l2", min_size=2, jump=1).fit(a).predict(
            pen=3 * sigma**2 * math.log(len(a)))
        return [int(b) for b in bkps[:-1]]

    return run


CANDIDATES: dict[str, tuple[str, Callable[[], Callable[[list[float]], list[int]]]]] = {
    "perflab: ruptures + t-test": ("perflab", _perflab),
    "perflab: algorithm = otava": ("perflab otava", _perflab_otava),
    "apache-otava as shipped": ("otava", _otava),
    "signal-processing-algorithms": ("signal_processing_algorithms", _spa),
    "ruptures PELT alone": ("ruptures", _ruptures_bare),
}


def evaluate(fn: Callable[[list[float]], list[int]], trials: int) -> dict[str, float]:
    found = dict.fromkeys(STEPS, 0)
    far = 0
    fa_normal = fa_heavy = 0
    t0 = time.perf_counter()
    calls = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(trials):
            r = np.random.default_rng(seed)
            cps = fn(stepped(r))
            calls += 1
            for s in STEPS:
                found[s] += any(abs(i - s) <= 1 for i in cps)
            far += sum(1 for i in cps if all(abs(i - s) > 2 for s in STEPS))
            r = np.random.default_rng(10_000 + seed)
            fa_normal += bool(fn(flat_normal(r)))
            fa_heavy += bool(fn(flat_heavy(r)))
            calls += 2
    ms = (time.perf_counter() - t0) / calls * 1e3
    out = {f"found {STEPS[s]}": found[s] / trials for s in STEPS}
    out.update({"spurious on stepped": far / trials, "false alarm flat normal": fa_normal / trials,
                "false alarm flat t(3)": fa_heavy / trials, "ms per series": ms})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    results: dict[str, object] = {}
    for name, (module, make) in CANDIDATES.items():
        missing = [m for m in module.split() if importlib.util.find_spec(m) is None]
        if missing:
            results[name] = f"not installed (pip install {missing[0].replace('_', '-')})"
            continue
        results[name] = evaluate(make(), args.trials)
    cols = ["found +20%", "found -10%", "found +5%", "spurious on stepped",
            "false alarm flat normal", "false alarm flat t(3)", "ms per series"]
    print(f"{args.trials} trials of each series kind")
    print(f"{'detector':30s} " + " ".join(f"{c:>12.12s}" for c in cols))
    for name, res in results.items():
        if isinstance(res, str):
            print(f"{name:30s} {res}")
            continue
        cells = [f"{res[c]:>12.0%}" if c != "ms per series" else f"{res[c]:>12.1f}"
                 for c in cols]  # type: ignore[index]
        print(f"{name:30s} " + " ".join(cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
