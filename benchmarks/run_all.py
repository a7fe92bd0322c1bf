"""perflab measuring itself on this machine: false alarms, power, CI coverage, time to verdict.

Run by `make bench` (never by `make test`: these take minutes and print figures, they do not
assert).  Every benchmark runs under each condition, in one invocation:

  quiet  nothing started by the benchmark (other users of the machine are not controlled: the
         load average is recorded before and after every section, and at every trial)
  load   two CPU-bound neighbours (busy loops) that the benchmark starts itself and stops

The benchmarks (all with perflab's defaults as `perflab compare --budget B` uses them: the
primary metric chosen by the warm-up, the default stop rule, threshold and correction):

  aa         A/A: the same ~5 ms loop as A and B, short budgets; false alarms per comparison,
             and how often the CI covers the true ratio 1
  detect     a ~30 ms loop vs the same loop doing 5% more work (20 s budget) and 2% more
             (60 s budget): how often "slower" is found, CI coverage of the true ratio, the time
             to the verdict; and a ~5 ms pair at +5% (20 s)
  hyperfine  the same commands with hyperfine + Welch's t-test (batches of 10 runs per command,
             a t-test after each batch, stop at p < 0.05 or at the same budget): time to a
             verdict, and its A/A false alarms
  primary    the deciding metric's stability: 20 `perflab stat -r 10` of a ~1 ms loop and of
             `sleep 0.02`, each with a fresh database (the first choice, from the runs alone)
             and 20 more on one database (the stored choice), then a `compare` on that
             database: which metric each picked (issue 19: 20 of 20 alike)
  valgrind   a 1% change in work counted with callgrind: is the ratio exact? (quiet only)
  overhead   per-run cost of perflab against hyperfine -N and perf stat -r, `true` and a 1 ms loop
  lean       the size of a fresh runtime venv (`pip install .`, no extras) and the CLI's
             start-up (`perflab --version`, `--help`, hyperfine -N) (quiet only)

Issue #14's figures in one run: --only lean,overhead,detect,hyperfine --conditions quiet.

Figures are printed and written to benchmarks/results-<date>.json (or --out).

Usage: python benchmarks/run_all.py [--only aa,detect,hyperfine,primary,valgrind,overhead,lean]
         [--conditions quiet,load] [--aa-trials 200] [--trials 10] [--quick]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy import stats as sps

from perflab import session
from perflab.cli.measure import compare as compare_cmd
from perflab.fingerprint import machine_fingerprint, pmu_status
from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, Watchers, measure
from perflab.stats import compare_result

sys.path.insert(0, str(Path(__file__).resolve().parent))
import launch_cost  # noqa: E402 (benchmarks/launch_cost.py)
from neighbours import Neighbours, load  # noqa: E402 (benchmarks/neighbours.py)

ROOT = Path(__file__).resolve().parents[1]
console = Console()
QUIET = Console(stderr=True, quiet=True)


def build_spin(tmp: Path) -> Path:
    out = tmp / "spin"
    subprocess.run(["cc", "-O1", f"-I{ROOT / 'include'}", "-o", str(out),
                    str(ROOT / "tests" / "programs" / "spin.c")], check=True)
    return out


def cpu_seconds(argv: list[str]) -> float:
    """CPU time (user + sys) of one run of argv: not inflated when the machine is busy."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    return ru.ru_utime + ru.ru_stime


def calibrate(spin: Path, target_s: float) -> int:
    """Iterations of the spin loop that take about target_s of CPU time (median of 5)."""
    n = 1_000_000
    while True:
        dt = float(np.median([cpu_seconds([str(spin), str(n)]) for _ in range(5)]))
        if dt > target_s / 4:
            return int(n * target_s / dt)
        n *= 4


def perflab_trial(spin: Path, n_a: int, n_b: int, budget: float, seed: int) -> dict[str, Any]:
    """One `perflab compare --budget B 'spin n_a' 'spin n_b'` with the defaults, in-process."""
    rs = ResultSet(kind="compare", fingerprint={}, settings={})
    a = Configuration(name="A", command=[str(spin), str(n_a)], is_baseline=True, cell="{}")
    b = Configuration(name="B", command=[str(spin), str(n_b)], cell="{}")
    schedule = _defaults(session.Schedule, budget=budget, seed=seed)
    # the budget is the limit
    schedule = replace(schedule, max_runs=max(schedule.max_runs, 100_000))
    opts: MeasureOptions = session.build_options(
        schedule, _defaults(session.RunSetup), session.judging_plan(), metric=None)
    opts.region = False  # the whole process, as hyperfine measures it: the same commands
    load_at = os.getloadavg()[0]
    t0 = time.monotonic()
    measure(rs, [a, b], opts, store=None, watchers=Watchers(console=QUIET))
    elapsed = time.monotonic() - t0
    primary = rs.settings.primary_metric
    metrics = [primary] + (["wall_time"] if primary != "wall_time" else [])
    # As `perflab compare` judges: the plan (threshold, correction, estimator) the run stored.
    comps = {c.metric: c for c in compare_result(rs, metrics)}
    out: dict[str, Any] = {"primary_name": primary, "elapsed_s": elapsed, "load1": load_at,
                           "runs_per_config": len(a.measured_runs()),
                           "primary_reason": (rs.settings.primary_choice.reason
                                              if rs.settings.primary_choice else None),
                           "comparison": (rs.settings.comparison.to_dict()
                                          if rs.settings.comparison else None),
                           "stop": rs.settings.stop.to_dict() if rs.settings.stop else None}
    for m, c in comps.items():
        key = "primary" if m == primary else m
        out[key] = {"verdict": c.verdict, "ratio": c.ratio, "ci": [c.ci_low, c.ci_high],
                    "p": c.p_value}
    return out


def _defaults(concept: Any, **given: Any) -> Any:
    """A session concept (Schedule, RunSetup) with `perflab compare`'s own option defaults
    (read off its signature), plus ``given``."""
    sig = inspect.signature(compare_cmd)
    kw: dict[str, Any] = {}
    for f in fields(concept):
        if f.name in given:
            kw[f.name] = given[f.name]
        elif f.name in sig.parameters and \
                sig.parameters[f.name].default is not inspect.Parameter.empty:
            kw[f.name] = sig.parameters[f.name].default
    return concept(**kw)


def _line(label: str, t: int, trials: int, r: dict[str, Any]) -> None:
    p = r["primary"]
    console.print(f"  {label} {t + 1}/{trials}: {p['verdict']} on {r['primary_name']} "
                  f"{p['ratio'] - 1:+.2%} "
                  f"[{p['ci'][0] - 1:+.2%}, {p['ci'][1] - 1:+.2%}] "
                  f"n={r['runs_per_config']} {r['elapsed_s']:.1f}s load {r['load1']:.1f}",
                  highlight=False)


def run_trials(label: str, spin: Path, n_a: int, n_b: int, trials: int, budget: float,
               seed0: int) -> list[dict[str, Any]]:
    out = []
    for t in range(trials):
        r = perflab_trial(spin, n_a, n_b, budget, seed0 + t)
        out.append(r)
        _line(label, t, trials, r)
    return out


def bench_primary(spin: Path, n1: int, trials: int, tmp: Path) -> dict[str, Any]:
    """The primary metric `perflab stat` picks, trial after trial, through the CLI in-process
    (the same code as the command line, without 20 interpreter start-ups)."""
    from typer.testing import CliRunner

    from perflab.cli import app
    from perflab.storage import Store

    runner = CliRunner()
    out: dict[str, Any] = {}
    for name, cmd in (("loop_1ms", [str(spin), str(n1)]), ("sleep_20ms", ["sleep", "0.02"])):
        for mode in ("fresh_db", "one_db"):
            picks = []
            for t in range(trials):
                db = tmp / f"primary-{name}-{mode}-{t if mode == 'fresh_db' else 0}.sqlite"
                res = runner.invoke(app, ["stat", "-r", "10", "--", *cmd],
                                    env={"PERFLAB_DB": str(db)})
                if res.exit_code != 0:
                    picks.append(f"error: {res.output.strip().splitlines()[-1:]}")
                    continue
                store = Store(db)
                choice = store.load(store.result_ids()[-1]).settings.primary_choice
                picks.append(choice.metric if choice else "-")
            out[f"{name}_{mode}"] = _count(picks)
            console.print(f"  {name} {mode}: {out[f'{name}_{mode}']} (load {load()})",
                          highlight=False)
        db = tmp / f"primary-{name}-one_db-0.sqlite"
        res = runner.invoke(app, ["compare", "-r", "10", " ".join(cmd), " ".join(cmd)],
                            env={"PERFLAB_DB": str(db)})
        store = Store(db)
        choice = store.load(store.result_ids()[-1]).settings.primary_choice
        out[f"{name}_compare_after"] = choice.metric if choice else f"exit {res.exit_code}"
        console.print(f"  {name} compare on that database: {out[f'{name}_compare_after']}",
                      highlight=False)
    return out


def summarize_aa(trials: list[dict[str, Any]], budget: float) -> dict[str, Any]:
    verdicts = _count(t["primary"]["verdict"] for t in trials)
    false = verdicts.get("slower", 0) + verdicts.get("faster", 0)
    # Coverage among the trials that have a CI (below the minimum runs there is none).
    with_ci = [t for t in trials if _finite(t["primary"]["ci"])]
    covered = sum(t["primary"]["ci"][0] <= 1.0 <= t["primary"]["ci"][1] for t in with_ci)
    wall = [t["wall_time"] for t in trials if "wall_time" in t]
    return {"trials": len(trials), "budget_s": budget, "verdicts": verdicts,
            "primary_metrics": _count(t["primary_name"] for t in trials),
            "false_alarm_rate": false / len(trials), "trials_with_ci": len(with_ci),
            "ci_coverage_of_1": covered / len(with_ci) if with_ci else None,
            "wall_time_false_alarm_rate": (sum(w["verdict"] in ("slower", "faster")
                                               for w in wall) / len(wall)) if wall else None,
            "median_elapsed_s": float(np.median([t["elapsed_s"] for t in trials])),
            "load1_range": _range(t["load1"] for t in trials), "raw": trials}


def summarize_detect(trials: list[dict[str, Any]], slowdown: float,
                     budget: float) -> dict[str, Any]:
    # The true ratio of CPU time is a little under 1+slowdown (process start-up is a fixed
    # cost): estimate it as the pooled median over the trials, then ask how often each trial's
    # CI covered it.
    pooled = float(np.median([t["primary"]["ratio"] for t in trials]))
    with_ci = [t for t in trials if _finite(t["primary"]["ci"])]
    covered = sum(t["primary"]["ci"][0] <= pooled <= t["primary"]["ci"][1] for t in with_ci)
    found = [t for t in trials if t["primary"]["verdict"] == "slower"]
    # Time to verdict: trials without one count as the whole budget (a censored time).
    ttv = [t["elapsed_s"] if t["primary"]["verdict"] == "slower" else budget for t in trials]
    wall = [t["wall_time"] for t in trials if "wall_time" in t]
    return {"slowdown": slowdown, "trials": len(trials), "budget_s": budget,
            "detected": len(found) / len(trials), "pooled_ratio": pooled,
            "trials_with_ci": len(with_ci),
            "ci_coverage": covered / len(with_ci) if with_ci else None,
            "median_time_to_verdict_s": float(
                np.median(ttv)),
            "verdicts": _count(t["primary"]["verdict"] for t in trials),
            "primary_metrics": _count(t["primary_name"] for t in trials),
            "wall_time_detected": (sum(w["verdict"] == "slower" for w in wall) / len(wall))
            if wall else None,
            "median_runs_per_config": float(np.median([t["runs_per_config"] for t in trials])),
            "load1_range": _range(t["load1"] for t in trials), "raw": trials}


def hyperfine_trial(spin: Path, n_a: int, n_b: int, budget: float, tmp: Path) -> dict[str, Any]:
    """hyperfine + Welch's t-test as a user would iterate: 10 more runs per command, a t-test
    on everything so far, until p < 0.05 or the budget is spent."""
    hf = shutil.which("hyperfine")
    assert hf
    js = tmp / "h.json"
    a_t: list[float] = []
    b_t: list[float] = []
    t0 = time.monotonic()
    p = 1.0
    while True:
        subprocess.run([hf, "-N", "--warmup", "1", "--runs", "10", "--style", "none",
                        "--export-json", str(js), f"{spin} {n_a}", f"{spin} {n_b}"],
                       check=True, capture_output=True)
        res = json.loads(js.read_text())["results"]
        a_t += res[0]["times"]
        b_t += res[1]["times"]
        p = float(sps.ttest_ind(a_t, b_t, equal_var=False).pvalue)
        elapsed = time.monotonic() - t0
        if p < 0.05 or elapsed >= budget:
            break
    ma, mb = float(np.mean(a_t)), float(np.mean(b_t))
    verdict = ("slower" if mb > ma else "faster") if p < 0.05 else "no difference"
    return {"verdict": verdict, "p": p, "ratio_of_means": mb / ma, "runs_per_command": len(a_t),
            "elapsed_s": elapsed, "load1": os.getloadavg()[0]}


def hyperfine_trials(label: str, spin: Path, n_a: int, n_b: int, trials: int, budget: float,
                     tmp: Path) -> dict[str, Any]:
    out = []
    for t in range(trials):
        r = hyperfine_trial(spin, n_a, n_b, budget, tmp)
        out.append(r)
        console.print(f"  hyperfine+Welch {label} {t + 1}/{trials}: {r['verdict']} p={r['p']:.3g} "
                      f"({r['ratio_of_means'] - 1:+.2%}, {r['runs_per_command']} runs each, "
                      f"{r['elapsed_s']:.1f}s)", highlight=False)
    right = "no difference" if n_a == n_b else "slower"
    ttv = [r["elapsed_s"] if r["verdict"] == right else budget for r in out]
    return {"trials": trials, "budget_s": budget, "verdicts": _count(r["verdict"] for r in out),
            "right_rate": sum(r["verdict"] == right for r in out) / trials,
            "median_time_to_verdict_s": float(np.median(ttv)),
            "load1_range": _range(r["load1"] for r in out), "raw": out}


def bench_valgrind(spin: Path) -> dict[str, Any]:
    if not shutil.which("valgrind"):
        return {"skipped": "valgrind not installed"}
    n = 200_000
    rs = ResultSet(kind="compare", fingerprint={}, settings={})
    a = Configuration(name="A", command=[str(spin), str(n)], is_baseline=True, cell="{}")
    b = Configuration(name="B", command=[str(spin), str(int(n * 1.01))], cell="{}")
    opts = MeasureOptions(primary_metric="instructions", instructions="valgrind",
                          region_symbol="*perflab_timed_region*", valgrind_runs=3)
    measure(rs, [a, b], opts, watchers=Watchers(console=QUIET))
    comps = {c.metric: c for c in compare_result(rs, ["instructions", "instructions_per_op"])}
    ins = comps["instructions"]
    return {"instructions_a": a.samples("instructions"),
            "instructions_b": b.samples("instructions"),
            "ratio": ins.ratio, "expected_ratio": int(n * 1.01) / n, "verdict": ins.verdict,
            "deterministic": ins.deterministic}


def bench_overhead(runs: int) -> dict[str, Any]:
    """Per-run cost against hyperfine -N on `true` and a 1 ms loop (benchmarks/launch_cost.py)."""
    return launch_cost.run(runs, reps=5)


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()
               ) / 1e6


def bench_lean(tmp: Path) -> dict[str, Any]:
    """A fresh venv with perflab's runtime dependencies only (what `pip install perflab` gives),
    its size per top-level package, and the CLI's start-up with hyperfine -N."""
    venv = tmp / "lean-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    by_pkg: dict[str, float] = {}
    for d in site.iterdir():
        name = d.name.split("-")[0].lower() if d.name.endswith(".dist-info") else d.name.lower()
        name = name.removesuffix(".libs").removesuffix("_libs")
        by_pkg[name] = by_pkg.get(name, 0.0) + (_du_mb(d) if d.is_dir() else d.stat().st_size
                                                / 1e6)
    out: dict[str, Any] = {"venv_mb": round(_du_mb(venv), 1),
                           "largest_mb": {k: round(v, 1) for k, v in sorted(
                               by_pkg.items(), key=lambda kv: -kv[1])[:8]}}
    exe = Path(sys.executable).parent / "perflab"
    if shutil.which("hyperfine") and exe.exists():
        js = tmp / "startup.json"
        subprocess.run(["hyperfine", "-N", "--style", "none", "-w", "3", "-r", "30",
                        "--export-json", str(js), f"{exe} --version", f"{exe} --help"],
                       check=True, capture_output=True)
        res = json.loads(js.read_text())["results"]
        out["startup_s"] = {"--version": [res[0]["median"], res[0]["stddev"]],
                            "--help": [res[1]["median"], res[1]["stddev"]]}
    return out


def _finite(ci: list[float]) -> bool:
    return all(isinstance(x, float | int) and np.isfinite(x) for x in ci)


def resummarize(report: dict[str, Any]) -> None:
    """Derive every summary again from the stored trials (after a change to the summaries)."""
    for cond in ("quiet", "load"):
        c = report.get(cond) or {}
        if "aa" in c:
            c["aa"] = summarize_aa(c["aa"]["raw"], c["aa"]["budget_s"])
        for key in ("detect_5pct", "detect_2pct", "detect_5pct_5ms"):
            if key in c:
                d = c[key]
                c[key] = summarize_detect(d["raw"], d["slowdown"], d["budget_s"])


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def _range(xs: Any) -> list[float]:
    v = list(xs)
    return [round(min(v), 2), round(max(v), 2)] if v else []


def run_condition(cond: str, only: set[str], spin: Path, n30: int, n5: int, n1: int,
                  args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": load(), "started": time.strftime("%H:%M:%S UTC",
                                                                          time.gmtime())}
    t_start = time.monotonic()
    hf = shutil.which("hyperfine") is not None

    def section(name: str) -> None:
        console.print(f"[bold]{cond}: {name}[/] (load {load()})", highlight=False)
        out.setdefault("loads", {})[name] = load()

    if "aa" in only:
        section("A/A")
        raw = run_trials("A/A", spin, n5, n5, args.aa_trials, args.aa_budget, 10_000)
        out["aa"] = summarize_aa(raw, args.aa_budget)
    if "detect" in only:
        section("+5%, 30 ms")
        raw = run_trials("+5%", spin, n30, int(n30 * 1.05), args.trials, 20.0, 20_000)
        out["detect_5pct"] = summarize_detect(raw, 0.05, 20.0)
        section("+2%, 30 ms")
        raw = run_trials("+2%", spin, n30, int(n30 * 1.02), args.trials, 60.0, 30_000)
        out["detect_2pct"] = summarize_detect(raw, 0.02, 60.0)
        section("+5%, 5 ms")
        raw = run_trials("+5% 5ms", spin, n5, int(n5 * 1.05), args.trials, 20.0, 40_000)
        out["detect_5pct_5ms"] = summarize_detect(raw, 0.05, 20.0)
    if "hyperfine" in only and hf:
        section("hyperfine + Welch")
        out["hf_5pct"] = hyperfine_trials("+5% 30ms", spin, n30, int(n30 * 1.05),
                                          args.hf_trials, 20.0, tmp)
        out["hf_5pct_5ms"] = hyperfine_trials("+5% 5ms", spin, n5, int(n5 * 1.05),
                                              args.hf_trials, 20.0, tmp)
        out["hf_aa"] = hyperfine_trials("A/A 5ms", spin, n5, n5, args.hf_aa_trials, 2.0, tmp)
    if "primary" in only:
        section("primary metric")
        out["primary"] = bench_primary(spin, n1, args.primary_trials, tmp)
    if cond == "quiet" and "valgrind" in only:
        section("valgrind")
        out["valgrind"] = bench_valgrind(spin)
    if "overhead" in only:  # quiet and beside the two neighbours: issue 25's ratios in one run
        section("overhead")
        out["overhead"] = bench_overhead(200)
    if cond == "quiet" and "lean" in only:
        section("lean")
        out["lean"] = bench_lean(tmp)
    out["load_after"] = load()
    out["minutes"] = round((time.monotonic() - t_start) / 60, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="aa,detect,hyperfine,primary,valgrind,overhead,lean")
    ap.add_argument("--primary-trials", type=int, default=20)
    ap.add_argument("--conditions", default="quiet,load")
    ap.add_argument("--trials", type=int, default=10, help="trials per detection case")
    ap.add_argument("--aa-trials", type=int, default=200)
    ap.add_argument("--aa-budget", type=float, default=1.5)
    ap.add_argument("--hf-trials", type=int, default=6, help="hyperfine trials per case")
    ap.add_argument("--hf-aa-trials", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="few trials, to check the script")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--summarize", type=Path, default=None, metavar="RESULTS_JSON",
                    help="measure nothing: derive and print the summaries of a results file")
    args = ap.parse_args()
    if args.summarize:
        report = json.loads(args.summarize.read_text())
        resummarize(report)
        summary(report)
        args.summarize.write_text(json.dumps(report, indent=2, default=str) + "\n")
        return 0
    if args.quick:
        args.trials, args.aa_trials, args.hf_trials, args.hf_aa_trials = 2, 4, 2, 2
        args.primary_trials = 2
    only = set(args.only.split(","))
    conditions = args.conditions.split(",")
    date = time.strftime("%Y-%m-%d", time.gmtime())
    report: dict[str, Any] = {
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine_fingerprint().to_json(), "pmu": pmu_status()}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        spin = build_spin(tmp)
        n30, n5, n1 = calibrate(spin, 0.030), calibrate(spin, 0.005), calibrate(spin, 0.001)
        report["loop_iterations"] = {"30ms": n30, "5ms": n5, "1ms": n1}
        console.print(f"spin loop: {n30} iterations ≈ 30 ms, {n5} ≈ 5 ms of CPU time")
        for cond in conditions:
            if cond == "load":
                with Neighbours(2):
                    report[cond] = run_condition(cond, only, spin, n30, n5, n1, args, tmp)
            else:
                report[cond] = run_condition(cond, only, spin, n30, n5, n1, args, tmp)
    report["minutes"] = round((time.monotonic() - t0) / 60, 1)
    summary(report)
    out = args.out or Path(__file__).parent / f"results-{date}.json"
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    console.print(f"written to {out} ({report['minutes']} min)")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}" if x in (0, 1) else f"{x:.1%}"


def summary(r: dict[str, Any]) -> None:
    t = Table(title="perflab on this machine", header_style="bold", title_justify="left")
    for col in ("benchmark", "condition", "figure", "target"):
        t.add_column(col, justify="right" if col == "figure" else "left")
    for cond in ("quiet", "load"):
        c = r.get(cond)
        if not c:
            continue
        label = f"{cond} (load {c['load_before'][0]:.1f}->{c['load_after'][0]:.1f})"
        if "aa" in c:
            aa = c["aa"]
            t.add_row(f"A/A false alarms, {aa['trials']} trials of {aa['budget_s']:g} s", label,
                      f"{_pct(aa['false_alarm_rate'])} ({aa['verdicts']})", "≤ 1%")
            t.add_row(f"A/A: CI covers the true ratio 1 ({aa.get('trials_with_ci')} with a CI)",
                      label, _pct(aa["ci_coverage_of_1"]), "≥ 90%")
        for key, what, target in (("detect_5pct", "+5% (30 ms) found in 20 s", "≥ 90%"),
                                  ("detect_2pct", "+2% (30 ms) found in 60 s", "≥ 90%"),
                                  ("detect_5pct_5ms", "+5% (5 ms) found in 20 s", "")):
            if key in c:
                d = c[key]
                t.add_row(f"{what}, {d['trials']} trials", label,
                          f"{_pct(d['detected'])} (median {d['median_time_to_verdict_s']:.1f} s;"
                          f" wall_time {_pct(d['wall_time_detected'])})", target)
                t.add_row(f"  CI covers the pooled ratio {d['pooled_ratio']:.4f}", label,
                          _pct(d["ci_coverage"]), "≥ 90%")
        for key, what in (("hf_5pct", "hyperfine+Welch +5% (30 ms)"),
                          ("hf_5pct_5ms", "hyperfine+Welch +5% (5 ms)"),
                          ("hf_aa", "hyperfine+Welch A/A (5 ms)")):
            if key in c:
                h = c[key]
                fig = (f"false alarms {_pct(1 - h['right_rate'])}" if key == "hf_aa" else
                       f"{_pct(h['right_rate'])} found, median {h['median_time_to_verdict_s']:.1f}"
                       " s")
                t.add_row(f"{what}, {h['trials']} trials", label, fig, "")
        if "primary" in c:
            for key, picks in c["primary"].items():
                if isinstance(picks, dict):
                    t.add_row(f"primary metric picked, {key.replace('_', ' ')}", label,
                              ", ".join(f"{m} {n}" for m, n in picks.items()),
                              "one metric, 20 of 20")
                else:
                    t.add_row(f"primary metric, {key.replace('_', ' ')}", label, picks,
                              "the same as stat's")
        if "valgrind" in c and "ratio" in c["valgrind"]:
            v = c["valgrind"]
            t.add_row("valgrind: 1% more work, instruction ratio", label,
                      f"{v['ratio']:.6f} ({'exact' if v['deterministic'] else 'NOT exact'})",
                      "exact")
        if "overhead" in c and "skipped" not in c["overhead"]:
            o = c["overhead"]
            for cmd in ("true", "1 ms loop"):
                hf = o[cmd]["hyperfine"]
                q = launch_cost.ratios(o, cmd)  # medians of the per-alternation ratios
                if "counters_vs_perf_stat" in q:
                    t.add_row(f"`{cmd}`: perflab per-run cost vs perf stat -r", label,
                              f"{q['counters_vs_perf_stat']:.2f}x", "≤ 1.3x")
                for tool, ratio in (("perflab", q["counters_vs_hyperfine"]),
                                    ("perflab_no_counters", q["no_counters_vs_hyperfine"])):
                    v = o[cmd][tool]
                    t.add_row(f"`{cmd}`: {tool} per-run cost / reports, vs hyperfine -N", label,
                              f"{ratio:.2f}x / "
                              f"{(v['reported_median_s'] - hf['reported_median_s']) * 1e3:+.3f}"
                              " ms", "≤ 1.15x without counters / ±0.1 ms" if cmd == "true" else "")
        if "lean" in c:
            lean = c["lean"]
            t.add_row("venv size, `pip install .` (runtime only)", label,
                      f"{lean['venv_mb']:.0f} MB", "≤ 257 MB")
            for flag, (med, sd) in lean.get("startup_s", {}).items():
                t.add_row(f"`perflab {flag}`", label, f"{med * 1e3:.0f} ms ± {sd * 1e3:.0f}",
                          "≤ 0.3 s")
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
