"""A harness run interleaved (`compare --harness`): a run's output read by the importers' own
parse (collectors/harness.py), per-benchmark metrics judged as one family, and real builds of
the Go package and the Google Benchmark program, one benchmark slowed by about 5%."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_helpers import run_cli
from perflab.collectors.harness import HarnessOutputError, figures, harness_argv
from perflab.errors import PerflabError
from perflab.judging import Plan
from perflab.metrics import MetricInfo, metric_family
from perflab.model import Configuration, ResultSet, Run
from perflab.session import harness_configs
from perflab.stats import EXPLORATORY, compare_result
from perflab.storage import Store

pytestmark = pytest.mark.unit

PROGRAMS = Path(__file__).parents[1] / "programs"
GO_OUT = """goos: linux
goarch: amd64
pkg: perflab.test/gobench
BenchmarkSum-2      	  124933	       183.2 ns/op
BenchmarkSum-2      	  124933	       185.2 ns/op
BenchmarkConcat-2   	  166365	       589.0 ns/op	 108.66 MB/s
BenchmarkConcat-2   	  166365	       591.0 ns/op	 108.00 MB/s
PASS
"""


def test_a_go_run_becomes_one_metric_per_benchmark_and_unit() -> None:
    values, infos = figures("gobench", GO_OUT)
    # -test.count 2: one figure a run, the mean of its lines
    assert values == {"Sum-2 ns_per_op": 184.2, "Concat-2 ns_per_op": 590.0,
                      "Concat-2 mb_per_s": 108.33}
    assert infos["Concat-2 mb_per_s"].direction == "higher"
    assert infos["Sum-2 ns_per_op"].unit == "ns" and infos["Sum-2 ns_per_op"].direction == "lower"
    assert {metric_family(m) for m in values} == {"ns_per_op", "mb_per_s"}


def test_a_gbench_run_reads_iteration_rows_not_aggregates() -> None:
    row = {"name": "BM_sum/64", "run_name": "BM_sum/64", "run_type": "iteration",
           "real_time": 2.0, "cpu_time": 1.5, "time_unit": "us", "items_per_second": 10.0}
    doc = {"context": {}, "benchmarks": [row, {**row, "real_time": 4.0},
                                         {**row, "run_type": "aggregate",
                                          "aggregate_name": "mean", "real_time": 99.0}]}
    values, infos = figures("gbench", "warning first\n" + json.dumps(doc))
    assert values == {"BM_sum/64 ns_per_op": 3000.0, "BM_sum/64 cpu_ns_per_op": 1500.0,
                      "BM_sum/64 items_per_second": 10.0}
    assert infos["BM_sum/64 items_per_second"].direction == "higher"


@pytest.mark.parametrize("harness,out,said", [
    ("gobench", "PASS\n", "holds no benchmark result"),
    ("gobench", "BenchmarkSum-2 10 x ns/op\n", "'x' for ns/op, not a number"),
    ("gbench", "{\"benchmarks\": [{\"name\": \"a\", \"time_unit\": \"h\"}]}",
     "time_unit 'h'"),
    ("gbench", "no json", "has no 'benchmarks' list"),
])
def test_output_that_cannot_be_read_is_one_line(harness: str, out: str, said: str) -> None:
    with pytest.raises(HarnessOutputError, match=said):
        figures(harness, out)


def test_builds_and_harness_arguments_are_told_apart() -> None:
    configs, primary, _ = harness_configs("gobench", ["./a.test", "./b.test", "-test.benchtime",
                                                      "20ms"], None, None, False)
    assert [c.name for c in configs] == ["./a.test", "./b.test"] and primary == "ns_per_op"
    assert configs[0].command == ["./a.test", "-test.run=^$", "-test.bench=.",
                                  "-test.benchtime", "20ms"]
    assert configs[0].is_baseline and {c.cell for c in configs} == {"{}"}
    assert harness_argv("gbench", "./x", ["--benchmark_filter=a"]) == [
        "./x", "--benchmark_filter=a", "--benchmark_format=json"]
    with pytest.raises(PerflabError, match="two or more builds"):
        harness_configs("gobench", ["./a.test", "-test.bench", "."], None, None, False)
    with pytest.raises(PerflabError, match="not a harness"):
        harness_configs("jmh", ["a", "b"], None, None, False)
    with pytest.raises(PerflabError, match="--benchmark_format"):
        harness_configs("gbench", ["a", "b", "--benchmark_format=console"], None, None, False)


def _result(ratios: dict[str, float], n: int = 20) -> ResultSet:
    """Two interleaved configurations with per-benchmark metrics, each ``ratio`` apart (20
    runs: fewer cannot rule out drift)."""
    rs = ResultSet(kind="compare", settings={"interleaved": True, "primary_metric": "ns_per_op"})
    for name in ratios:
        rs.metrics[f"{name} ns_per_op"] = MetricInfo(f"{name} ns_per_op", "ns", "test")
        rs.metrics[f"{name} mb_per_s"] = MetricInfo(f"{name} mb_per_s", "MB/s", "test",
                                                   direction="higher")
    for i, (cname, f) in enumerate((("old", None), ("new", 1))):
        cfg = Configuration(cname, [cname], cell="{}", is_baseline=i == 0)
        for k in range(n):
            wobble = 1 + 0.002 * ((k * 7) % 5 - 2) * (1 if f else -1)
            cfg.runs.append(Run(seq=k, values={
                **{f"{b} ns_per_op": 100 * wobble * (r if f else 1) for b, r in ratios.items()},
                **{f"{b} mb_per_s": 50 * wobble for b in ratios}}))
        rs.configurations.append(cfg)
    return rs


def test_every_benchmarks_primary_metric_is_the_guarded_family() -> None:
    ratios = {f"B{i}": 1.0 for i in range(5)} | {"Slow": 1.05}
    comps = compare_result(_result(ratios), plan=Plan(looks=1))
    prim = [c for c in comps if c.family == "ns_per_op"]
    assert len(prim) == 6 and all(not c.exploratory and c.correction == "holm" for c in prim)
    others = [c for c in comps if metric_family(c.metric) == "mb_per_s"]
    # every other family's metrics: one exploratory family
    assert len(others) == 6 and all(c.exploratory and c.correction == "bh"
                                    and c.family == EXPLORATORY for c in others)
    verdicts = {c.metric: c.verdict for c in prim}
    assert verdicts.pop("Slow ns_per_op") == "slower"
    assert set(verdicts.values()) <= {"equivalent", "inconclusive"}


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists()
                                else None)
    if go is None:
        pytest.skip("Go is not installed")
    return go


def _verdicts(db: Path) -> dict[str, str]:
    from perflab.stats import compare_result as judge

    store = Store(db)
    rs = store.load(max(r["id"] for r in store.list_results(None)))
    comps = judge(rs)
    return {c.metric: c.verdict for c in comps if c.family == rs.settings.primary_metric}


def _check(verdicts: dict[str, str], slowed: str, benchmarks: int) -> None:
    """Every benchmark judged; the slowed one never called faster; no other called faster or
    slower (what holds on a busy machine: no timing is asserted)."""
    assert len(verdicts) == benchmarks, verdicts
    hit = [m for m in verdicts if m.split(" ")[0].split("-")[0] == slowed]
    assert len(hit) == 1, verdicts
    assert verdicts.pop(hit[0]) in ("slower", "inconclusive")
    assert set(verdicts.values()) <= {"equivalent", "inconclusive"}, verdicts


@pytest.mark.measure  # verdicts of real runs: one at a time (tests/tiers.py)
def test_two_go_builds_interleaved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    go = _go()
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    for name, tags in (("old.test", []), ("new.test", ["-tags", "slow"])):
        subprocess.run([go, "test", "-c", *tags, "-o", str(tmp_path / name), "."],
                       cwd=PROGRAMS / "gobench", env=env, check=True)
    db = tmp_path / "r.db"
    code, out, err = run_cli(["compare", "--db", str(db), "--harness", "gobench", "--runs", "6",
                              "--warmup", "0", str(tmp_path / "old.test"),
                              str(tmp_path / "new.test"), "--", "-test.benchtime", "2000x"],
                             capsys)
    assert code == 0, err
    assert "ns_per_op of 3 benchmarks (guarded)" in " ".join(out.split())
    _check(_verdicts(db), "Sum", 3)


@pytest.mark.measure  # verdicts of real runs: one at a time (tests/tiers.py)
def test_two_gbench_builds_interleaved(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    cxx = shutil.which("g++")
    if not cxx or not Path("/usr/include/benchmark/benchmark.h").exists():
        pytest.skip("no g++ or no libbenchmark-dev (scripts/install-system-deps.sh installs them)")
    for name, slow in (("old", "0"), ("new", "1")):
        subprocess.run([cxx, "-O2", f"-DPERFLAB_SLOW={slow}", "-o", str(tmp_path / name),
                        str(PROGRAMS / "gbench_demo.cc"), "-lbenchmark", "-lpthread"],
                       check=True)
    db = tmp_path / "r.db"
    code, out, err = run_cli(["compare", "--db", str(db), "--harness", "gbench", "--runs", "6",
                              "--warmup", "0", str(tmp_path / "old"), str(tmp_path / "new"),
                              "--", "--benchmark_min_time=0.005"], capsys)
    assert code == 0, err
    _check(_verdicts(db), "BM_sum/512", 4)
