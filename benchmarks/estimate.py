"""How right is a suite's dry-run estimate?  Estimate vs actual, quiet and beside two busy loops.

For each suite and condition, with a fresh database (no earlier runs: the estimate comes from
the machine as it is now, suites/estimate.py), this prints the dry run's estimate of the
measuring and of the report, then times `perflab run SUITE --no-report` and `perflab report
ID`, and the ratio actual / estimate of each part and of the whole, and whether the goal is met
(the whole within ±30%, i.e. a ratio of 0.77-1.30, as the machine is and at load 4).

  quiet  nothing started by the benchmark (the load average is recorded before and after)
  load   two CPU-bound neighbours (benchmarks/neighbours.py) that the benchmark starts and stops

The default suite is a reduced exception study (suites/eh-study.toml with cpp, c, java, node
and python at depth 0 and 10, one thread, both kinds: 20 configuration series, about half a
minute quiet); --demo takes suites/eh-study.toml itself, what `make demo` runs (minutes);
--suites takes suite files by name or path instead (e.g. the runtimes' memory suites:
--suites memory,memory-csharp,memory-coreclr,timers-csharp).

Usage: python benchmarks/estimate.py [--demo | --suites A,B] [--conditions quiet,load] [--out FILE]
Figures are written to benchmarks/estimate[-demo|-suites]-<date>.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import Neighbours, load  # noqa: E402 (benchmarks/neighbours.py)

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "suites" / "eh-study.toml"
MINI_CONFIGS = ("cpp", "c", "java", "node", "python")
GOAL = 1.3  # actual / estimate within [1 / GOAL, GOAL]


def mini_suite(dest: Path) -> Path:
    """The study with fewer configurations and cells (its text, cut down: the same runtimes'
    commands, calibration and report as `make demo`)."""
    text = STUDY.read_text().replace('name        = "eh-study"', 'name        = "eh-mini"')
    text = re.sub(r"(?m)^depth   = \[.*?\]", "depth   = [0, 10]", text)
    text = re.sub(r"(?m)^threads = \[.*?\]", "threads = [1]", text)
    text = re.sub(r"(?ms)^exclude = \[.*?^\]\n", "", text)
    blocks = re.split(r"(?m)^(?=\[)", text)
    keep = [b for b in blocks
            if not (m := re.match(r"\[configurations\.([\w-]+)\]", b))
            or m.group(1) in MINI_CONFIGS]
    dest.write_text("".join(keep))
    return dest


def seconds(text: str) -> float:
    """A duration as format.fmt_duration prints it ("45s", "6m22s", "1h05m") in seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not m or not text:
        raise ValueError(f"not a duration: {text!r}")
    h, mi, s = (int(g or 0) for g in m.groups())
    return 3600 * h + 60 * mi + s


def perflab(*args: str) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "perflab", *args], cwd=ROOT, text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"perflab {' '.join(args)} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[-2000:]}")
    return time.monotonic() - t0, proc.stdout


def one_condition(suite: Path, tmp: Path, cond: str) -> dict[str, Any]:
    db = tmp / f"{cond}.db"
    out: dict[str, Any] = {"load_before": load(), "started": time.strftime("%H:%M:%S UTC",
                                                                            time.gmtime())}
    _, dry = perflab("run", str(suite), "--dry-run", "--db", str(db))
    line = dry.strip().splitlines()[-1]
    m = re.search(r"estimated time (\S+) = (\S+) measuring \+ (\S+) report", line)
    if not m:
        raise SystemExit(f"no estimate in the dry run's last line: {line}")
    est_total, est_measure, est_report = (seconds(g) for g in m.groups())
    out["dry_run"] = line.split("; estimated time ")[-1]
    measure_s, _ = perflab("run", str(suite), "--db", str(db), "--no-report", "--no-progress")
    out["load_mid"] = load()
    report_s, _ = perflab("report", "1", "--db", str(db), "--out", str(tmp / f"{cond}-report"))
    out["load_after"] = load()
    actual = measure_s + report_s
    out.update(
        estimate_s={"measure": est_measure, "report": est_report, "total": est_total},
        actual_s={"measure": round(measure_s, 1), "report": round(report_s, 1),
                  "total": round(actual, 1)},
        ratio={"measure": round(measure_s / est_measure, 2),
               "report": round(report_s / est_report, 2) if est_report else None,
               "total": round(actual / est_total, 2)})
    out["within_30pct"] = 1 / GOAL <= actual / est_total <= GOAL
    return out


def suite_path(name: str) -> Path:
    """A suite named as in suites/ (memory-coreclr) or by its path."""
    p = Path(name)
    if p.suffix == ".toml":
        return p.resolve()
    return ROOT / "suites" / f"{name}.toml"


def print_row(suite: str, cond: str, r: dict[str, Any]) -> None:
    e, a, q = r["estimate_s"], r["actual_s"], r["ratio"]
    print(f"{suite:16} {cond:5} load {r['load_before'][0]:.1f}->{r['load_after'][0]:.1f}: "
          f"estimate {e['total']:.0f} s ({e['measure']:.0f} + {e['report']:.0f} report), "
          f"actual {a['total']:.0f} s ({a['measure']:.0f} + {a['report']:.0f}); "
          f"actual/estimate {q['total']:.2f} (measure {q['measure']:.2f}, report {q['report']}); "
          f"goal ±{GOAL - 1:.0%}: {'met' if r['within_30pct'] else 'NOT MET'}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--demo", action="store_true", help="the whole study, as `make demo`")
    ap.add_argument("--suites", default="", help="comma-separated suite names or files")
    ap.add_argument("--conditions", default="quiet,load")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    date = time.strftime("%Y-%m-%d", time.gmtime())
    report: dict[str, Any] = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    tag = "-demo" if args.demo else "-suites" if args.suites else ""
    out = args.out or Path(__file__).parent / f"estimate{tag}-{date}.json"
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        if args.suites:
            suites = {n: suite_path(n) for n in args.suites.split(",")}
        elif args.demo:
            suites = {"eh-study (make demo)": STUDY}
        else:
            suites = {f"eh-mini: eh-study with {', '.join(MINI_CONFIGS)}, depth 0 and 10, "
                      "1 thread": mini_suite(tmp / "eh-mini.toml")}
        report["suites"] = {}
        for name, suite in suites.items():
            got: dict[str, Any] = {}
            report["suites"][name] = got
            for cond in args.conditions.split(","):
                work = tmp / f"{suite.stem}-{cond}"
                work.mkdir()
                if cond == "load":
                    with Neighbours(2):
                        r = one_condition(suite, work, cond)
                else:
                    r = one_condition(suite, work, cond)
                got[cond] = r
                print_row(suite.stem, cond, r)
                out.write_text(json.dumps(report, indent=2) + "\n")  # kept if a later one is cut
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
