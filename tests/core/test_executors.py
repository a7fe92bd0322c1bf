"""The Executor seam (runner.executors): the measurement loop drives any executor the same way;
a fake one makes no process, so the loop's order, warm-up, failures and counters are checked
here without running anything."""

from __future__ import annotations

import itertools

import pytest
from rich.console import Console

from perflab.collectors.process import RunOutcome, RunRequest
from perflab.errors import PerflabError
from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, RunFailed, Watchers, measure
from perflab.runner.executors import Callgrind, FakeExecutor

pytestmark = pytest.mark.unit


def _configs(*names: str) -> list[Configuration]:
    # "true" exists: the loop refuses a missing program before anything runs
    return [Configuration(name=n, command=["true", n], is_baseline=i == 0)
            for i, n in enumerate(names)]


def _ok(req: RunRequest) -> RunOutcome:
    return RunOutcome("ok", 0, {"wall_time": 0.001 * len(req.argv[1]), "task_clock": 0.001})


def test_every_run_goes_through_the_executor_in_rounds() -> None:
    fake = FakeExecutor(_ok)
    configs = _configs("a", "bb")
    rs = ResultSet(kind="compare")
    measure(rs, configs, MeasureOptions(runs=4, warmup=1, counters="none", seed=3),
            watchers=Watchers(console=Console(quiet=True)), executor=fake)
    assert rs.status == "complete"
    assert [c.name for c in configs] == ["a", "bb"]
    for cfg, wall in zip(configs, (0.001, 0.002), strict=True):
        assert [r.warmup for r in cfg.runs] == [True, False, False, False, False]
        assert cfg.samples("wall_time") == [wall] * 4
    # each round (two requests in a row) holds both configurations, once each
    seen = [req.argv[1] for req in fake.requests]
    assert len(seen) == 10
    assert all(sorted(seen[i:i + 2]) == ["a", "bb"] for i in range(0, 10, 2))
    assert {r.seq for c in configs for r in c.runs} == set(range(10))


def test_a_failed_run_stops_the_batch_unless_failures_are_ignored() -> None:
    count = itertools.count()

    def third_fails(req: RunRequest) -> RunOutcome:
        if next(count) == 2:
            return RunOutcome("failed", 3, {"wall_time": 0.001}, error="exit code 3")
        return _ok(req)

    fake = FakeExecutor(third_fails)
    rs = ResultSet(kind="stat")
    with pytest.raises(RunFailed, match="exit code 3"):
        measure(rs, _configs("a"), MeasureOptions(runs=5, warmup=0, counters="none"),
                watchers=Watchers(console=Console(quiet=True)), executor=fake)
    assert len(fake.requests) == 3 and rs.status == "failed"

    count = itertools.count()
    fake = FakeExecutor(third_fails)
    rs = ResultSet(kind="stat")
    (cfg,) = configs = _configs("a")
    measure(rs, configs, MeasureOptions(runs=5, warmup=0, counters="none",
                                        ignore_failure=True),
            watchers=Watchers(console=Console(quiet=True)), executor=fake)
    assert len(fake.requests) == 5 and [r.status for r in cfg.runs].count("failed") == 1


def test_the_counters_are_those_the_executor_can_count() -> None:
    fake = FakeExecutor(_ok, counters=["task_clock", "page_faults"])
    rs = ResultSet(kind="stat")
    measure(rs, _configs("a"), MeasureOptions(runs=2, warmup=0),
            watchers=Watchers(console=Console(quiet=True)), executor=fake)
    assert rs.settings.counters == ["task_clock", "page_faults"]
    assert {tuple(req.counters) for req in fake.requests} == {("task_clock", "page_faults")}
    assert sum("counters unavailable" in n for n in rs.notes) == 2  # software and hardware


def test_callgrind_is_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import perflab.collectors.valgrind as vg

    monkeypatch.setattr(vg.shutil, "which", lambda name: None)
    with pytest.raises(PerflabError, match="valgrind is not installed"):
        Callgrind()
    fake = FakeExecutor(_ok)
    with pytest.raises(PerflabError, match="valgrind is not installed"):
        measure(ResultSet(kind="stat"), _configs("a"),
                MeasureOptions(runs=2, warmup=0, instructions="valgrind",
                               primary_metric="instructions"),
                watchers=Watchers(console=Console(quiet=True)), executor=fake)
    assert fake.requests == []
