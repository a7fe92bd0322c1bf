"""Does perflab storing a chunk of runs while the launcher makes the next ones disturb them?

With `--runs` the launcher hands its records over every BATCH_SECONDS and goes on, and perflab
stores them meanwhile (issue 25): perflab's Python then runs beside the measured command. This
measures 600 runs of a ~1 ms CPU loop (tests/programs/spin.c) with counters, alternately in
that mode ("chunks") and with every run handed over at the end of one batch, nothing of
perflab's running beside the runs ("one-batch"), REPS times each, and prints per mode the
median over repetitions of the wall time's median, 90th percentile and CV, and of task_clock's
median. A difference between the modes beyond the spread of the per-repetition medians would
be perflab's storing showing in the measurement.

usage: python benchmarks/chunk_isolation.py [--reps 8] [--runs 600]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console

import perflab.runner.loop as runner
from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, Watchers, measure
from perflab.storage import Store

sys.path.insert(0, str(Path(__file__).parent))
from launch_cost import build_spin, iterations_for  # noqa: E402

MODES = {"chunks": runner.BATCH_SECONDS, "one-batch": 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--runs", type=int, default=600)
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        spin = build_spin(Path(tmp))
        n = iterations_for(spin, 0.001)
        store = Store(Path(tmp) / "b.sqlite")
        res: dict[str, list[tuple[float, ...]]] = {m: [] for m in MODES}
        for rep in range(args.reps):
            for mode in list(MODES) if rep % 2 == 0 else list(MODES)[::-1]:
                runner.BATCH_SECONDS = MODES[mode]
                rs = ResultSet(kind="stat", fingerprint={"hostname": "bench"}, settings={})
                cfg = Configuration(name="spin", command=[str(spin), str(n)])
                measure(rs, [cfg], MeasureOptions(runs=args.runs, warmup=3, counters="auto"),
                        store=store, watchers=Watchers(console=Console(quiet=True)))
                w = np.array(cfg.samples("wall_time"))
                t = np.array(cfg.samples("task_clock"))
                res[mode].append((np.median(w) * 1e3, np.percentile(w, 90) * 1e3,
                                  w.std() / w.mean(), np.median(t) * 1e3))
    for mode, rows in res.items():
        a = np.array(rows)
        med, p90, cv, tc = np.median(a, axis=0)
        print(f"{mode:10} wall median {med:.4f} ms (reps {a[:, 0].min():.4f}-"
              f"{a[:, 0].max():.4f})  p90 {p90:.4f} ms  CV {cv:.3f}  task_clock {tc:.4f} ms")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
