"""The runner itself, without the CLI: interleaving order, stop-rule decisions and the choice of
the primary metric (pure functions, and measure() on `true`)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from rich.console import Console

from perflab.model import Configuration, ResultSet, Run
from perflab.runner import (
    DEFAULT_BUDGET_PER_CONFIG,
    MeasureOptions,
    Watchers,
    choose_primary,
    effective_budget,
    effective_min_runs,
    measure,
    measured_plan,
)

pytestmark = pytest.mark.unit


def _run(**values: float) -> Run:
    return Run(seq=0, values=dict(values))


# -- choose_primary ------------------------------------------------------------------------------
def test_cpu_bound_runs_choose_task_clock() -> None:
    # 9.5 ms of CPU in a 10 ms run: CPU-bound.
    runs = [_run(task_clock=0.0095, wall_time=0.010), _run(task_clock=0.009, wall_time=0.010)]
    choice = choose_primary("wall_time", runs)
    assert choice.metric == "task_clock"
    assert choice.cpu_bound is True
    assert "cpu/wall 0.95 over 2 warm-up runs" in choice.reason


def test_waiting_runs_keep_wall_time() -> None:
    # `sleep`: 1 ms of CPU in 100 ms, voluntary switches only.
    runs = [_run(task_clock=0.001, wall_time=0.1, voluntary_switches=5, involuntary_switches=0)]
    choice = choose_primary("wall_time", runs, seen="first-round")
    assert choice.metric == "wall_time"
    assert choice.cpu_bound is False
    assert "mostly waiting" in choice.reason and "1 first-round run" in choice.reason


def test_run_queue_wait_is_left_out() -> None:
    # 40% of wall time on CPU, but 55 ms of the 100 ms waiting for a CPU: CPU-bound.
    runs = [_run(task_clock=0.04, wall_time=0.1, user_time=0.04, sys_time=0.0, run_delay=0.055,
                 voluntary_switches=2, involuntary_switches=0)]
    choice = choose_primary("wall_time", runs)
    assert choice.metric == "task_clock"
    assert "without the" in choice.reason


def test_preempted_runs_count_as_cpu_bound() -> None:
    runs = [_run(task_clock=0.02, wall_time=0.1, voluntary_switches=2, involuntary_switches=8)]
    choice = choose_primary("wall_time", runs)
    assert choice.metric == "task_clock"
    assert "preempted" in choice.reason


def test_without_perf_events_cpu_time_is_the_counterpart() -> None:
    runs = [_run(cpu_time=0.009, user_time=0.009, sys_time=0.0, wall_time=0.010)]
    assert choose_primary("wall_time", runs).metric == "cpu_time"


def test_workload_metric_with_no_counterpart_is_kept() -> None:
    choice = choose_primary("instructions_per_op", [_run(instructions_per_op=12.0)])
    assert choice.metric == "instructions_per_op" and choice.cpu_bound is None


def test_failed_runs_leave_nothing_to_choose_from() -> None:
    failed = Run(seq=0, values={"wall_time": 0.1}, status="failed")
    choice = choose_primary("wall_time", [failed])
    assert choice.metric == "wall_time" and choice.cpu_bound is None


# -- options ------------------------------------------------------------------------------------
def test_fixed_runs_have_one_look_and_no_budget() -> None:
    opts = MeasureOptions(runs=5)
    assert measured_plan(opts).looks == 1
    assert effective_budget(opts, 3) is None


def test_adaptive_defaults() -> None:
    opts = MeasureOptions()
    assert effective_budget(opts, 3) == DEFAULT_BUDGET_PER_CONFIG * 3
    assert measured_plan(opts).looks > 1  # alpha is split over the adaptive schedule's looks
    # --min-runs below what the estimator needs is raised to it; above it is kept.
    need = effective_min_runs(opts)
    assert effective_min_runs(MeasureOptions(min_runs=1)) == need
    assert effective_min_runs(MeasureOptions(min_runs=need + 3)) == need + 3


# -- measure() on tiny real commands -------------------------------------------------------------
def _measure(configs: list[Configuration], opts: MeasureOptions) -> ResultSet:
    rs = ResultSet(kind="compare" if len(configs) > 1 else "stat")
    return measure(rs, configs, opts, watchers=Watchers(console=Console(quiet=True)))


def _true(name: str, baseline: bool = False) -> Configuration:
    return Configuration(name=name, command=["true"], is_baseline=baseline)


@pytest.mark.measure
def test_rounds_interleave_every_configuration() -> None:
    configs = [_true("a", baseline=True), _true("b"), _true("c")]
    rs = _measure(configs, MeasureOptions(runs=4, warmup=1, counters="none", seed=7))
    runs = sorted((r.seq, cfg.name, r.warmup) for cfg in rs.configurations for r in cfg.runs)
    assert [seq for seq, _, _ in runs] == list(range(15))  # one schedule, no gaps
    # Every round (warm-up first) runs each configuration exactly once.
    for k in range(5):
        chunk = runs[3 * k:3 * k + 3]
        assert sorted(name for _, name, _ in chunk) == ["a", "b", "c"]
        assert {w for _, _, w in chunk} == {k == 0}
    assert rs.settings.interleaved is True
    assert rs.settings.stop.reason == "--runs 4"
    assert rs.status == "complete"


@pytest.mark.measure
def test_on_stored_hears_each_batch_once_it_is_committed(tmp_path: Path) -> None:
    # A batch's runs are recorded (on_run) before they are stored; on_stored is the
    # acknowledgement that a run is durable: each run once, after its commit, ids set, the
    # whole rounds of one launcher batch in one transaction.
    from perflab.storage import Store

    store = Store(tmp_path / "r.sqlite")
    rs = ResultSet(kind="compare")
    heard: list[list[int]] = []
    recorded: list[int] = []

    def stored(runs: list[Run]) -> None:
        assert all(r.id is not None for r in runs)
        in_db = {r.id for c in store.load(rs.id or 0).configurations for r in c.runs}
        assert {r.id for r in runs} <= in_db  # visible to another reader: committed
        heard.append([r.seq for r in runs])

    measure(rs, [_true("a", baseline=True), _true("b")],
            MeasureOptions(runs=5, warmup=1, counters="none"), store=store,
            watchers=Watchers(console=Console(quiet=True),
                              on_run=lambda _c, r: recorded.append(r.seq), on_stored=stored))
    # a warm-up round, the first timed round (alone: no round time yet), then the other 4
    # rounds of `true` in one batch (about 0.25 s of runs), so fewer commits than rounds
    assert all(len(batch) % 2 == 0 for batch in heard) and len(heard) < 6
    assert sorted(s for rnd in heard for s in rnd) == sorted(recorded) == list(range(12))


@pytest.mark.measure
def test_the_seed_fixes_the_order() -> None:
    def order(seed: int) -> list[str]:
        configs = [_true("a", baseline=True), _true("b"), _true("c")]
        rs = _measure(configs, MeasureOptions(runs=3, warmup=0, counters="none", seed=seed))
        return [n for _, n in sorted((r.seq, c.name) for c in rs.configurations for r in c.runs)]

    assert order(3) == order(3)


@pytest.mark.measure
def test_budget_stop_says_how_few_runs_it_allowed() -> None:
    rs = _measure([_true("a")], MeasureOptions(budget=0.0, warmup=0, counters="none"))
    assert rs.settings.stop.rounds == 1
    assert rs.settings.stop.reason == "the 0 s budget was spent"
    assert "the 0 s budget allowed only 1 runs per configuration" in rs.notes


@pytest.mark.measure
def test_precision_stop_at_the_first_look() -> None:
    # ±10,000,000%: the median of `true`'s runs is within that of its CI even when the
    # scheduler stalls one run for seconds on a busy machine (±1000% stopped at 14 runs once).
    opts = MeasureOptions(precision=1e5, warmup=0, counters="none", budget=600)
    rs = _measure([_true("a")], opts)
    assert rs.settings.stop.reason == "every CI was within ±10000000.0%"
    assert rs.settings.stop.rounds == effective_min_runs(opts)


@pytest.mark.measure
def test_max_runs_stop() -> None:
    # max_runs is raised to what the estimator needs, and checked before the stop rule's look.
    opts = MeasureOptions(max_runs=2, min_runs=1, warmup=0, counters="none", budget=600)
    configs = [_true("a", baseline=True), Configuration("b", ["sh", "-c", ":"])]
    rs = _measure(configs, opts)
    n = effective_min_runs(opts)
    assert rs.settings.stop.reason == f"--max-runs {max(2, n)} reached"


@pytest.mark.measure
def test_futile_comparisons_stop_before_max_runs() -> None:
    # Two `true`s: 9 runs cannot fit their ratio in the +-1% band at a run's noise (nor leave
    # it), so the look at 6 runs stops for futility (or, on a machine quiet enough to decide
    # at 6, for the decision), never at --max-runs.
    opts = MeasureOptions(max_runs=9, warmup=0, counters="none", budget=600,
                          primary_metric="wall_time")
    rs = _measure([_true("a", baseline=True), _true("b")], opts)
    assert rs.settings.stop.rounds == 6
    assert rs.settings.stop.reason in (
        "the primary comparison cannot be decided within the budget at this noise",
        "every primary comparison was decided")


@pytest.mark.measure
def test_unknown_primary_metric_fails_the_result() -> None:
    from perflab.errors import PerflabError

    opts = MeasureOptions(runs=1, warmup=0, counters="none", primary_metric="nonsense")
    rs = ResultSet(kind="stat")
    with pytest.raises(PerflabError, match="unknown metric 'nonsense'"):
        measure(rs, [_true("a")], opts, watchers=Watchers(console=Console(quiet=True)))
    assert rs.status == "failed"


@pytest.mark.measure
def test_a_fixed_count_sends_warm_up_and_timed_runs_in_one_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # --runs: no pause between the warm-up and the timed runs (a pause let the scheduler put
    # each command behind a CPU-bound neighbour: runner.warm_up), so one batch holds both, and
    # the warm-up runs are still flagged as such, and the progress line stops saying warm-up
    # once they are in.
    from perflab.collectors.process import LaunchServer
    from perflab.runner import Measurement

    sizes: list[int] = []
    labels: list[str] = []
    real, real_status = LaunchServer.run_batch, Measurement._status

    def spy(self: LaunchServer, reqs: list, *a: object, **kw: object) -> list:
        sizes.append(len(reqs))
        return real(self, reqs, *a, **kw)  # type: ignore[arg-type]

    def status(self: Measurement, label: str, name: str) -> None:
        labels.append(label)
        real_status(self, label, name)

    monkeypatch.setattr(LaunchServer, "run_batch", spy)
    monkeypatch.setattr(Measurement, "_status", status)
    configs = [_true("a", baseline=True), _true("b")]
    rs = _measure(configs, MeasureOptions(runs=5, warmup=3, counters="none", seed=3))
    assert sizes == [2 * (3 + 5)]
    assert [k for k, _ in itertools.groupby(labels)] == ["warm-up ", ""]
    for cfg in rs.configurations:
        assert [r.warmup for r in sorted(cfg.runs, key=lambda r: r.seq)] == [True] * 3 + [False] * 5
    # With a budget the warm-up still times a round first, to size the batches it checks at.
    sizes.clear()
    _measure([_true("a")], MeasureOptions(warmup=3, counters="none", budget=0.5, min_runs=6,
                                          max_runs=6))
    assert sizes[0] == 1 and len(sizes) > 2


@pytest.mark.measure
def test_an_unknown_metric_after_a_merged_warm_up_stops_the_batch() -> None:
    # The metric is checked once the warm-up runs are in (the first chunk), and the server is
    # stopped there: a long fixed count of timed runs is not spent on it.
    from perflab.errors import PerflabError

    opts = MeasureOptions(runs=100_000, warmup=2, counters="none", primary_metric="nonsense")
    rs = ResultSet(kind="stat")
    cfg = _true("a")
    with pytest.raises(PerflabError, match="unknown metric 'nonsense'"):
        measure(rs, [cfg], opts, watchers=Watchers(console=Console(quiet=True)))
    assert rs.status == "failed"
    assert 2 <= len(cfg.runs) < 5_000


@pytest.mark.measure
def test_chunks_of_a_batch_keep_each_run_with_its_configuration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The server hands a batch over in chunks (here about every run), which split rounds:
    # each run still lands in its own configuration, and each commit holds whole rounds.
    from perflab.runner import loop
    from perflab.storage import Store

    monkeypatch.setattr(loop, "BATCH_SECONDS", 0.0005)
    store = Store(tmp_path / "r.sqlite")
    rs = ResultSet(kind="compare")
    configs = [Configuration(name=n, command=["sh", "-c", f'echo \'{{"which": {i}}}\''],
                             is_baseline=i == 1) for i, n in ((1, "a"), (2, "b"), (3, "c"))]
    heard: list[list[Run]] = []
    measure(rs, configs, MeasureOptions(runs=8, warmup=1, counters="none"), store=store,
            watchers=Watchers(console=Console(quiet=True), on_stored=heard.append))
    for i, cfg in enumerate(configs, 1):
        assert [r.values["which"] for r in cfg.runs] == [i] * 9
    assert all(len(batch) % 3 == 0 for batch in heard)
    assert sorted(r.seq for b in heard for r in b) == list(range(27))
    assert len(heard) > 4  # chunks were stored as they came, not one commit per batch
    stored = store.load(rs.id or 0)
    assert sum(len(c.runs) for c in stored.configurations) == 27
