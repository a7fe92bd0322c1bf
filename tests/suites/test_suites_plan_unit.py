"""suites/plan.py directly: the matrix a plan expands to, its identity and its time estimate."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.suites.plan import (
    NATIVE_START_S,
    PERFLAB_PER_CELL_S,
    PERFLAB_PER_RUN_S,
    PERFLAB_START_S,
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


def test_the_time_left_grows_when_the_first_cell_outlasts_the_estimate() -> None:
    from perflab.suites.execute import time_left

    assert time_left(0, 3, 2.0, 16.0) == 14.0  # the plan's estimate, while it holds
    assert time_left(0, 3, 15.0, 16.0) == 30.0  # two more cells at least as long: not 1 s
    assert time_left(1, 2, 10.0, 16.0) == 20.0  # then the cells' own mean time
