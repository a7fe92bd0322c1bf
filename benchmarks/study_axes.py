"""A/A study axes under a neighbour that comes and goes (issue 19, item 5; `make bench`).

A suite whose [report] kinds parameter has two values that run the same command ("x" and "y"),
while a CPU-bound neighbour switches on and off every --period seconds (20).  perflab measures
the two kinds in the same rounds (suites.execute groups) and judges y over x paired by round
(stats.axis_comparisons): any verdict but equivalent/inconclusive is a false one.  Prints the
verdict counts per metric; writes JSON.

Usage: python benchmarks/study_axes.py [--trials 20] [--period 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import Neighbours, load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

from perflab.reports.matrix import suite_view  # noqa: E402
from perflab.stats import axis_comparisons  # noqa: E402
from perflab.storage import Store  # noqa: E402
from perflab.suites.execute import run_plan  # noqa: E402
from perflab.suites.plan import make_plan  # noqa: E402
from perflab.suites.spec import load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITE = """\
[suite]
name = "aa-axes"
metrics = ["wall_time", "task_clock"]

[measure]
runs = 12
warmup = 1

[matrix]
kind = ["x", "y"]

[report]
kinds = {{ param = "kind", a = "y", b = "x" }}

[configurations.spin]
command = ["{spin}", "{n}", "{{kind}}"]
"""


class Toggler:
    """One CPU-bound neighbour, on for PERIOD seconds, off for PERIOD, until stopped."""

    def __init__(self, period: float) -> None:
        self.period, self.stop = period, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            with Neighbours(1):
                self.stop.wait(self.period)
            self.stop.wait(self.period)

    def __enter__(self) -> Toggler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--period", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "load_before": load(), "trials": args.trials,
                           "period_s": args.period, "paired": {}}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        spin = tmp / "spin"
        subprocess.run(["cc", "-O1", f"-I{ROOT / 'include'}", "-o", str(spin),
                        str(ROOT / "tests" / "programs" / "spin.c")], check=True)
        suite = tmp / "aa.toml"
        suite.write_text(SUITE.format(spin=spin, n=20_000_000))
        plan = make_plan(load_suite(suite))
        with Toggler(args.period):
            for t in range(args.trials):
                store = Store(tmp / f"r{t}.sqlite")
                res = run_plan(plan, store, progress=False)
                rs = suite_view(store.load(res.rs.id))
                for metric in ("wall_time", "task_clock"):
                    (c,) = axis_comparisons(rs, metric, "kind", "y", "x")
                    assert c.paired, "the two kinds were not measured in the same rounds"
                    out["paired"].setdefault(metric, []).append(c.verdict)
                print(f"trial {t + 1}/{args.trials}: paired "
                      f"{[out['paired'][m][-1] for m in out['paired']]} (load {load()[0]})",
                      flush=True)
    out["load_after"] = load()
    for metric, verdicts in out["paired"].items():
        counts = {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}
        false = sum(n for v, n in counts.items() if v not in ("equivalent", "inconclusive"))
        out.setdefault("false", {})[metric] = false
        print(f"{metric:10}: {counts}  false verdicts {false} of {len(verdicts)}")
    save_figures(out, "study-axes", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
