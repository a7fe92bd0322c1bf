"""Words that would overclaim on a small machine: more threads than CPUs, wall-time scaling on
busy CPUs, configurations told apart only by their environment, valgrind counts of a workload
whose time is in the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import matrix
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
