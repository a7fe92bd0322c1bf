"""A harness run interleaved against the same harness measured apart.

Two builds of each harness differ in one benchmark, slowed by about 5%: the Go package
tests/programs/gobench (built with -tags slow: BenchmarkSum adds 269 integers, not 256) and
tests/programs/gbench_demo.cc (built with -DPERFLAB_SLOW=1: BM_sum/512 sums 537).

- interleaved: `perflab compare --harness H OLD NEW --runs K -- ARGS` (the real CLI), one
  result of K rounds, each round one run of each build in random order;
- apart: OLD run K times in one process, then NEW (`-test.count K`, `--benchmark_repetitions=K`),
  read by perflab's importers (gobench, gbench), as benchstat and compare.py users measure.

Both are judged by perflab's own compare_result (one family per metric across the benchmarks,
Holm for the primary family), the interleaved runs paired by round, the apart ones unpaired,
on their first n = 6..K runs: the runs needed is the first n from which the slowed benchmark is
called slower at every n up to K; a false verdict is any other benchmark called faster or
slower at any n.

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
from perflab.model import Configuration, ResultSet, Run, Settings, in_family  # noqa: E402
from perflab.stats import Plan, compare_result  # noqa: E402
from perflab.storage import Store  # noqa: E402
from perflab.table import Column, Table  # noqa: E402

PROGRAMS = ROOT / "tests" / "programs"
# harness -> (slowed benchmark, its primary metric, harness args, apart flag)
CASES = {
    "gobench": ("Sum", "ns_per_op", ["-test.benchtime", "20ms"], "-test.count"),
    "gbench": ("BM_sum/512", "cpu_ns_per_op", ["--benchmark_min_time=0.02"],
               "--benchmark_repetitions"),
}


@dataclass
class Row:
    harness: str
    way: str  # interleaved (paired) | apart (unpaired)
    runs: int
    slowed: str
    change: str  # the slowed benchmark's change at K runs
    runs_needed: int | None  # first n from which the slowed one is "slower" up to K
    false_verdicts: int  # other benchmarks called faster/slower, over every n
    verdicts: str  # every benchmark's verdict at K runs


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


def judge(rs: ResultSet, harness: str, k: int) -> tuple[str, int | None, int, str]:
    slowed, primary, _, _ = CASES[harness]
    rs.settings.primary_metric = primary
    fam = [m for m in rs.metrics if in_family(m, primary)]
    plan = Plan(looks=1)
    needed: int | None = None
    false = 0
    last: list = []
    for n in range(6, k + 1):
        comps = compare_result(first_n(rs, n), fam, plan=plan)
        hit = next(c for c in comps if c.metric.split(" ")[0].split("-")[0] == slowed)
        others = [c for c in comps if c is not hit]
        false += sum(c.verdict in ("faster", "slower") for c in others)
        if hit.verdict == "slower":
            needed = n if needed is None else needed
        else:
            needed = None
        last = comps
    hit = next(c for c in last if c.metric.split(" ")[0].split("-")[0] == slowed)
    change = f"{(hit.ratio - 1) * 100:+.1f}% [{(hit.ci_low - 1) * 100:+.1f}, " \
             f"{(hit.ci_high - 1) * 100:+.1f}]"
    verdicts = ", ".join(f"{c.metric.split(' ')[0]} {c.verdict}" for c in last)
    return change, needed, false, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    rows: list[Row] = []
    load_before = load()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for harness, (old, new) in build(tmp).items():
            for way, rs in (("interleaved", interleaved(harness, old, new, a.runs, tmp)),
                            ("apart", apart(harness, old, new, a.runs, tmp))):
                change, needed, false, verdicts = judge(rs, harness, a.runs)
                rows.append(Row(harness, way, a.runs, CASES[harness][0], change, needed, false,
                                verdicts))
    t = Table.of(f"one benchmark 5% slower, {a.runs} runs each way (load {load_before} at start)",
                 [Column(h, "left") for h in ("harness", "runs", "slowed: change at K [CI]",
                                               "runs needed", "false verdicts",
                                               "verdicts at K")])
    for r in rows:
        t.add_row(r.harness, f"{r.way} ({'paired' if r.way == 'interleaved' else 'unpaired'})",
                  r.change, str(r.runs_needed) if r.runs_needed else f"> {r.runs}",
                  str(r.false_verdicts), r.verdicts)
    t.print(stdout_console())
    save_figures({"rows": [asdict(r) for r in rows], "load_at_start": load_before,
                  "load_at_end": load(), "seconds": round(time.time() - t0, 1),
                  "date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv)},
                 "harness-interleaved", a.out)


if __name__ == "__main__":
    main()
