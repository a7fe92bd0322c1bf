"""perflab's start-up, whole invocations as a user types them (issue 25's goals, quiet machine):

  perflab --version                                  <= 0.15 s
  perflab stat -r 1 -w 0 -- true (a SQLite store)    <= 0.6 s
  perflab fleet status (a real PostgreSQL store)     <= 0.8 s
  perflab results show ID, report ID --no-plots      (no goal; printed beside them)

Each is timed with hyperfine -N (3 warm-ups, 10 runs, the median); the PostgreSQL server is a
throw-away one (perflab.fleet.localpg), as in benchmarks/fleet.py.  Run by `make bench`.

Usage: python benchmarks/startup.py [--runs 10] [--out FILE]
Figures are written to benchmarks/startup-<date>.json (or --out).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

from perflab.fleet.localpg import LocalPostgres  # noqa: E402

GOALS = {"--version": 0.15, "stat -r 1 -w 0 -- true": 0.6, "fleet status": 0.8}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not shutil.which("hyperfine"):
        print("startup: hyperfine is not installed (make setup installs it)", file=sys.stderr)
        return 1
    exe = str(Path(sys.executable).parent / "perflab")
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_before": load()}
    with tempfile.TemporaryDirectory() as tmpd, LocalPostgres(fsync=True) as pg:
        tmp = Path(tmpd)
        url = pg.create_database("startup")
        sqlite = tmp / "r.sqlite"
        for argv in (["fleet", "init", "--db", url],
                     ["compare", "-r", "6", "--db", str(sqlite), "--", "true", "sleep 0.001"]):
            subprocess.run([exe, *argv], check=True, capture_output=True)
        cases = {
            "--version": f"{exe} --version",
            "stat -r 1 -w 0 -- true": f"{exe} stat -r 1 -w 0 --db {sqlite} -- true",
            "fleet status": f"{exe} fleet status --db {url}",
            "results show (a compare)": f"{exe} results show 1 --db {sqlite}",
            "report --no-plots (a compare)":
                f"{exe} report 1 --no-plots --db {sqlite} --out {tmp / 'rep'}",
        }
        js = tmp / "h.json"
        subprocess.run(["hyperfine", "-N", "--style", "none", "-w", "3", "-r", str(args.runs),
                        "--export-json", str(js), *cases.values()], check=True,
                       capture_output=True)
        res = json.loads(js.read_text())["results"]
    report["load_after"] = load()
    report["median_s"] = {}
    for name, r in zip(cases, res, strict=True):
        med = round(r["median"], 3)
        report["median_s"][name] = med
        goal = GOALS.get(name)
        met = goal is not None and med <= goal
        verdict = "" if goal is None else f"  (goal <= {goal} s: {'met' if met else 'NOT met'})"
        print(f"{name:32} {med:6.3f} s median, min {r['min']:.3f}{verdict}")
    print(f"load {report['load_before']} -> {report['load_after']}")
    save_figures(report, "startup", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
