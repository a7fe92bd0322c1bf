"""Per-run cost of perflab against hyperfine -N, side by side in one run.

For `true` and for a ~1 ms CPU loop (tests/programs/spin.c), alternately: hyperfine -N with R
runs (its wall time divided by its runs), and perflab's runner with R runs into a SQLite store
(as `perflab stat` does: counters, the timed-region channel, one transaction per round; wall
time of measure() divided by its runs, so Python's start-up is not counted).  Each pair is
repeated and the medians are printed, with what each tool *reports* as the command's time
(median of its runs): perflab's figure for `true` should be within 0.1 ms of hyperfine's.

usage: python benchmarks/launch_cost.py [--runs 300] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, measure
from perflab.storage import Store

ROOT = Path(__file__).resolve().parents[1]


def build_spin(tmp: Path) -> Path:
    out = tmp / "spin"
    subprocess.run(["cc", "-O1", f"-I{ROOT / 'include'}", "-o", str(out),
                    str(ROOT / "tests" / "programs" / "spin.c")], check=True)
    return out


def iterations_for(spin: Path, target_s: float) -> int:
    """Loop iterations that take about target_s (timed over many runs of a long loop)."""
    n = 20_000_000
    t0 = time.perf_counter()
    subprocess.run([str(spin), str(n)], check=True, capture_output=True)
    dt = time.perf_counter() - t0
    return max(1000, int(n * target_s / dt))


def hyperfine(argv: list[str], runs: int, warmup: int) -> tuple[float, float]:
    """(wall seconds per run, median reported time) of hyperfine -N."""
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "h.json"
        t0 = time.perf_counter()
        subprocess.run(["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs",
                        str(runs), "--export-json", str(js), " ".join(argv)], check=True,
                       capture_output=True)
        elapsed = time.perf_counter() - t0
        times = json.loads(js.read_text())["results"][0]["times"]
    return elapsed / (runs + warmup), float(np.median(times))


def perflab(argv: list[str], runs: int, warmup: int, store: Store,
            counters: bool = True) -> tuple[float, float]:
    rs = ResultSet(kind="stat", fingerprint={"hostname": "bench"}, settings={})
    cfg = Configuration(name=argv[0], command=argv)
    opts = MeasureOptions(runs=runs, warmup=warmup, counters="auto" if counters else "none")
    t0 = time.perf_counter()
    measure(rs, [cfg], opts, store=store, console=Console(quiet=True))
    elapsed = time.perf_counter() - t0
    return elapsed / (runs + warmup), float(np.median(cfg.samples("wall_time")))


def run(runs: int = 300, reps: int = 3) -> dict[str, Any]:
    if not shutil.which("hyperfine"):
        return {"skipped": "hyperfine not installed"}
    out: dict[str, Any] = {"runs": runs, "reps": reps, "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        spin = build_spin(Path(tmp))
        n = iterations_for(spin, 0.001)
        store = Store(Path(tmp) / "bench.sqlite")
        commands = {"true": [shutil.which("true") or "/bin/true"],
                    "1 ms loop": [str(spin), str(n)]}
        for label, argv in commands.items():
            rows: dict[str, list[tuple[float, float]]] = {"hyperfine": [], "perflab": [],
                                                          "perflab_no_counters": []}
            for _ in range(reps):
                rows["hyperfine"].append(hyperfine(argv, runs, 3))
                rows["perflab"].append(perflab(argv, runs, 3, store))
                rows["perflab_no_counters"].append(perflab(argv, runs, 3, store, False))
            out[label] = {k: {"cost_per_run_s": float(np.median([c for c, _ in v])),
                              "reported_median_s": float(np.median([m for _, m in v]))}
                          for k, v in rows.items()}
    out["load_after"] = os.getloadavg()[0]
    return out


def print_table(r: dict[str, Any], console: Console) -> None:
    if "skipped" in r:
        console.print(f"per-run cost: skipped ({r['skipped']})")
        return
    console.print(f"per-run cost, {r['runs']} runs x {r['reps']} alternating repetitions, load "
                  f"{r['load_before']:.1f} -> {r['load_after']:.1f}")
    console.print(f"{'command':10s} {'tool':22s} {'cost/run':>10s} {'vs hf':>7s} "
                  f"{'reports':>10s} {'- hf':>9s}")
    for label in ("true", "1 ms loop"):
        rows = r[label]
        hf = rows["hyperfine"]
        for tool, v in rows.items():
            console.print(
                f"{label:10s} {tool:22s} {v['cost_per_run_s'] * 1e3:8.3f} ms "
                f"{v['cost_per_run_s'] / hf['cost_per_run_s']:6.2f}x "
                f"{v['reported_median_s'] * 1e3:8.3f} ms "
                f"{(v['reported_median_s'] - hf['reported_median_s']) * 1e3:+7.3f} ms",
                highlight=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    console = Console()
    print_table(run(args.runs, args.reps), console)


if __name__ == "__main__":
    main()
