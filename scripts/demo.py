#!/usr/bin/env python3
"""`make demo`: run the exception-handling study (suites/eh-study.toml) and print where its
HTML report is.

The study measures every registered eh/* runtime (a runtime whose workload is missing here is
skipped with one line) at depth 0/1/2/10/100 x 1 and 2 threads x software and hardware
exceptions, stores every run in the result database, and writes tables, plots (PNG and SVG),
Markdown, CSV and a self-contained HTML page.

    python scripts/demo.py [--db PATH] [--out DIR] [--copy-plots DIR] [--dry-run]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "suites" / "eh-study.toml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="result database (default: perflab's default database)")
    ap.add_argument("--out", help="report directory (default: run-<id> in the store's reports folder, see docs/suites.md)")
    ap.add_argument("--copy-plots", metavar="DIR",
                    help="also copy the PNG plots there as eh-study-*.png (how docs/img/ "
                    "was filled)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its estimate")
    args = ap.parse_args()

    cmd = [sys.executable, "-m", "perflab", "run", str(SUITE)]
    if args.db:
        cmd += ["--db", args.db]
    if args.out:
        cmd += ["--out", args.out]
    if args.dry_run:
        cmd.append("--dry-run")
    print(f"demo: {' '.join(cmd[2:])}", flush=True)
    t0 = time.monotonic()
    # Output goes straight through (progress bar, tables); only the last line is parsed.
    # The tables are captured: they are drawn at the terminal's width, at least 120 columns.
    env = {**os.environ, "COLUMNS": str(max(120, shutil.get_terminal_size().columns))}
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0 or args.dry_run:
        return proc.returncode
    m = re.search(r"^report: (.+)$", proc.stdout, re.M)
    if not m:
        print("demo: the run finished but printed no report path", file=sys.stderr)
        return 1
    html = Path(m.group(1).strip())
    if args.copy_plots:
        dest = Path(args.copy_plots)
        dest.mkdir(parents=True, exist_ok=True)
        for png in sorted((html.parent / "img").glob("*.png")):
            shutil.copy2(png, dest / f"eh-study-{png.name}")
    # one line: the study's answer above is meant to fit one screen (60 lines at 120 columns)
    print(f"demo: finished in {time.monotonic() - t0:.0f} s; HTML report: {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
