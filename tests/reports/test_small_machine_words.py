"""Words that would overclaim on a small machine: more threads than CPUs, wall-time scaling on
busy CPUs, configurations told apart only by their environment, valgrind counts of a workload
whose time is in the kernel."""

from __future__ import annotations

import html
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perflab import notes as said
from perflab.judging import Plan
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import matrix
from perflab.reports.analysis import Analysis
from perflab.reports.plots import plot_scaling
from perflab.reports.report import build_report
from perflab.reports.study import axis_answers
from perflab.reports.warnings import (
    WarningKind,
    result_warnings,
    suite_warnings,
    threads_over_cpus,
    warning_lines,
)
from perflab.stats import axis_comparisons, cpu_share_caveat
from perflab.suites.execute import describe_plan
from perflab.suites.plan import make_plan
from perflab.suites.spec import load_suite

pytestmark = pytest.mark.unit

KNOBS = """\
[suite]
name = "knobs"
baseline = "tiered"

[measure]
runs = 6
warmup = 0

[configurations.tiered]
command = "echo same"
env = { DOTNET_TieredCompilation = "1", LANG = "C" }

[configurations.untiered]
command = "echo same"
env = { DOTNET_TieredCompilation = "0", LANG = "C" }
"""


def test_a_dry_run_shows_the_environment_that_tells_configurations_apart(
        tmp_path: Path) -> None:
    path = tmp_path / "knobs.toml"
    path.write_text(KNOBS)
    lines = describe_plan(make_plan(load_suite(path)))
    tiered = next(line for line in lines if line.strip().startswith("tiered"))
    untiered = next(line for line in lines if line.strip().startswith("untiered"))
    assert tiered.endswith("tiered (baseline): DOTNET_TieredCompilation=1 echo same")
    assert untiered.endswith("untiered: DOTNET_TieredCompilation=0 echo same")
    assert "LANG" not in tiered + untiered  # the same in both: not a difference


def test_configuration_rows_show_environment_differences_and_nothing_else() -> None:
    rs = ResultSet(kind="suite", metrics={"wall_time": BUILTIN_METRICS["wall_time"]})
    for name, knob in (("tiered", "1"), ("untiered", "0")):
        for threads in (1, 2):
            cfg = Configuration(name=name, command=["dotnet", "t.dll"], is_baseline=knob == "1",
                                params={"threads": threads},
                                env={"DOTNET_TieredCompilation": knob, "HOME": "/h"})
            cfg.runs = [Run(seq=i, values={"wall_time": 0.01}) for i in range(6)]
            rs.configurations.append(cfg)
    rows = matrix.configuration_rows(rs)
    assert [r["command"] for r in rows] == [
        "DOTNET_TieredCompilation=1 dotnet t.dll  (first of 2 cells)",
        "DOTNET_TieredCompilation=0 dotnet t.dll  (first of 2 cells)"]
    for cfg in rs.configurations:
        cfg.env = {"HOME": "/h"}
    assert [r["command"] for r in matrix.configuration_rows(rs)] == [
        "dotnet t.dll  (first of 2 cells)"] * 2


def threads_result(threads: tuple[int, ...] = (1, 2, 4), load: float | None = None,
                   ) -> ResultSet:
    """Two configurations over depth x threads on a 2-CPU machine: per-thread wall time per
    op grows with the threads (they take turns on the CPUs), CPU time per op does not."""
    rng = np.random.default_rng(3)
    rs = ResultSet(kind="suite", label="timers", created_at=1_700_000_000.0, status="complete",
                   fingerprint={"hostname": "small", "cpu_count": 2},
                   metrics={"ns_per_op": MetricInfo("ns_per_op", "ns", "workload"),
                            "cpu_ns_per_op": MetricInfo("cpu_ns_per_op", "ns", "workload")},
                   settings={"interleaved": True, "suite": {
                       "name": "timers", "baseline": "global", "threshold": 0.05,
                       "correction": "holm", "metrics": ["ns_per_op", "cpu_ns_per_op"],
                       "primary": "cpu_ns_per_op", "report": {"x": "depth"},
                       "done": [], "superseded": []}})
    seq = 0
    for depth in (0, 10):
        for t in threads:
            for name in ("global", "partitioned"):
                cfg = Configuration(name=name, command=["true"], benchmark="timers/c",
                                    params={"depth": depth, "threads": t},
                                    is_baseline=name == "global")
                for _ in range(8):
                    cpu = 100.0 * (1 + rng.uniform(-0.01, 0.01))
                    cfg.runs.append(Run(seq=seq, load1=load, values={
                        "cpu_ns_per_op": cpu, "ns_per_op": cpu * max(1.0, t / 2)}))
                    seq += 1
                rs.configurations.append(cfg)
    return rs


def test_more_threads_than_cpus_is_said_with_the_counts_everywhere(tmp_path: Path) -> None:
    rs = threads_result()
    a = Analysis.judge(rs, ["cpu_ns_per_op"], Plan.of(rs))
    warns = suite_warnings(a, "cpu_ns_per_op")
    cpus = [w.text for w in warns if w.kind == WarningKind.CPUS]
    assert cpus == [str(said.more_threads_than_cpus(4, 2, 2, 6))]
    assert "up to 4 threads on a machine with 2 CPUs (2 of 6 cells" in cpus[0]
    lines = warning_lines(a, "cpu_ns_per_op", warns, "index.html#warnings")
    assert any(line.startswith("cpus: 1 warning: more threads than CPUs") for line in lines)
    assert cpus[0] in result_warnings(a)  # stat/compare, the Markdown and JSON exports
    rep = build_report(rs, tmp_path / "r", plots=False)
    assert f"warning: {cpus[0]}" in rep.markdown
    assert html.escape(cpus[0], quote=True) in rep.html.read_text()
    # Up to the machine's CPUs, nothing is said.
    assert threads_over_cpus(threads_result((1, 2))) == []


def test_a_dry_run_says_when_cells_ask_for_more_threads_than_cpus(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    path = tmp_path / "t.toml"
    path.write_text(KNOBS + f"\n[matrix]\nthreads = [1, {cpus + 1}]\n")
    lines = describe_plan(make_plan(load_suite(path)))
    assert f"  note: {said.more_threads_than_cpus(cpus + 1, cpus, 1, 2)}" in lines


def test_wall_time_over_threads_on_too_few_cpus_is_no_regression() -> None:
    rs = threads_result()
    plan = Plan.of(rs)
    wall = axis_comparisons(rs, "ns_per_op", "threads", 4, 1, plan=plan)
    assert wall and all(c.verdict == "slower" for c in wall)
    assert all(c.label.startswith(f"slower ({said.CPU_SHARE_LABEL}")
               and "regression" not in c.label and not c.regression for c in wall)
    caveat = cpu_share_caveat(rs, "ns_per_op", "threads", 4, 1)
    assert caveat is not None and "at 4 threads on 2 CPUs it measures the share" in caveat
    # CPU time is what the code costs: judged as ever, no caveat.
    cpu = axis_comparisons(rs, "cpu_ns_per_op", "threads", 4, 1, plan=plan)
    assert all(c.verdict != "slower" for c in cpu)
    assert cpu_share_caveat(rs, "cpu_ns_per_op", "threads", 4, 1) is None
    a = Analysis.judge(rs, ["ns_per_op"], plan)
    answers = axis_answers(a, "ns_per_op")
    assert any(line.startswith("threads=4 / threads=1") and line.endswith(f"; {caveat}")
               for line in answers)


def test_wall_time_scaling_on_busy_cpus_names_what_it_measures(tmp_path: Path) -> None:
    quiet, busy = threads_result((1, 2)), threads_result((1, 2), load=6.0)
    assert cpu_share_caveat(quiet, "ns_per_op", "threads", 2, 1) is None
    caveat = cpu_share_caveat(busy, "ns_per_op", "threads", 2, 1)
    assert caveat is not None and "2 threads on 2 busy CPUs" in caveat
    assert "beside other work" in caveat
    a = Analysis.judge(busy, ["ns_per_op"], Plan.of(busy))
    plot = plot_scaling(a, "ns_per_op", "depth", tmp_path)
    assert plot is not None and plot.caption.endswith(textwrap.fill(str(caveat), 110))
    rep = build_report(busy, tmp_path / "r", metrics=["ns_per_op"], plots=False)
    assert str(caveat) in rep.markdown  # the axis table's title
