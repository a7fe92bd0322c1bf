"""Calibrated suites: iterations resolved once per configuration and cell from a target timed
region, kept fixed across that cell's runs; and the plan's time estimate model."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store
from perflab.suites.calibrate import clamp, next_count, region_seconds, round_up
from perflab.suites.execute import describe_plan, history_per_run, run_plan
from perflab.suites.plan import (
    NATIVE_START_S,
    PERFLAB_PER_CELL_S,
    PERFLAB_PER_RUN_S,
    PERFLAB_START_S,
    RUNTIME_START_S,
    history_key,
    make_plan,
    probe_key,
)
from perflab.suites.spec import load_suite
from workload_helpers import built_workload

pytestmark = pytest.mark.unit


def test_scaling_from_a_probe() -> None:
    # 4,000 throws took 4 ms: 100 ms needs 100,000.
    assert next_count(4000, 0.004, 0.1) == (100_000, True)
    # 1,000 iterations in 0.2 ms is too short to scale from: grow (at most x200), probe again.
    n, final = next_count(1000, 0.0002, 0.1)
    assert not final and n == 200_000
    # A probe already longer than the target scales down.
    assert next_count(200_000, 0.4, 0.1) == (50_000, True)
    assert round_up(12_345) == 13_000 and round_up(99.2) == 100 and round_up(0.3) == 1


def test_count_respects_the_parameter_limits() -> None:
    class P:
        min, max = 1, 1_000_000

    assert clamp(5_000_000, P()) == 1_000_000
    assert clamp(0, P()) == 1


def test_region_from_the_workload_ns_per_op() -> None:
    assert region_seconds({"ns_per_op": 1000.0, "wall_time": 0.5}, 4000) == pytest.approx(0.004)
    assert region_seconds({"wall_time": 0.5}, 4000) == 0.5
    assert region_seconds({}, 4000) is None


SUITE = """\
[suite]
name = "cal"
baseline = "d0"
primary = "ns_per_op"
metrics = ["ns_per_op"]

[measure]
runs = 3
warmup = 0
calibrate = 0.02
ON

[matrix]
threads = [1]

[configurations.d0]
workload = "eh/c"
params = { depth = 0, iterations = 200 }

[configurations.d10]
workload = "eh/c"
params = { depth = 10, iterations = 200 }
"""


def _suite(tmp_path: Path, on: str = "") -> Path:
    p = tmp_path / "cal.toml"
    p.write_text(SUITE.replace("ON", on))
    return p


@pytest.mark.measure
def test_counts_are_resolved_per_configuration_and_fixed_for_the_cell(tmp_path: Path) -> None:
    built_workload("eh/c")
    plan = make_plan(load_suite(_suite(tmp_path)))
    rs = run_plan(plan, Store(tmp_path / "r.sqlite"), progress=False).rs
    assert rs.status == "complete"
    counts = rs.settings.suite.calibrated[plan.cells[0].key]
    assert set(counts) == {"d0", "d10"}
    # The probe's 200 iterations are far below 20 ms: calibration raised them.
    assert all(n > 200 for n in counts.values())
    for cfg in rs.configurations:
        assert f"--iterations={counts[cfg.name]}" in cfg.command
        # Every run of the cell did the same count: one fixed command, not a per-run choice.
        assert {r.values["iterations"] for r in cfg.measured_runs()} == {counts[cfg.name]}
        assert len(cfg.measured_runs()) == 3  # the probes are not stored as runs
    # Each count is the scaling rule's (two significant figures), from its own probe; which of
    # the two is larger depends on this machine's timing (a loaded machine can slow either
    # probe), so that is left to the pure tests of next_count above.
    assert all(round_up(n) == n for n in counts.values())
    probes = rs.settings.suite.calibration_s[plan.cells[0].key]
    assert set(probes) == {"d0", "d10"} and all(v > 0 for v in probes.values())


@pytest.mark.measure
def test_calibrate_on_baseline_shares_one_count(tmp_path: Path) -> None:
    built_workload("eh/c")
    plan = make_plan(load_suite(_suite(tmp_path, 'calibrate_on = "baseline"')))
    rs = run_plan(plan, Store(tmp_path / "r.sqlite"), progress=False).rs
    counts = rs.settings.suite.calibrated[plan.cells[0].key]
    assert counts["d0"] == counts["d10"]
    iters = {r.values["iterations"] for c in rs.configurations for r in c.measured_runs()}
    assert iters == {counts["d0"]}


@pytest.mark.parametrize("line, problem", [
    ("calibrate = -1", "must be a positive, finite number"),
    ('calibrate_on = "all"', "calibrate_on = 'all' is unknown"),
])
def test_bad_calibration_settings(tmp_path: Path, line: str, problem: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(SUITE.replace("calibrate = 0.02\nON", line))
    with pytest.raises(PerflabError) as e:
        load_suite(p)
    assert problem in str(e.value)


EST_SUITE = """\
[suite]
name = "est"
baseline = "c"

[measure]
runs = 8
warmup = 1
calibrate = 0.1

[matrix]
depth = [0, 10]

[configurations.c]
workload = "eh/c"

[configurations.java]
workload = "eh/java"

[configurations.cmd]
command = ["true", "{depth}"]
"""


def test_estimate_model_without_history(tmp_path: Path) -> None:
    p = tmp_path / "est.toml"
    p.write_text(EST_SUITE)
    plan = make_plan(load_suite(p))
    cell = plan.cells[0]
    by = {c.name: c for c in cell.configs}
    # A calibrated run: the target region plus the runtime's start-up; a plain command: the
    # suite's expected_run_s (default 1 s).
    assert plan.run_seconds(cell, by["c"]) == pytest.approx(0.1 + NATIVE_START_S)
    assert plan.run_seconds(cell, by["java"]) == pytest.approx(0.1 + RUNTIME_START_S["java"])
    assert plan.run_seconds(cell, by["cmd"]) == 1.0
    runs = 8 + 1
    per_cell = sum(runs * (plan.run_seconds(cell, c) + PERFLAB_PER_RUN_S) for c in cell.configs)
    probes = (2 * NATIVE_START_S + 0.1) + (2 * RUNTIME_START_S["java"] + 0.1)
    fixed = PERFLAB_START_S + 2 * PERFLAB_PER_CELL_S
    assert plan.estimate_seconds() == pytest.approx(fixed + 2 * (per_cell + probes))
    text = "\n".join(describe_plan(plan))
    assert "calibrated per cell to 100 ms" in text and "no earlier runs" in text


def test_estimate_uses_the_suites_earlier_run_of_each_cell(tmp_path: Path) -> None:
    p = tmp_path / "est.toml"
    p.write_text(EST_SUITE)
    plan = make_plan(load_suite(p))
    store = Store(tmp_path / "h.sqlite")
    rs = ResultSet(kind="suite", label="est",
                   settings={"suite": {"name": "est", "calibrate": 0.1, "superseded": []}})
    store.begin_result(rs)
    for cell in plan.cells:
        for pc in cell.configs:
            cfg = Configuration(name=pc.name, command=["x", "--iterations=123"],
                                params=dict(cell.params))
            store.add_configuration(rs.id, cfg)  # type: ignore[arg-type]
            for i in range(3):
                store.add_run(cfg.id, Run(seq=i, values={"wall_time": 0.25}))  # type: ignore
    hist = history_per_run(store, plan)
    assert all(hist[history_key(pc.name, c.key)] == 0.25 for c in plan.cells
               for pc in c.configs)
    per_cell = 3 * 9 * (0.25 + PERFLAB_PER_RUN_S)
    probes = (2 * NATIVE_START_S + 0.1) + (2 * RUNTIME_START_S["java"] + 0.1)
    fixed = PERFLAB_START_S + 2 * PERFLAB_PER_CELL_S
    assert plan.estimate_seconds(hist) == pytest.approx(fixed + 2 * (per_cell + probes))
    # The probes' own time, recorded by the earlier run, replaces the model's guess.
    hist[probe_key("java", plan.cells[0].key)] = 3.0
    assert plan.estimate_seconds(hist) == pytest.approx(
        fixed + 2 * (per_cell + probes) - (2 * RUNTIME_START_S["java"] + 0.1) + 3.0)
    assert "from earlier runs for 6 of 6" in "\n".join(describe_plan(plan, hist))
    # Another calibration target: those runs took another time, they are not used.
    plan.suite.measure["calibrate"] = 0.2
    assert history_key("c", plan.cells[0].key) not in history_per_run(store, plan)


@pytest.mark.system
def test_the_estimate_measures_each_calibrated_start_up_now(tmp_path: Path) -> None:
    from perflab.suites.estimate import measure_speed

    built_workload("eh/c")
    p = tmp_path / "est.toml"
    p.write_text(EST_SUITE.replace('[configurations.java]\nworkload = "eh/java"\n', ""))
    plan = make_plan(load_suite(p))
    speed = measure_speed(plan)
    # One launch per calibrated configuration (c), none for a plain command; its wall time is
    # what the estimate uses for c's start-up instead of the table's figure.
    assert set(speed.start_s) == {"c"} and speed.start_s["c"] > 0
    assert speed.slowdown >= 1.0
    c = plan.cells[0].configs[0]
    assert plan.run_seconds(plan.cells[0], c, speed=speed) == pytest.approx(
        0.1 + speed.start_s["c"])
    text = "\n".join(describe_plan(plan, {}, speed))
    assert "start-up measured now for 1 configuration;" in text
    assert "report (2 plots)" in text  # depth is the x axis: values and ratios, one metric


@pytest.mark.system
def test_a_dry_runs_estimate_runs_an_uncalibrated_workload_once_whole(tmp_path: Path) -> None:
    from perflab.suites.estimate import measure_speed

    built_workload("eh/c")
    p = tmp_path / "est.toml"
    p.write_text(EST_SUITE.replace("calibrate = 0.1", "expected_run_s = 500")
                 .replace('[configurations.java]\nworkload = "eh/java"\n', "")
                 .replace('[configurations.c]\nworkload = "eh/c"\n',
                          '[configurations.c]\nworkload = "eh/c"\nparams = { iterations = 10 }\n'))
    plan = make_plan(load_suite(p))
    # A real run's estimate launches nothing whole: c takes expected_run_s at the slowdown.
    assert measure_speed(plan).run_s == {}
    speed = measure_speed(plan, runs=True)
    # The dry run's: c run as planned, once in each of its two cells; never the command; no
    # start-up probe (nothing is calibrated), so nothing that a run would repeat.
    assert set(speed.run_s) == {"c"} and 0 < speed.run_s["c"] < 500
    assert speed.start_s == {} and speed.probe_s == 0.0
    cell = plan.cells[0]
    by = {c.name: c for c in cell.configs}
    assert plan.run_seconds(cell, by["c"], speed=speed) == speed.run_s["c"]
    assert plan.run_seconds(cell, by["cmd"], speed=speed) == pytest.approx(500 * speed.slowdown)
    assert "a whole run measured now for 1 configuration;" in "\n".join(
        describe_plan(plan, {}, speed))
