"""The default primary metric: CPU time for CPU-bound commands, wall time where they wait.

Real processes (the spin loop, sleep) through the real runner; synthetic runs only for the
busy-machine case, which a unit test cannot create on demand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from perflab.cli import app
from perflab.model import Configuration, Fingerprint, PrimaryChoice, ResultSet, Run
from perflab.runner import MeasureOptions, Watchers, choose_primary, measure, reconcile_primary
from perflab.storage import Store

pytestmark = pytest.mark.measure

QUIET = Console(stderr=True, quiet=True)


def _measure(cmd: list[str], **kw: object) -> tuple[ResultSet, MeasureOptions]:
    rs = ResultSet(kind="stat")
    opts = MeasureOptions(**{"warmup": 2, "runs": 2, "auto_primary": True, **kw})  # type: ignore
    measure(rs, [Configuration(name="x", command=cmd)], opts, watchers=Watchers(console=QUIET))
    return rs, opts


def test_spinning_command_is_decided_on_task_clock(spin: Path) -> None:
    rs, opts = _measure([str(spin), "20000000"])
    assert rs.configurations[0].runs[0].values["run_delay"] >= 0
    assert opts.primary_metric == "task_clock"
    assert rs.settings.primary_metric == "task_clock"
    assert rs.settings.primary_choice.cpu_bound is True
    notes = [n for n in rs.notes if n.startswith("primary metric:")]
    assert len(notes) == 1
    assert "CPU-bound" in notes[0] and "wall_time reported beside it" in notes[0]
    assert "--metric overrides" in notes[0]


def test_sleeping_command_stays_on_wall_time() -> None:
    rs, opts = _measure(["sleep", "0.03"])
    assert opts.primary_metric == "wall_time"
    assert rs.settings.primary_choice.cpu_bound is False
    assert any("mostly waiting" in n for n in rs.notes)


def test_without_perf_events_cpu_time_comes_from_rusage(spin: Path) -> None:
    rs, opts = _measure([str(spin), "20000000"], counters="none")
    assert opts.primary_metric == "cpu_time"
    assert "task_clock" not in rs.metrics
    run = rs.configurations[0].measured_runs()[0]
    assert run.values["cpu_time"] == run.values["user_time"] + run.values["sys_time"]
    assert rs.metrics["cpu_time"].unit == "s"


def test_no_warmup_the_first_round_chooses(spin: Path) -> None:
    rs, opts = _measure([str(spin), "20000000"], warmup=0)
    assert opts.primary_metric == "task_clock"
    assert any("the first 2 runs" in n for n in rs.notes)


def test_region_workload_reports_cpu_ns_per_op(spin: Path) -> None:
    rs, _ = _measure([str(spin), "2000000"])
    run = rs.configurations[0].measured_runs()[0]
    assert run.values["cpu_ns_per_op"] == run.values["task_clock"] * 1e9 / 2_000_000
    assert rs.metrics["cpu_ns_per_op"].unit == "ns"
    assert "timed region" in rs.metrics["cpu_ns_per_op"].source


def _run(**v: float) -> Run:
    return Run(seq=0, values=dict(v), warmup=True)


@pytest.mark.unit
def test_preempted_cpu_bound_command_on_a_busy_machine() -> None:
    # 2 CPU-bound neighbours on 2 CPUs: the loop gets 60% of a CPU, preempted, never waiting.
    runs = [_run(wall_time=0.05, task_clock=0.03, voluntary_switches=2,
                 involuntary_switches=12) for _ in range(2)]
    c = choose_primary("wall_time", runs)
    assert c.metric == "task_clock" and c.cpu_bound
    assert "preempted" in c.reason
    # A 5 ms loop: one or two preemptions a run, only the launcher's voluntary switches.
    runs = [_run(wall_time=0.01, task_clock=0.0055, voluntary_switches=2,
                 involuntary_switches=1) for _ in range(2)]
    c = choose_primary("wall_time", runs)
    assert c.metric == "task_clock" and c.cpu_bound
    assert "preempted" in c.reason


@pytest.mark.unit
def test_run_queue_wait_is_left_out_of_the_share() -> None:
    # The scheduler says the command waited 22 ms of its 50 ms for a CPU: 28 ms of CPU time.
    runs = [_run(wall_time=0.05, task_clock=0.027, user_time=0.026, sys_time=0.001,
                 run_delay=0.022, voluntary_switches=3, involuntary_switches=2)
            for _ in range(2)]
    c = choose_primary("wall_time", runs)
    assert c.metric == "task_clock" and "waiting for a CPU" in c.reason
    # Waiting in a sleep is not a run-queue wait: wall time stays primary.
    runs = [_run(wall_time=0.05, task_clock=0.025, user_time=0.025, sys_time=0.0,
                 run_delay=0.001, voluntary_switches=3, involuntary_switches=0)
            for _ in range(2)]
    assert choose_primary("wall_time", runs).metric == "wall_time"


@pytest.mark.unit
def test_worker_thread_preempted_on_a_very_busy_machine() -> None:
    # A workload whose loop runs in a worker thread (the main thread's run_delay does not see
    # it) on a machine with 15 runnable tasks on 2 CPUs: 16% of a CPU, all of it preemption.
    runs = [_run(region_time=1.0, task_clock=0.16, threads=1, ns_per_op=5000.0,
                 cpu_ns_per_op=800.0, wall_time=1.1, user_time=0.17, sys_time=0.0,
                 run_delay=0.01, voluntary_switches=3, involuntary_switches=40)
            for _ in range(2)]
    c = choose_primary("ns_per_op", runs)
    assert c.metric == "cpu_ns_per_op" and "preempted" in c.reason


@pytest.mark.unit
def test_command_that_waits_half_the_time_stays_on_wall_time() -> None:
    runs = [_run(wall_time=0.05, task_clock=0.025, voluntary_switches=20,
                 involuntary_switches=1) for _ in range(2)]
    assert choose_primary("wall_time", runs).metric == "wall_time"


@pytest.mark.unit
def test_workload_ns_per_op_maps_to_cpu_ns_per_op_per_busy_thread() -> None:
    # Two threads each busy for the whole 0.1 s region: 200 ms of task clock is CPU-bound.
    runs = [_run(region_time=0.1, task_clock=0.198, threads=2, ns_per_op=100.0,
                 cpu_ns_per_op=99.0) for _ in range(2)]
    c = choose_primary("ns_per_op", runs)
    assert c.metric == "cpu_ns_per_op"
    # One of the two threads sleeping: cpu/(wall x threads) = 0.5, not CPU-bound.
    runs = [_run(region_time=0.1, task_clock=0.1, threads=2, ns_per_op=100.0,
                 cpu_ns_per_op=50.0, voluntary_switches=30) for _ in range(2)]
    assert choose_primary("ns_per_op", runs).metric == "ns_per_op"


@pytest.mark.unit
def test_non_time_primary_is_left_alone() -> None:
    c = choose_primary("max_rss", [_run(max_rss=1000.0, wall_time=0.1, task_clock=0.1)])
    assert c.metric == "max_rss" and c.cpu_bound is None


def test_cli_prints_the_choice_once_and_metric_overrides(spin: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["compare", "-r", "6", "-n", "a", "-n", "b",
                              f"{spin} 20000000", f"{spin} 20000000"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # the note may be folded
    assert text.count("primary metric: task_clock (CPU-bound") == 1, text
    res = runner.invoke(app, ["compare", "-r", "6", "--metric", "wall_time", "-n", "a", "-n",
                              "b", f"{spin} 20000000", f"{spin} 20000000"])
    assert res.exit_code == 0, res.output
    assert "primary metric:" not in res.output


# -- one choice per benchmark: stored, reused, changed only on decisive evidence -------------

def _choice(metric: str, *, cpu: bool, decisive: bool = False, rid: int | None = None,
            why: str = "") -> PrimaryChoice:
    return PrimaryChoice(metric, f"{metric} ({why}); x reported beside it; --metric overrides",
                         cpu, "wall_time", why, 3, decisive, rid)


@pytest.mark.unit
def test_a_stored_choice_is_kept_against_evidence_that_is_not_decisive() -> None:
    stored = {("./loop", ""): _choice("task_clock", cpu=True, rid=7, why="CPU-bound: 0.97")}
    fresh = _choice("wall_time", cpu=False, why="mostly waiting: cpu/wall 0.19")
    c = reconcile_primary(fresh, stored, {"wall_time", "task_clock"})
    assert c.metric == "task_clock" and c.from_result == 7 and c.cpu_bound
    assert "made by result 7: CPU-bound: 0.97" in c.reason
    assert "these runs read mostly waiting: cpu/wall 0.19, not decisive" in c.reason
    assert "wall_time reported beside it" in c.reason
    same = reconcile_primary(_choice("task_clock", cpu=True, why="CPU-bound: 0.99"), stored,
                             {"wall_time", "task_clock"})
    assert same.metric == "task_clock" and "not decisive" not in same.reason


@pytest.mark.unit
def test_decisive_evidence_changes_a_stored_choice() -> None:
    stored = {("./loop", ""): _choice("wall_time", cpu=False, rid=3, why="mostly waiting")}
    fresh = _choice("task_clock", cpu=True, decisive=True, why="CPU-bound: cpu/wall 0.99")
    c = reconcile_primary(fresh, stored, {"wall_time", "task_clock"})
    assert c.metric == "task_clock" and c.from_result is None
    assert "changed from wall_time, chosen by result 3" in c.reason


@pytest.mark.unit
def test_stored_choices_that_differ_or_were_not_measured_leave_the_runs_to_choose() -> None:
    fresh = _choice("task_clock", cpu=True, why="CPU-bound")
    differ = {("a", ""): _choice("wall_time", cpu=False, rid=1),
              ("b", ""): _choice("task_clock", cpu=True, rid=2)}
    c = reconcile_primary(fresh, differ, {"wall_time", "task_clock"})
    assert c.metric == "task_clock" and "stored choices of these benchmarks differ" in c.reason
    gone = {("a", ""): _choice("task_clock", cpu=True, rid=1)}
    c = reconcile_primary(_choice("cpu_time", cpu=True, why="CPU-bound"), gone,
                          {"wall_time", "cpu_time"})
    assert c.metric == "cpu_time" and "task_clock was not measured this time" in c.reason
    assert reconcile_primary(fresh, {}, {"task_clock"}) is fresh


@pytest.mark.unit
def test_decisive_needs_the_typical_run_cpu_bound_or_the_waits_seen() -> None:
    busy = [_run(wall_time=0.01, task_clock=0.0095, voluntary_switches=2,
                 involuntary_switches=0)] + [
        _run(wall_time=0.01, task_clock=0.003, voluntary_switches=2,
             involuntary_switches=3) for _ in range(2)]
    c = choose_primary("wall_time", busy)
    assert c.metric == "task_clock" and not c.decisive  # the best run only
    quiet = [_run(wall_time=0.01, task_clock=0.0096, voluntary_switches=2,
                  involuntary_switches=0) for _ in range(3)]
    assert choose_primary("wall_time", quiet).decisive
    sleeping = [_run(wall_time=0.02, task_clock=0.0004, voluntary_switches=4,
                     involuntary_switches=0) for _ in range(3)]
    c = choose_primary("wall_time", sleeping)
    assert c.metric == "wall_time" and c.decisive and c.runs == 3


@pytest.mark.unit
def test_the_store_finds_the_last_choice_for_the_benchmark_on_this_machine(
        tmp_path: Path) -> None:
    store = Store(tmp_path / "r.sqlite")
    fp = {"hostname": "h1", "cpu_model": "x"}

    def save(metric: str, default: str = "wall_time", status: str = "complete",
             host: str = "h1") -> int:
        rs = ResultSet(kind="stat", fingerprint={**fp, "hostname": host}, status=status)
        rs.settings.primary_choice = PrimaryChoice(metric, "r", metric != default, default,
                                                   "why", 3)
        rs.configurations.append(Configuration(name="x", command=["./loop", "5"]))
        return store.save(rs)

    first = save("task_clock")
    save("wall_time", host="h2")  # another machine
    save("wall_time", status="running")  # not finished
    save("cpu_ns_per_op", default="ns_per_op")  # chosen against another default
    key = ("./loop 5", "{}")
    here = Fingerprint.from_json(fp)
    got = store.primary_choices(here, [key], "wall_time")
    assert got[key].metric == "task_clock" and got[key].from_result == first
    assert store.primary_choices(here, [("./loop 6", "{}")], "wall_time") == {}
    assert store.primary_choices(here, [key], "wall_time", before=first) == {}
    loaded = store.load(first).settings.primary_choice
    assert isinstance(loaded, PrimaryChoice) and loaded.why == "why"


def test_stat_and_compare_keep_the_benchmarks_stored_choice(spin: Path) -> None:
    runner = CliRunner()
    cmd = f"{spin} 20000000"
    res = runner.invoke(app, ["stat", "-r", "6", "--", *cmd.split()])
    assert res.exit_code == 0, res.output
    store = Store()
    first = store.result_ids()[-1]
    made = store.load(first).settings.primary_choice
    assert made is not None and made.metric == "task_clock" and made.from_result is None
    res = runner.invoke(app, ["compare", "-r", "6", cmd, f"{spin} 20000001"])
    assert res.exit_code == 0, res.output
    again = store.load(store.result_ids()[-1]).settings.primary_choice
    assert again is not None and again.metric == "task_clock"
    assert again.from_result == first, again
    text = " ".join(res.output.split())
    assert f"this benchmark's choice on this machine, made by result {first}" in text
