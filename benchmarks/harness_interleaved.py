"""A harness run interleaved against the same harness measured apart.

Two builds of each harness differ in one benchmark, slowed by about 5%: the Go package
tests/programs/gobench (built with -tags slow: BenchmarkSum adds 269 integers, not 256) and
tests/programs/gbench_demo.cc (built with -DPERFLAB_SLOW=1: BM_sum/512 sums 537).

- interleaved: `perflab compare --harness H OLD NEW --runs K -- ARGS` (the real CLI), one
  result of K rounds, each round one run of each build in random order;
- apart: OLD run K times in one process, then NEW (`-test.count K`, `--benchmark_repetitions=K`),
  read by perflab's importers (gobench, gbench), as benchstat and compare.py users measure.

Judged: Go's ns/op (wall time per op, what `go test -bench` prints) and, from the same runs, the
package's cpu-ns/op (its thread's CPU time per op); Google Benchmark's cpu_time.  Each by
perflab's own compare_result (one family per metric across the benchmarks, Holm), the
interleaved runs paired by round, the apart ones unpaired, on their first n = 6..K runs: the
runs needed is the first n from which the slowed benchmark is called slower at every n up to K;
a false verdict is any other benchmark called faster or slower, or the slowed one called
faster, at any n.  The interleaved runs are also judged
unpaired (the same runs, pairing by round ignored), so the table says what the pairing alone
buys: at the n the paired verdict needed, what the unpaired comparison of those runs says, and
from which n (if any) it decides.
Last, `perflab compare --harness H OLD NEW --max-runs K` as a user runs it (its own stop rule,
alpha spent over its looks): the runs it used and its verdicts.

Usage: python benchmarks/harness_interleaved.py [--runs K] [--out FILE]
Prints the table and writes it as JSON to benchmarks/harness-interleaved-<date>.json.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from neighbours import load, save_figures  # noqa: E402 (benchmarks/neighbours.py)

from perflab.console import stdout_console  # noqa: E402
from perflab.imports import gbench, gobench  # noqa: E402
from perflab.metrics import in_family  # noqa: E402
from perflab.model import Configuration, ResultSet, Run, Settings  # noqa: E402
from perflab.stats import Plan, compare_result  # noqa: E402
from perflab.storage import Store  # noqa: E402
from perflab.table import Column, Table  # noqa: E402

PROGRAMS = ROOT / "tests" / "programs"
# harness -> (slowed benchmark, the metrics judged (the harness's primary first), harness
# args, apart flag).  Go's ns/op is wall time per op; the package also reports its thread's CPU
# time per op (cpu-ns/op), judged from the same runs.
CASES = {
    "gobench": ("Sum", ("ns_per_op", "cpu_ns_per_op"), ["-test.benchtime", "20ms"],
                "-test.count"),
    "gbench": ("BM_sum/512", ("cpu_ns_per_op",), ["--benchmark_min_time=0.02"],
               "--benchmark_repetitions"),
}


@dataclass
class Row:
    harness: str
    metric: str  # the family judged
    way: str  # interleaved, paired | interleaved, unpaired (the same runs) | apart, unpaired
    runs: int
    slowed: str
    change: str  # the slowed benchmark's change at K runs
    runs_needed: int | None  # first n from which the slowed one is "slower" up to K
    first_slower: int | None  # first n at which the slowed one is "slower" at all
    at_paired: str  # the slowed one's verdict at the n the paired verdict needed
    false_verdicts: int  # others called faster/slower, the slowed one faster, over every n
    false_at_k: str  # those false verdicts at K runs
    verdicts: str  # every benchmark's verdict at K runs


@dataclass
class Stopped:
    """perflab compare --harness with its own stop rule (no --runs): the runs it used."""

    harness: str
    metric: str
    runs: int
    slowed_verdict: str
    others: str  # the other benchmarks' verdicts
    why: str  # why it stopped, as the result says


def build(tmp: Path) -> dict[str, tuple[Path, Path]]:
    go = PROGRAMS / "gobench"
    out = {}
    if shutil.which("go"):
        for name, tags in (("old.test", []), ("new.test", ["-tags", "slow"])):
            subprocess.run(["go", "test", "-c", *tags, "-o", str(tmp / name), "."], cwd=go,
                           check=True, env={**os.environ, "GOTOOLCHAIN": "local",
                                                    "GOFLAGS": "-mod=mod", "GOPROXY": "off"})
        out["gobench"] = (tmp / "old.test", tmp / "new.test")
    if shutil.which("g++") and Path("/usr/include/benchmark/benchmark.h").exists():
        for name, define in (("gb_old", "0"), ("gb_new", "1")):
            subprocess.run(["g++", "-O2", f"-DPERFLAB_SLOW={define}", "-o", str(tmp / name),
                            str(PROGRAMS / "gbench_demo.cc"), "-lbenchmark", "-lpthread"],
                           check=True)
        out["gbench"] = (tmp / "gb_old", tmp / "gb_new")
    return out


def interleaved(harness: str, old: Path, new: Path, k: int, tmp: Path) -> ResultSet:
    db = tmp / "perflab.db"
    args = CASES[harness][2]
    subprocess.run([sys.executable, "-m", "perflab", "compare", "--db", str(db), "--harness",
                    harness, "--runs", str(k), "-n", "old", "-n", "new", str(old), str(new),
                    "--", *args], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    store = Store(db)
    return store.load(max(r["id"] for r in store.list_results(None)))


def apart(harness: str, old: Path, new: Path, k: int, tmp: Path) -> ResultSet:
    """Each build's K runs in one process, read by the importer, in the interleaved result's
    shape (configurations old and new, metrics "BENCH METRIC"), not interleaved."""
    args, flag = CASES[harness][2], CASES[harness][3]
    rs = ResultSet(kind="compare", settings=Settings(interleaved=False))
    for name, prog in (("old", old), ("new", new)):
        path = tmp / f"{harness}-{name}.out"
        if harness == "gobench":
            text = subprocess.run([str(prog), "-test.run=^$", "-test.bench=.", *args,
                                   f"{flag}={k}"], check=True, capture_output=True,
                                  text=True).stdout
            path.write_text(text)
            imported = gobench.read(path, None)
        else:
            subprocess.run([str(prog), *args, f"{flag}={k}", f"--benchmark_out={path}",
                            "--benchmark_out_format=json"], check=True, capture_output=True)
            imported = gbench.read(path, None)
        cfg = Configuration(name=name, command=[str(prog)], cell="{}", is_baseline=name == "old")
        for i in range(k):
            values = {f"{c.name} {m}": c.runs[i].values[m] for c in imported.configurations
                      for m in c.runs[i].values if i < len(c.runs)}
            cfg.runs.append(Run(seq=i, values=values))
        rs.configurations.append(cfg)
        for c in imported.configurations:
            for m, info in imported.metrics.items():
                rs.metrics.setdefault(f"{c.name} {m}", info)
    return rs


def first_n(rs: ResultSet, n: int) -> ResultSet:
    cut = copy.deepcopy(rs)
    for c in cut.configurations:
        c.runs = [r for r in c.runs if not r.warmup][:n]
    return cut


def base_name(metric: str) -> str:
    """"Sum-2 ns_per_op" -> "Sum" (the benchmark, without Go's -GOMAXPROCS suffix)."""
    name = metric.split(" ")[0]
    return name.rsplit("-", 1)[0] if name.rsplit("-", 1)[-1].isdigit() else name


def unpaired(rs: ResultSet) -> ResultSet:
    """The same runs, judged as if measured apart (no pairing by round)."""
    cut = copy.deepcopy(rs)
    cut.settings.interleaved = False
    return cut


def verdicts_by_n(rs: ResultSet, primary: str, k: int) -> dict[int, list]:
    """Every benchmark's comparison of ``primary`` on the first n runs, n = 6..K."""
    rs = copy.copy(rs)
    rs.settings = copy.deepcopy(rs.settings)
    rs.settings.primary_metric = primary
    fam = [m for m in rs.metrics if in_family(m, primary)]
    return {n: compare_result(first_n(rs, n), fam, plan=Plan(looks=1)) for n in range(6, k + 1)}


def summarise(harness: str, metric: str, way: str, by_n: dict[int, list], k: int,
              paired_n: int | None) -> Row:
    slowed = CASES[harness][0]
    needed: int | None = None
    first: int | None = None
    false = 0
    for n, comps in by_n.items():
        hit = next(c for c in comps if base_name(c.metric) == slowed)
        false += sum(c.verdict in ("faster", "slower") for c in comps if c is not hit)
        false += hit.verdict == "faster"  # the slowed one the wrong way
        if hit.verdict == "slower":
            needed = n if needed is None else needed
            first = n if first is None else first
        else:
            needed = None
    last = by_n[k]
    hit = next(c for c in last if base_name(c.metric) == slowed)
    change = (f"{(hit.ratio - 1) * 100:+.1f}% [{(hit.ci_low - 1) * 100:+.1f}, "
              f"{(hit.ci_high - 1) * 100:+.1f}]")
    at = "-" if paired_n is None else next(
        c.verdict for c in by_n[paired_n] if base_name(c.metric) == slowed)
    wrong = ", ".join(f"{base_name(c.metric)} {c.verdict}" for c in last
                      if c.verdict == "faster" or (c is not hit and c.verdict == "slower"))
    verdicts = ", ".join(f"{base_name(c.metric)} {c.verdict}" for c in last)
    return Row(harness, metric, way, k, slowed, change, needed, first, at, false, wrong or "none",
               verdicts)


def judge(harness: str, metric: str, inter: ResultSet, apart_rs: ResultSet,
          k: int) -> list[Row]:
    """The interleaved runs judged paired and unpaired, and the runs measured apart."""
    paired = summarise(harness, metric, "interleaved, paired",
                       verdicts_by_n(inter, metric, k), k, None)
    n = paired.runs_needed
    paired.at_paired = "slower" if n else "-"
    return [paired,
            summarise(harness, metric, "interleaved, unpaired (same runs)",
                      verdicts_by_n(unpaired(inter), metric, k), k, n),
            summarise(harness, metric, "apart, unpaired", verdicts_by_n(apart_rs, metric, k),
                      k, n)]


def stop_rule(harness: str, metric: str, old: Path, new: Path, k: int, tmp: Path) -> Stopped:
    """perflab compare --harness as a user runs it: its own stop rule, at most K runs."""
    db = tmp / "stopped.db"
    subprocess.run([sys.executable, "-m", "perflab", "compare", "--db", str(db), "--harness",
                    harness, "--metric", metric, "--max-runs", str(k), "--budget", "600",
                    "-n", "old", "-n",
                    "new", str(old), str(new), "--", *CASES[harness][2]], check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    store = Store(db)
    rs = store.load(max(r["id"] for r in store.list_results(None)))
    rs.settings.primary_metric = metric
    comps = compare_result(rs, [m for m in rs.metrics if in_family(m, metric)])
    hit = next(c for c in comps if base_name(c.metric) == CASES[harness][0])
    others = ", ".join(f"{base_name(c.metric)} {c.verdict}" for c in comps if c is not hit)
    runs = min(len(c.measured_runs()) for c in rs.configurations)
    why = rs.settings.stop.reason if rs.settings.stop else ""
    return Stopped(harness, metric, runs, hit.verdict, others, why)


def report(rows: list[Row], stopped: list[Stopped], k: int, load_before: list[float]) -> None:
    t = Table.of(f"one benchmark 5% slower, {k} runs each way (load {load_before} at start)",
                 [Column(h, "left") for h in ("harness", "runs judged", "slowed: change at K",
                                               "slower from n", "at paired n",
                                               "false claims (n=6..K)", "false at K")])
    for r in rows:
        t.add_row(f"{r.harness} {r.metric}", r.way, r.change,
                  str(r.runs_needed) if r.runs_needed else
                  f"never in {r.runs}" + (f" (once at {r.first_slower})" if r.first_slower
                                          else ""),
                  r.at_paired, str(r.false_verdicts), r.false_at_k)
    out = stdout_console()
    out.width = max(out.width, 150)  # make bench's log: one line a row
    t.print(out)
    for s in stopped:
        out.print(f"{s.harness} {s.metric}, perflab's stop rule (at most {k} runs): {s.runs} "
                  f"runs, slowed {s.slowed_verdict}; others {s.others} ({s.why})",
                  highlight=False, soft_wrap=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    rows: list[Row] = []
    stopped: list[Stopped] = []
    load_before = load()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for harness, (old, new) in build(tmp).items():
            inter = interleaved(harness, old, new, a.runs, tmp)
            sep = apart(harness, old, new, a.runs, tmp)
            for metric in CASES[harness][1]:
                rows += judge(harness, metric, inter, sep, a.runs)
                stopped.append(stop_rule(harness, metric, old, new, a.runs, tmp))
    report(rows, stopped, a.runs, load_before)
    save_figures({"rows": [asdict(r) for r in rows], "stop_rule": [asdict(s) for s in stopped],
                  "load_at_start": load_before, "load_at_end": load(),
                  "seconds": round(time.time() - t0, 1),
                  "date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv)},
                 "harness-interleaved", a.out)


if __name__ == "__main__":
    main()
