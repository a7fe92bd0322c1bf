"""perflab measuring itself on this machine: false alarms, power, CI coverage, exactness, overhead.

Run by `make bench` (never by `make test`: these take minutes and print figures, they do not
assert).  Each benchmark prints a table and the whole run is written to benchmarks/last.json.

  aa         A/A: the same command as two configurations; how often is a verdict "slower"/"faster"?
  detect     a ~50 ms CPU loop vs the same loop doing 2% / 5% more work, within a time budget:
             how often is it found "slower", and how often does the CI cover the true ratio?
  valgrind   a 1% change in work, counted with callgrind: is the instruction ratio exact?
  overhead   per-run cost of perflab against hyperfine on `true`.

Usage: python benchmarks/run_all.py [--only aa,detect,...] [--trials N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from perflab.fingerprint import machine_fingerprint, pmu_status
from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, measure
from perflab.stats import compare_result

ROOT = Path(__file__).resolve().parents[1]
console = Console()


def build_spin(tmp: Path) -> Path:
    out = tmp / "spin"
    subprocess.run(["cc", "-O1", f"-I{ROOT / 'include'}", "-o", str(out),
                    str(ROOT / "tests" / "programs" / "spin.c")], check=True)
    return out


def calibrate(spin: Path, target_s: float = 0.05) -> int:
    """Iterations of the spin loop that take about target_s of wall time."""
    n = 2_000_000
    while True:
        t0 = time.perf_counter()
        subprocess.run([str(spin), str(n)], check=True, capture_output=True)
        dt = time.perf_counter() - t0
        if dt > target_s / 4:
            return int(n * target_s / dt)
        n *= 4


def one_comparison(spin: Path, n_a: int, n_b: int, budget: float, seed: int,
                   metric: str = "wall_time") -> tuple[Any, ResultSet]:
    rs = ResultSet(kind="compare", fingerprint={}, settings={})
    a = Configuration(name="A", command=[str(spin), str(n_a)], is_baseline=True, cell="{}")
    b = Configuration(name="B", command=[str(spin), str(n_b)], cell="{}")
    opts = MeasureOptions(warmup=1, budget=budget, precision=0.0025, min_runs=10,
                          max_runs=100_000, primary_metric=metric, seed=seed, region=False)
    measure(rs, [a, b], opts, store=None, console=Console(stderr=True, quiet=True))
    comp = [c for c in compare_result(rs, [metric]) if c.metric == metric][0]
    return comp, rs


def bench_aa(spin: Path, n: int, trials: int, budget: float) -> dict[str, Any]:
    verdicts: dict[str, int] = {}
    for t in range(trials):
        comp, _ = one_comparison(spin, n, n, budget, seed=t)
        verdicts[comp.verdict] = verdicts.get(comp.verdict, 0) + 1
        console.print(f"  A/A trial {t + 1}/{trials}: {comp.verdict} "
                      f"({comp.change_pct:+.2f}% [{(comp.ci_low - 1) * 100:+.2f}, "
                      f"{(comp.ci_high - 1) * 100:+.2f}], n={comp.n_baseline})", highlight=False)
    false = verdicts.get("slower", 0) + verdicts.get("faster", 0)
    return {"trials": trials, "budget_s": budget, "verdicts": verdicts,
            "false_alarm_rate": false / trials}


def bench_detect(spin: Path, n: int, slowdown: float, trials: int,
                 budget: float) -> dict[str, Any]:
    comps = []
    for t in range(trials):
        comp, _ = one_comparison(spin, n, int(n * (1 + slowdown)), budget, seed=1000 + t)
        comps.append(comp)
        console.print(f"  +{slowdown:.0%} trial {t + 1}/{trials}: {comp.verdict} "
                      f"({comp.change_pct:+.2f}% [{(comp.ci_low - 1) * 100:+.2f}, "
                      f"{(comp.ci_high - 1) * 100:+.2f}], n={comp.n_baseline})", highlight=False)
    # The true wall-time ratio is a little under 1+slowdown (process start-up is fixed cost):
    # estimate it from all trials pooled, then ask how often each trial's CI covered it.
    pooled = float(np.median([c.ratio for c in comps]))
    covered = sum(c.ci_low <= pooled <= c.ci_high for c in comps)
    found = sum(c.verdict == "slower" for c in comps)
    return {"slowdown": slowdown, "trials": trials, "budget_s": budget,
            "detected": found / trials, "pooled_ratio": pooled, "ci_coverage": covered / trials,
            "median_runs_per_config": float(np.median([c.n_baseline for c in comps])),
            "verdicts": {v: sum(c.verdict == v for c in comps) for v in
                         ("slower", "faster", "equivalent", "inconclusive")}}


def bench_valgrind(spin: Path) -> dict[str, Any]:
    if not shutil.which("valgrind"):
        return {"skipped": "valgrind not installed"}
    n = 200_000
    rs = ResultSet(kind="compare", fingerprint={}, settings={})
    a = Configuration(name="A", command=[str(spin), str(n)], is_baseline=True, cell="{}")
    b = Configuration(name="B", command=[str(spin), str(int(n * 1.01))], cell="{}")
    opts = MeasureOptions(primary_metric="instructions", instructions="valgrind",
                          region_symbol="*perflab_timed_region*", valgrind_runs=3)
    measure(rs, [a, b], opts, console=Console(stderr=True, quiet=True))
    comps = {c.metric: c for c in compare_result(rs, ["instructions", "instructions_per_op"])}
    ins = comps["instructions"]
    return {"instructions_a": a.samples("instructions"),
            "instructions_b": b.samples("instructions"),
            "ratio": ins.ratio, "expected_ratio": int(n * 1.01) / n, "verdict": ins.verdict,
            "deterministic": ins.deterministic,
            "per_op_a": a.samples("instructions_per_op")[0],
            "per_op_b": b.samples("instructions_per_op")[0]}


def bench_overhead(runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": runs}
    true = shutil.which("true") or "/bin/true"
    rs = ResultSet(kind="stat", fingerprint={}, settings={})
    cfg = Configuration(name="true", command=[true])
    t0 = time.perf_counter()
    measure(rs, [cfg], MeasureOptions(runs=runs, warmup=3), console=Console(quiet=True))
    elapsed = time.perf_counter() - t0
    out["perflab"] = {"median_wall_s": float(np.median(cfg.samples("wall_time"))),
                      "elapsed_per_run_s": elapsed / (runs + 3)}
    rs2 = ResultSet(kind="stat", fingerprint={}, settings={})
    cfg2 = Configuration(name="true", command=[true])
    t0 = time.perf_counter()
    measure(rs2, [cfg2], MeasureOptions(runs=runs, warmup=3, counters="none", region=False),
            console=Console(quiet=True))
    out["perflab_no_counters"] = {
        "median_wall_s": float(np.median(cfg2.samples("wall_time"))),
        "elapsed_per_run_s": (time.perf_counter() - t0) / (runs + 3)}
    hf = shutil.which("hyperfine")
    if hf:
        with tempfile.TemporaryDirectory() as tmp:
            js = Path(tmp) / "h.json"
            t0 = time.perf_counter()
            subprocess.run([hf, "-N", "--warmup", "3", "--runs", str(runs), "--export-json",
                            str(js), true], check=True, capture_output=True)
            elapsed = time.perf_counter() - t0
            times = json.loads(js.read_text())["results"][0]["times"]
        out["hyperfine"] = {"median_wall_s": float(np.median(times)),
                            "elapsed_per_run_s": elapsed / (runs + 3)}
    else:
        out["hyperfine"] = {"skipped": "hyperfine not installed"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="aa,detect,valgrind,overhead")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--aa-trials", type=int, default=100)
    ap.add_argument("--aa-budget", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="few trials, to check the script")
    args = ap.parse_args()
    only = set(args.only.split(","))
    trials, aa_trials = (3, 5) if args.quick else (args.trials, args.aa_trials)
    report: dict[str, Any] = {"machine": machine_fingerprint(), "pmu": pmu_status(),
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with tempfile.TemporaryDirectory() as tmp:
        spin = build_spin(Path(tmp))
        n = calibrate(spin)
        report["loop_iterations"] = n
        console.print(f"[bold]spin loop: {n} iterations ≈ 50 ms[/]")
        if "aa" in only:
            report["aa"] = bench_aa(spin, n, aa_trials, args.aa_budget)
        if "detect" in only:
            report["detect_5pct"] = bench_detect(spin, n, 0.05, trials, 20.0)
            report["detect_2pct"] = bench_detect(spin, n, 0.02, trials, 60.0)
        if "valgrind" in only:
            report["valgrind"] = bench_valgrind(spin)
        if "overhead" in only:
            report["overhead"] = bench_overhead(200)
    summary(report)
    out = Path(__file__).parent / "last.json"
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    console.print(f"written to {out}")


def summary(r: dict[str, Any]) -> None:
    t = Table(title="perflab on this machine", header_style="bold", title_justify="left")
    t.add_column("benchmark")
    t.add_column("figure", justify="right")
    t.add_column("target")
    if "aa" in r:
        aa = r["aa"]
        t.add_row(f"A/A false alarms ({aa['trials']} trials, {aa['budget_s']:g} s each)",
                  f"{aa['false_alarm_rate']:.1%}", "≤ 1%")
    for key, target in (("detect_5pct", "≥ 90% within 20 s"), ("detect_2pct", "within 60 s")):
        if key in r:
            d = r[key]
            t.add_row(f"+{d['slowdown']:.0%} found 'slower' ({d['trials']} trials, "
                      f"{d['budget_s']:g} s)", f"{d['detected']:.0%}", target)
            t.add_row(f"  CI coverage of the true ratio ({d['pooled_ratio']:.4f})",
                      f"{d['ci_coverage']:.0%}", "≈ 95%")
    if "valgrind" in r and "ratio" in r["valgrind"]:
        v = r["valgrind"]
        t.add_row("valgrind: 1% more work, instruction ratio",
                  f"{v['ratio']:.6f} (expected {v['expected_ratio']:.6f}, "
                  f"{'exact' if v['deterministic'] else 'NOT exact'})", "exact")
    if "overhead" in r:
        o = r["overhead"]
        for k in ("perflab", "perflab_no_counters", "hyperfine"):
            if "median_wall_s" in o.get(k, {}):
                t.add_row(f"`true`: {k} reports / costs per run",
                          f"{o[k]['median_wall_s'] * 1e3:.3f} ms / "
                          f"{o[k]['elapsed_per_run_s'] * 1e3:.2f} ms", "")
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
