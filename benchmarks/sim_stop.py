"""Simulated stop rule for a family of comparisons (stats.stop_check), through perflab's own
decision path: adaptive measuring of K benchmarks at once, interleaved A/B rounds, a look at
each point of stats.look_schedule at stats.look_level's level; measuring stops where the rule
says, or at --max-runs; the final table is stats.compare_result of the runs measured (one cell
per benchmark, the primary family pooled and adjusted by Holm), at the level of the look it
stopped at (as runner.loop stores it).

Two rules:
- before: every comparison decided alone, at alpha_look / K (Bonferroni), its interval widened
  for its own series (no pooled correlation), no futility;
- after (stats.stop_check): the family judged as the final table judges it (pooled
  correlation, Holm), and undecided comparisons that --max-runs cannot decide at their noise
  (stats.decidable) no longer hold measuring up.

Noise (perflab.simulate.rounds): log-value CV x N(0, 1) a run, AR(1) lag-1 rho, shared drift.

Usage: python benchmarks/sim_stop.py [--quick | --trials N] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

from perflab import simulate  # noqa: E402
from perflab.console import stdout_console  # noqa: E402
from perflab.judging import Plan  # noqa: E402
from perflab.model import Configuration, ResultSet, Run  # noqa: E402
from perflab.stats import (  # noqa: E402
    MOVED,
    compare_result,
    compare_samples,
    look_level,
    look_schedule,
    stop_check,
)
from perflab.table import Column, Table  # noqa: E402

INFO = simulate.TIME


def old_rule(pairs: list[tuple[np.ndarray, np.ndarray]], plan: Plan) -> bool:
    """The stop rule before: each comparison decided alone at alpha_look / K, unpooled."""
    alpha = plan.alpha_look / len(pairs)
    return all(compare_samples(a, b, paired=True, info=INFO, alpha=alpha).verdict
               != "inconclusive" for a, b in pairs)


def final_table(pairs: list[tuple[np.ndarray, np.ndarray]], level: float) -> list[str]:
    """The verdicts compare_result gives the runs (one cell per benchmark)."""
    rs = ResultSet(kind="compare", metrics={INFO.name: INFO},
                   settings={"interleaved": True, "primary_metric": INFO.name})
    for j, (a, b) in enumerate(pairs):
        for name, xs in (("A", a), ("B", b)):
            cfg = Configuration(name=name, command=[name], cell=f'{{"bench": {j}}}',
                                is_baseline=name == "A")
            cfg.runs = [Run(seq=i, values={INFO.name: float(x)}) for i, x in enumerate(xs)]
            rs.configurations.append(cfg)
    return [c.verdict for c in compare_result(rs, plan=Plan(level=level))]


def measure(rng: np.random.Generator, ratios: list[float], cv: float, rho: float,
            max_runs: int, rule: str) -> tuple[int, list[str], str]:
    """One adaptive measurement of the family: (runs per configuration, final verdicts, why
    it stopped: decided, futile or max)."""
    full = [simulate.rounds(rng, max_runs, cv, rho, ratio=r) for r in ratios]
    for n in look_schedule(6, max_runs)[:-1]:
        plan = Plan(level=look_level(6, max_runs, n, final=False))
        pairs = [(a[:n], b[:n]) for a, b in full]
        if rule == "before":
            if old_rule(pairs, plan):
                return n, final_table(pairs, plan.alpha_look), "decided"
            continue
        look = stop_check([(a, b, INFO) for a, b in pairs], paired=True, plan=plan,
                          budget_runs=max_runs,
                          final_level=look_level(6, max_runs, max_runs, final=True))
        if look.stop:
            return n, final_table(pairs, plan.alpha_look), "futile" if look.futile else "decided"
    return max_runs, final_table(full, look_level(6, max_runs, max_runs, final=True)), "max"


def scenario(name: str, ratios: list[float], cv: float, rho: float, max_runs: int,
             trials: int, seed: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    # On the band's edge (every ratio 1.01) any claim is false: slower, faster or equivalent.
    edge = all(r == 1.01 for r in ratios)
    changed = [r != 1.0 and not edge for r in ratios]
    wrong = (*MOVED, "equivalent") if edge else MOVED
    for rule in ("before", "after"):
        rng = np.random.default_rng(seed)
        runs, found, equiv, false_fam, futile_stops = [], [], [], 0, 0
        for _ in range(trials):
            n, verdicts, why = measure(rng, ratios, cv, rho, max_runs, rule)
            runs.append(n)
            false_fam += any(v in wrong for v, ch in zip(verdicts, changed, strict=True)
                             if edge or not ch)
            found.append(sum(v in MOVED for v, ch in zip(verdicts, changed, strict=True) if ch))
            equiv.append(sum(v == "equivalent" for v in verdicts))
            futile_stops += why == "futile"
        rows.append({"scenario": name, "rule": rule, "trials": trials,
                     "mean_runs": float(np.mean(runs)), "median_runs": float(np.median(runs)),
                     "stopped_before_max": float(np.mean(np.asarray(runs) < max_runs)),
                     "futility_stops": futile_stops / trials,
                     "changed_found": float(np.mean(found)), "changed": int(sum(changed)),
                     "equivalent": float(np.mean(equiv)),
                     "families_with_false_claim": false_fam / trials})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    trials = 40 if args.quick else args.trials
    started, load_before = time.time(), load()
    rows = scenario("30: 3 x1.10, 27 unchanged, CV 5%, --max-runs 100",
                    [1.10] * 3 + [1.0] * 27, 0.05, 0.0, 100, trials, 1)
    rows += scenario("30 A/A, CV 5%, --max-runs 100", [1.0] * 30, 0.05, 0.0, 100, trials, 2)
    rows += scenario("30 A/A, CV 5%, AR(1) 0.5, --max-runs 100", [1.0] * 30, 0.05, 0.5, 100,
                     trials, 3)
    rows += scenario("30 on the band's edge (x1.01), CV 1%, --max-runs 100", [1.01] * 30,
                     0.01, 0.0, 100, trials, 6)
    rows += scenario("30: 3 x1.03, 27 unchanged, CV 5%, --max-runs 100",
                     [1.03] * 3 + [1.0] * 27, 0.05, 0.0, 100, trials, 4)
    rows += scenario("30: 3 x1.10, 27 unchanged, CV 0.5%, --max-runs 100",
                     [1.10] * 3 + [1.0] * 27, 0.005, 0.0, 100, trials, 5)
    t = Table.of("simulated stop rule: a family of 30 benchmarks", [
        Column("scenario", "left"), Column("rule", "left"), "runs (mean)", "stopped early",
        "futility stops", "changed found", "equivalent", "false-claim families"])
    for r in rows:
        t.add_row(r["scenario"], r["rule"], f"{r['mean_runs']:.1f}",
                  f"{r['stopped_before_max']:.0%}", f"{r['futility_stops']:.0%}",
                  f"{r['changed_found']:.2f} / {r['changed']}", f"{r['equivalent']:.1f}",
                  f"{r['families_with_false_claim']:.1%}")
    t.print(stdout_console())
    command = "python benchmarks/sim_stop.py" + (" --quick" if args.quick else
                                                  f" --trials {trials}")
    print(f"{trials} trials; load {load_before} -> {load()}, {time.time() - started:.0f} s: "
          f"{command}")
    save_figures({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "command": command, "load_before": load_before, "load_after": load(),
                  "rows": rows}, "sim-stop", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
