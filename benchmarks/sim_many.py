"""Simulations behind comparing many benchmarks at once (docs/statistics.md, "Many
benchmarks"), with perflab's own functions (stats.compare_samples, stats.adjust_family,
stats.modality); noise drawn instead of measured, seeded.

1. Holm or Benjamini-Hochberg over the benchmarks of a metric: M benchmarks (30, 300) of 10
   unpaired runs each (log-normal noise, sd 3% a run), 10% of them slower by 10% (at least
   one), the others +1%, on the band's edge (the worst case for a false claim); per trial,
   whether any unchanged benchmark was called slower or faster (a false claim), the share
   of false claims among claims, and the share of the changed ones found.
2. Modality: how often stats.modality flags (mvalue > 3.2) a unimodal sample (normal with
   a CV of 2%, log-normal with sigma 0.1 and 0.5) of n = 12..100 runs (below 12 it says
   nothing), and how often it flags two modes 35% apart (half and half; 80/20).

Usage: python benchmarks/sim_many.py [--quick] [--out FILE]; writes the table as JSON to
benchmarks/sim-many-<date>.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from perflab.console import stdout_console
from perflab.metrics import MetricInfo
from perflab.stats import adjust_family, compare_samples, modality
from perflab.table import Column, Table

NS = MetricInfo("ns_per_op", "ns", "")


def families(m: int, correction: str, trials: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    changed_n = max(1, m // 10)
    any_false = false_claims = claims = found = 0
    for _ in range(trials):
        comps = []
        for i in range(m):
            a = np.exp(rng.normal(0, 0.03, 10))
            b = np.exp(rng.normal(np.log(1.10 if i < changed_n else 1.01), 0.03, 10))
            comps.append(compare_samples(a, b, metric="ns_per_op", info=NS))
        adjust_family(comps, correction, info=NS)
        moved = [c.verdict in ("slower", "faster") for c in comps]
        wrong = sum(moved[changed_n:])
        any_false += wrong > 0
        false_claims += wrong
        claims += sum(moved)
        found += sum(c.verdict == "slower" for c in comps[:changed_n])
    return {"any_false_claim": any_false / trials,
            "false_share_of_claims": false_claims / max(1, claims),
            "changed_found": found / (trials * changed_n)}


def flag_rate(draw: str, n: int, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    flagged = 0
    for _ in range(trials):
        if draw == "normal cv 2%":
            x = rng.normal(100, 2, n)
        elif draw.startswith("lognormal"):
            x = np.exp(rng.normal(0, float(draw.split()[-1]), n))
        else:
            share = 0.5 if draw == "two modes 50/50" else 0.8
            k = rng.binomial(n, share)
            x = np.concatenate([rng.normal(100, 2, k), rng.normal(135, 2.7, n - k)])
        mod = modality(x)
        flagged += bool(mod and mod.flagged)
    return flagged / trials


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    scale = 5 if args.quick else 1
    rows: list[dict[str, object]] = []
    t0 = time.monotonic()
    for m, trials in ((30, 1000), (300, 200)):
        for corr in ("holm", "bh"):
            rows.append({"study": "family", "benchmarks": m, "correction": corr,
                         "trials": trials // scale,
                         **families(m, corr, trials // scale, seed=m)})
    for draw in ("normal cv 2%", "lognormal 0.1", "lognormal 0.5", "two modes 50/50",
                 "two modes 80/20"):
        for n in (12, 15, 20, 30, 50, 100):
            trials = 4000 // scale
            rows.append({"study": "modality", "sample": draw, "n": n, "trials": trials,
                         "flagged": flag_rate(draw, n, trials, seed=n)})
    t = Table.of("many benchmarks", [Column("study", "left"), Column("case", "left"),
                                     Column("result", "left")])
    for r in rows:
        if r["study"] == "family":
            t.add_row("family", f"{r['benchmarks']} benchmarks, {r['correction']}",
                      f"any false claim {r['any_false_claim']:.3f}, false share "
                      f"{r['false_share_of_claims']:.4f}, found {r['changed_found']:.3f}")
        else:
            t.add_row("modality", f"{r['sample']}, n={r['n']}", f"flagged {r['flagged']:.4f}")
    t.print(stdout_console())
    out = args.out or Path(__file__).parent / f"sim-many-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps({"seconds": round(time.monotonic() - t0, 1), "rows": rows},
                              indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
