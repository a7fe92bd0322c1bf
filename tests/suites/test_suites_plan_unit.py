"""suites/plan.py directly: the matrix a plan expands to, its identity and its time estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.suites.plan import (
    NATIVE_START_S,
    PERFLAB_PER_CELL_S,
    PERFLAB_PER_RUN_S,
    PERFLAB_START_S,
    Speed,
    history_key,
    make_plan,
    runtime_start_s,
)
from perflab.suites.spec import parse_suite

pytestmark = pytest.mark.unit

SUITE = """\
[suite]
baseline = "a"
[measure]
runs = 4
warmup = 1
expected_run_s = 0.5
[matrix]
n = [1, 2, 3]
[configurations.a]
command = "echo {n}"
[configurations.b]
command = ["echo", "b{n}"]
"""


def _plan(text: str = SUITE):  # type: ignore[no-untyped-def]
    return make_plan(parse_suite(text, Path("s.toml")))


def test_cells_and_commands() -> None:
    plan = _plan()
    assert [c.params for c in plan.cells] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert plan.n_configs == 6
    first = plan.cells[0].configs
    assert [(p.name, p.argv, p.is_baseline) for p in first] == [
        ("a", ["echo", "1"], True), ("b", ["echo", "b1"], False)]
    assert plan.runs_per_config() == 4


def test_fingerprint_follows_the_commands() -> None:
    assert _plan().fingerprint() == _plan().fingerprint()
    assert _plan().fingerprint() != _plan(SUITE.replace("b{n}", "c{n}")).fingerprint()


def test_estimate_without_and_with_history() -> None:
    plan = _plan()
    per_run = 0.5 + PERFLAB_PER_RUN_S
    per_cell = PERFLAB_PER_CELL_S + 2 * (4 + 1) * per_run
    assert plan.estimate_seconds() == PERFLAB_START_S + 3 * per_cell
    # An earlier run of a in the first cell took 2 s: that figure wins for that pair only.
    hist = {history_key("a", plan.cells[0].key): 2.0}
    more = (4 + 1) * (2.0 - 0.5)
    assert abs(plan.estimate_seconds(hist) - (PERFLAB_START_S + 3 * per_cell + more)) < 1e-9


def test_budget_caps_each_cell() -> None:
    plan = _plan(SUITE.replace("warmup = 1", "warmup = 1\nbudget = 1.0"))
    assert plan.estimate_seconds() == PERFLAB_START_S + 3 * 1.0


def test_runtime_start() -> None:
    assert runtime_start_s("eh/java") > runtime_start_s("eh/c") == NATIVE_START_S


def test_the_time_left_follows_the_pace_of_the_groups_measured() -> None:
    from perflab.suites.execute import time_left

    # Three groups of 5 s each and a 3 s report: 18 s in the plan.
    assert time_left(2.0, 0.0, 0.0, 5.0, 18.0) == 16.0  # the plan's estimate, while it holds
    # The first group has run 15 s, three times its estimate: the rest at that pace, not 1 s.
    assert time_left(15.0, 0.0, 0.0, 5.0, 18.0) == pytest.approx(3 * 13.0)
    # One group took 10 s (twice its estimate): what is left (13 s planned) at twice the pace,
    # less what the group in flight has already run.
    assert time_left(12.0, 10.0, 5.0, 5.0, 13.0) == pytest.approx(2 * 13.0 - 2.0)
    # A faster machine than planned: the time left shrinks too.
    assert time_left(2.5, 2.5, 5.0, 5.0, 13.0) == pytest.approx(6.5)
    # The group in flight outlasts its estimate with a quarter of its runs made: not done.
    assert time_left(6.0, 0.0, 0.0, 5.0, 5.0, runs_done=0.25) == pytest.approx(6 / 5 * 5 * 0.75)
    assert time_left(6.0, 0.0, 0.0, 5.0, 5.0, runs_done=1.0) == 0.0


def test_a_slower_machine_now_scales_perflabs_own_costs_and_measured_start_ups_win() -> None:
    plan = _plan(SUITE.replace("expected_run_s = 0.5\n", "calibrate = 0.1\n").replace(
        "n = [1, 2, 3]", "depth = [0, 10]").replace('command = "echo {n}"', 'workload = "eh/java"')
        .replace("{n}", "{depth}"))
    slow = Speed(slowdown=2.0)
    assert plan.estimate_seconds(speed=slow) > plan.estimate_seconds()
    # A run launches the start-up probes again before its first cell: their time is in it.
    assert plan.estimate_seconds(speed=Speed(probe_s=3.0)) == pytest.approx(
        plan.estimate_seconds() + 3.0)
    cell = plan.cells[0]
    assert plan.start_seconds(cell.configs[0], slow) == 2 * runtime_start_s("eh/java")
    assert plan.start_seconds(cell.configs[0], Speed(start_s={"a": 0.7})) == 0.7
    assert plan.run_seconds(cell, cell.configs[0], speed=Speed(start_s={"a": 0.7})) == \
        pytest.approx(0.8)


def test_the_report_estimate_counts_the_plots_the_matrix_allows() -> None:
    text = SUITE.replace("n = [1, 2, 3]", 'n = [1, 2, 3]\nthreads = [1, 2]\nkind = ["x", "y"]')
    base = """[report]\nx = "n"\nmetrics = ["wall_time", "max_rss"]\n"""
    assert _plan(text + base).report_plots() == 2 * 3  # values, ratios, thread scaling
    kinds = base + 'kinds = { param = "kind", a = "x", b = "y" }\n'
    assert _plan(text + kinds).report_plots() == 2 * 4
    assert _plan(SUITE).report_plots() == 1 + 1  # x is n: values and ratios, one metric
    one = _plan(text + kinds)
    assert one.report_seconds(Speed(slowdown=3.0)) == pytest.approx(3 * one.report_seconds())


def test_start_ups_are_sampled_across_the_plan_reproducibly() -> None:
    from perflab.suites.estimate import sample_cells

    items = list(range(16))  # one configuration's cells, in plan order
    got = sample_cells(items, "seed", k=4)  # type: ignore[arg-type]
    assert got == sample_cells(items, "seed", k=4)  # type: ignore[arg-type]
    # One in each quarter of the plan, so the start-up's mean covers the whole matrix.
    assert [x // 4 for x in got] == [0, 1, 2, 3]  # type: ignore[operator]
    assert sample_cells(items[:3], "seed", k=4) == [0, 1, 2]  # type: ignore[arg-type]


def test_a_whole_run_measured_now_wins_and_expected_run_s_follows_the_slowdown() -> None:
    plan = _plan(SUITE.replace('command = "echo {n}"', 'workload = "eh/java"').replace(
        "n = [1, 2, 3]", "depth = [0, 10]").replace("{n}", "{depth}"))
    cell = plan.cells[0]
    a, b = cell.configs  # a: a workload, not calibrated; b: a command
    # Nothing measured: the suite's expected_run_s, stretched by the machine's slowdown now.
    assert plan.run_seconds(cell, a) == plan.run_seconds(cell, b) == 0.5
    assert plan.run_seconds(cell, b, speed=Speed(slowdown=3.0)) == pytest.approx(1.5)
    # A whole run of a measured now (start-up, JIT and work at this load) is a's figure as is.
    now = Speed(slowdown=3.0, run_s={"a": 2.2})
    assert plan.run_seconds(cell, a, speed=now) == 2.2
    assert plan.run_seconds(cell, b, speed=now) == pytest.approx(1.5)
    # The estimate is composed of them: no calibration probes, no start-up probes to repeat.
    runs = 4 + 1
    per_cell = (3.0 * PERFLAB_PER_CELL_S + runs * (2.2 + 3.0 * PERFLAB_PER_RUN_S)
                + runs * (1.5 + 3.0 * PERFLAB_PER_RUN_S))
    assert plan.estimate_seconds(speed=now) == pytest.approx(
        3.0 * PERFLAB_START_S + 2 * per_cell)
    # An earlier run in the store still wins over what was measured now.
    hist = {history_key("a", cell.key): 0.9}
    assert plan.run_seconds(cell, a, hist, now) == 0.9


def test_what_the_estimate_launches_calibrated_start_ups_and_whole_workload_runs() -> None:
    from perflab.suites.estimate import configs_to_launch

    text = SUITE.replace('command = "echo {n}"', 'workload = "eh/java"').replace(
        "n = [1, 2, 3]", "depth = [0, 10]").replace("{n}", "{depth}")
    starts, wholes = configs_to_launch(_plan(text))
    # Not calibrated: the workload is run whole (in each of its cells); a command never.
    assert starts == {} and list(wholes) == ["a"] and len(wholes["a"]) == 2
    starts, wholes = configs_to_launch(_plan(text.replace("expected_run_s = 0.5\n",
                                                          "calibrate = 0.1\n")))
    assert list(starts) == ["a"] and wholes == {}
