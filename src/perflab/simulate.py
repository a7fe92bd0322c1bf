"""Comparisons of simulated runs through perflab's own decision path (stats.compare_samples at
the levels stats.look_level gives, stats.compare_result for a whole table): what
benchmarks/sim_verdicts.py measures and the tests check.  Runs are drawn from a noise model
instead of measured: every run's log-value is CV x N(0, 1) noise, AR(1) in run order with
lag-1 ``rho`` for each configuration on its own, plus (``shared``) drift the two configurations
share (an AR(1) of lag-1 0.95 over the run slots, A or B first in each round at random, as the
runner interleaves them), which the per-round ratio mostly cancels.

One module per decision path simulated: this one the A/B verdicts (stats, judging);
perflab.history.simulate the history's (bisect's steps, detect's change points), its runs
measured in TIME as here."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.judging import ALPHA, Plan
from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.stats import (
    MOVED,
    Comparison,
    compare_result,
    compare_samples,
    look_level,
    look_schedule,
)

TIME = MetricInfo("task_clock", "ms", "simulated")
SHARED_RHO = 0.95


def ar1(rng: np.random.Generator, n: int, rho: float, sd: float) -> np.ndarray:
    """A stationary AR(1) series of ``n`` values, each of sd ``sd``."""
    e = np.empty(n)
    e[0] = rng.standard_normal() * sd
    s = sd * math.sqrt(1 - rho ** 2)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + rng.standard_normal() * s
    return e


def rounds(rng: np.random.Generator, n: int, cv: float, rho: float = 0.0, ratio: float = 1.0,
           shared: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``n`` interleaved rounds of a baseline and a candidate ``ratio`` times it (values near 1)."""
    la, lb = ar1(rng, n, rho, cv), ar1(rng, n, rho, cv)
    if shared:
        drift = ar1(rng, 2 * n, SHARED_RHO, cv)
        first = rng.random(n) < 0.5
        slot = 2 * np.arange(n)
        la, lb = la + drift[slot + ~first], lb + drift[slot + first]
    return np.exp(la), np.exp(lb + math.log(ratio))


def fixed(a: np.ndarray, b: np.ndarray, threshold: float = 0.01) -> Comparison:
    """A fixed --runs comparison: one look, judged at alpha."""
    return compare_samples(a, b, paired=True, info=TIME, threshold=threshold, alpha=ALPHA)


@dataclass
class Adaptive:
    verdict: str
    runs: int


def adaptive(a: np.ndarray, b: np.ndarray, max_runs: int, threshold: float = 0.01,
             min_runs: int = 6) -> Adaptive:
    """Adaptive measuring of one comparison with ``len(a)`` runs available (the budget ends
    there, or --max-runs is ``max_runs``): a look at each scheduled point at its level (the
    stop rule), and the last at what the looks before it left."""
    end = min(len(a), max_runs)
    for n in look_schedule(min_runs, max_runs):
        if n >= end:
            break
        c = compare_samples(a[:n], b[:n], paired=True, info=TIME, threshold=threshold,
                            alpha=look_level(min_runs, max_runs, n, final=False))
        if c.verdict != "inconclusive":
            return Adaptive(c.verdict, n)
    c = compare_samples(a[:end], b[:end], paired=True, info=TIME, threshold=threshold,
                        alpha=look_level(min_runs, max_runs, end, final=True))
    return Adaptive(c.verdict, end)


def table(rng: np.random.Generator, n: int, cv: float, rho: float, exploratory: int,
          shared: bool = True) -> list[Comparison]:
    """An A/A table: a primary metric and ``exploratory`` others (independent noise each),
    ``n`` interleaved rounds, judged by compare_result (each metric's family and marks)."""
    names = ["task_clock"] + [f"metric{i}" for i in range(exploratory)]
    rs = ResultSet(kind="compare", metrics={m: MetricInfo(m, "ms", "simulated") for m in names},
                   settings={"interleaved": True, "primary_metric": "task_clock"})
    runs: dict[str, list[dict[str, float]]] = {"A": [{} for _ in range(n)],
                                               "B": [{} for _ in range(n)]}
    for m in names:
        a, b = rounds(rng, n, cv, rho, shared=shared)
        for i in range(n):
            runs["A"][i][m], runs["B"][i][m] = float(a[i]), float(b[i])
    for name in ("A", "B"):
        cfg = Configuration(name=name, command=[name], cell="{}", is_baseline=name == "A")
        cfg.runs = [Run(seq=i, values=v) for i, v in enumerate(runs[name])]
        rs.configurations.append(cfg)
    return compare_result(rs, plan=Plan())


def false_claims(comps: list[Comparison]) -> tuple[bool, bool]:
    """(a false claim on an exploratory metric, on the primary one): A/A, so any up or down."""
    return (any(c.verdict in MOVED for c in comps if c.exploratory),
            any(c.verdict in MOVED for c in comps if not c.exploratory))
