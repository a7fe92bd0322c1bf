"""Every collector: wait4/rusage, perf_event_open (real software events, faked hardware PMU),
the timed region, the workload's JSON, callgrind, and each failure a command can have."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from perflab.collectors.perf_events import (
    HARDWARE_EVENTS,
    SOFTWARE_EVENTS,
    KernelBackend,
    Reading,
    explain_errno,
)
from perflab.collectors.process import LaunchServer, RunRequest, execute
from perflab.collectors.valgrind import execute_callgrind, parse_callgrind_total
from perflab.collectors.workload_json import WorkloadJSONError, parse_last_json, runtime_label
from perflab.errors import PerflabError
from perflab.model import Configuration, ResultSet
from perflab.runner import MeasureOptions, measure
from perflab.runner.executors import OneByOne

pytestmark = pytest.mark.measure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "core"


def req(argv: list[str], **kw: object) -> RunRequest:
    return RunRequest(argv=argv, env=dict(os.environ), **kw)  # type: ignore[arg-type]


def test_rusage_metrics_of_a_real_command(spin: Path) -> None:
    out = execute(req([str(spin), "1000", "2000"]))
    assert out.status == "ok", out.error
    v = out.values
    assert v["minor_faults"] >= 2000  # it touched 2000 fresh pages
    assert 4000 < v["max_rss"] < 64 * 1024  # about 8 MiB: the command's, not the interpreter's
    assert v["wall_time"] > 0 and v["user_time"] >= 0
    assert v["ops"] == 1000  # the workload's own JSON


def test_software_counters_cover_only_the_timed_region(spin: Path) -> None:
    backend = KernelBackend()
    whole = execute(req([str(spin), "1000", "3000"], counters=["page_faults", "task_clock"],
                        backend=backend, region=False))
    region = execute(req([str(spin), "1000", "3000"], counters=["page_faults", "task_clock"],
                         backend=backend, region=True))
    assert whole.values["page_faults"] >= 3000
    assert region.region_used and region.values["page_faults"] < 100
    assert region.values["region_time"] < region.values["wall_time"]


def test_one_launch_server_serves_many_runs(spin: Path, tmp_path: Path) -> None:
    """The fork server keeps each run's output, environment, directory, region and counters
    apart, and every run's rusage is the command's own."""
    backend = KernelBackend()
    with LaunchServer() as server:
        first = server.run(req([str(spin), "1000", "3000"], counters=["page_faults"],
                               backend=backend))
        pid1 = server._proc.pid if server._proc else None
        (tmp_path / "here.txt").write_text("x")
        second = server.run(RunRequest(
            argv=["sh", "-c", 'echo "$PERFLAB_TEST_VAR"; ls; echo err >&2'],
            env={**os.environ, "PERFLAB_TEST_VAR": "second"}, cwd=str(tmp_path),
            counters=["page_faults"], backend=backend))
        third = server.run(req([str(spin), "2000"], counters=["page_faults"], backend=backend))
        assert server._proc is not None and server._proc.pid == pid1  # one server throughout
    assert first.status == second.status == third.status == "ok"
    assert first.region_used and first.values["page_faults"] < 100  # region counters only
    assert not second.region_used and "region_time" not in second.values
    assert second.stdout.split() == ["second", "here.txt"] and second.stderr == "err\n"
    assert '"ops": 1000' not in second.stdout and third.values["ops"] == 2000
    assert third.region_used and third.values["region_time"] > 0
    assert 4000 < first.values["max_rss"] < 64 * 1024  # the command's 12 MiB, not the server's
    assert third.values["max_rss"] < first.values["max_rss"]  # its own, not carried over


def test_the_command_runs_in_perflabs_directory(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The server itself sits in /; each command starts where perflab was started (or in
    req.cwd), so relative paths work as they do in a shell."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.sh").write_text("#!/bin/sh\npwd\n")
    (tmp_path / "prog.sh").chmod(0o755)
    out = execute(req(["./prog.sh"]))
    assert out.status == "ok", out.error
    assert out.stdout.strip() == str(tmp_path)


def test_every_run_on_one_server_is_counted(spin: Path) -> None:
    # Counters inherited from the server stopped counting after two or three children on this
    # kernel; they are opened on each held child instead.  Ten runs, ten counts.
    backend = KernelBackend()
    with LaunchServer() as server:
        outs = [server.run(req([str(spin), "200000", "100"], counters=["task_clock",
                                                                      "page_faults"],
                               backend=backend, region=False)) for _ in range(10)]
    assert all(o.values["task_clock"] > 0 and o.values["page_faults"] >= 100 for o in outs)


def test_a_server_left_by_ctrl_c_is_not_reused(spin: Path) -> None:
    class Interrupting(FakeBackend):
        def open(self, pid: int, names: Iterable[str]) -> FakeCounters:
            c = FakeCounters(list(names))
            c.read = lambda: (_ for _ in ()).throw(KeyboardInterrupt)  # type: ignore[method-assign]
            return c

    server = LaunchServer()
    with pytest.raises(KeyboardInterrupt):
        server.run(req([str(spin), "1000"], counters=["page_faults"],
                       backend=Interrupting(pmu=False), region=False))
    assert server._proc is None  # closed: the server ended
    again = server.run(req([str(spin), "1000"]))  # a new server starts on demand
    assert again.status == "ok"
    server.close()


class FakeCounters:
    """A PMU that multiplexes: each hardware counter ran half the time it was enabled."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.reads = 0

    def read(self) -> dict[str, Reading]:
        self.reads += 1
        k = self.reads
        return {n: Reading(1000 * k, 2000 * k, 1000 * k if n in HARDWARE_EVENTS else 2000 * k)
                for n in self.names}

    def close(self) -> None:
        pass


class FakeBackend:
    def __init__(self, pmu: bool) -> None:
        self.pmu = pmu

    def open(self, pid: int, names: Iterable[str]) -> FakeCounters:
        return FakeCounters(list(names))

    def probe(self, names: Iterable[str]) -> dict[str, str | None]:
        return {n: None if (self.pmu or n in SOFTWARE_EVENTS)
                else explain_errno(errno.ENOENT, True) for n in names}


def test_hardware_counters_are_scaled_and_multiplexing_is_reported(spin: Path) -> None:
    rs = ResultSet(kind="stat")
    cfg = Configuration(name="spin", command=[str(spin), "1000"])
    measure(rs, [cfg], MeasureOptions(runs=2, warmup=0, region=False),
            executor=OneByOne(FakeBackend(pmu=True)))
    v = cfg.runs[0].values
    assert v["instructions"] == 2000.0  # 1000 counted in half the time: scaled to 2000
    assert v["page_faults"] == 1000.0  # software: not multiplexed, not scaled
    assert rs.metrics["instructions"].source == "perf_event_open (hardware PMU)"
    assert any("instructions was multiplexed (counted 50%" in n for n in rs.notes)


def test_no_pmu_is_said_once_and_software_events_still_count(spin: Path) -> None:
    rs = ResultSet(kind="stat")
    cfg = Configuration(name="spin", command=[str(spin), "1000"])
    measure(rs, [cfg], MeasureOptions(runs=2, warmup=0),
            executor=OneByOne(FakeBackend(pmu=False)))
    assert "instructions" not in rs.metrics and "task_clock" in rs.metrics
    pmu_notes = [n for n in rs.notes if "hardware counters unavailable" in n]
    assert len(pmu_notes) == 1 and "no hardware PMU" in pmu_notes[0]


def test_the_real_probe_agrees_with_perf_stat() -> None:
    """Whatever this machine is, the kernel probe and `perf stat` must tell the same story."""
    perf = shutil.which("perf")
    if not perf:
        pytest.skip("perf not installed")
    import subprocess

    text = subprocess.run([perf, "stat", "-x,", "-e", "instructions", "true"],
                          capture_output=True, text=True).stderr
    perf_says = "<not supported>" not in text and "<not counted>" not in text
    probe = KernelBackend().probe(["instructions"])
    assert (probe["instructions"] is None) == perf_says, (text, probe)


@pytest.mark.unit
def test_refused_perf_event_open_is_explained() -> None:
    assert "perf_event_paranoid" in explain_errno(errno.EACCES, hardware=False)
    assert "no hardware PMU" in explain_errno(errno.ENOENT, hardware=True)


@pytest.mark.unit
def test_reading_arithmetic() -> None:
    r = Reading(300, 100, 50) - Reading(100, 50, 25)
    assert r == Reading(200, 50, 25) and r.scaled == 400 and r.running_fraction == 0.5
    assert Reading(5, 0, 0).scaled == 0.0


@pytest.mark.unit
@pytest.mark.parametrize("stdout, expected", [
    ("noise\n{\"ns_per_op\": 12.5, \"ok\": true, \"name\": \"x\"}\n", {"ns_per_op": 12.5}),
    ("plain output\n", None),
    ("", None),
])
def test_workload_json(stdout: str, expected: dict[str, float] | None) -> None:
    assert parse_last_json(stdout) == expected


@pytest.mark.unit
@pytest.mark.parametrize("stdout, expected", [
    ('warm\n{"ns_per_op": 1, "runtime": ".NET Core 3.1.23"}\n', ".NET Core 3.1.23"),
    ('{"ns_per_op": 1, "runtime": 3}\n', None),  # not a label
    ('{"runtime": "mono 6.8"}\nplain output\n', None),  # not the last line
    ('{"runtime": "x",\n', None),
])
def test_runtime_label(stdout: str, expected: str | None) -> None:
    assert runtime_label(stdout) == expected


def test_malformed_workload_json_is_an_error() -> None:
    with pytest.raises(WorkloadJSONError, match="malformed JSON"):
        parse_last_json('{"ns_per_op": 1,\n')
    out = execute(req(["sh", "-c", "echo '{\"a\": 1,'"]))
    assert out.status == "failed" and "malformed JSON" in out.error


def test_command_failures_are_outcomes(spin: Path) -> None:
    bad = execute(req([str(spin), "10", "0", "3"]))
    assert bad.status == "failed" and bad.exit_code == 3 and "status 3" in bad.error
    killed = execute(req(["sh", "-c", "kill -SEGV $$"]))
    assert killed.status == "signal" and "SIGSEGV" in killed.error
    slow = execute(req(["sh", "-c", "sleep 5 & sleep 5"], timeout=0.3))
    assert slow.status == "timeout" and slow.values["wall_time"] < 3


@pytest.mark.unit
def test_missing_and_unexecutable_commands(tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="command not found: no-such-cmd-xyz"):
        execute(req(["no-such-cmd-xyz"]))
    f = tmp_path / "script"
    f.write_text("#!/bin/sh\n")
    with pytest.raises(PerflabError, match="not executable"):
        execute(req([str(f)]))


@pytest.mark.unit
def test_callgrind_fixture_parsing() -> None:
    text = (FIXTURES / "callgrind.out").read_text()
    assert parse_callgrind_total(text) == 5_012_345
    with pytest.raises(ValueError):
        parse_callgrind_total("events: Ir\n")


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind not installed")
def test_callgrind_counts_are_exact_and_follow_the_work(spin: Path) -> None:
    region = "*perflab_timed_region*"
    a1 = execute_callgrind(req([str(spin), "10000"]), toggle_symbol=region)
    a2 = execute_callgrind(req([str(spin), "10000"]), toggle_symbol=region)
    b = execute_callgrind(req([str(spin), "10100"]), toggle_symbol=region)
    assert a1.status == "ok", a1.error
    assert a1.values["instructions"] == a2.values["instructions"]  # deterministic
    # The region is a loop: its count is linear in N, so 1% more iterations is ~1% more
    # instructions, exactly reproducible.
    ratio = b.values["instructions"] / a1.values["instructions"]
    assert 1.009 < ratio < 1.011
    assert "wall_time" not in a1.values  # a time under valgrind means nothing


def test_missing_valgrind_is_one_clear_error(monkeypatch: pytest.MonkeyPatch,
                                             spin: Path) -> None:
    import perflab.collectors.valgrind as vg

    monkeypatch.setattr(vg.shutil, "which", lambda name: None)
    with pytest.raises(PerflabError, match="valgrind is not installed"):
        execute_callgrind(req([str(spin), "10"]))


def test_notes_are_said_once_across_cells(spin: Path) -> None:
    rs = ResultSet(kind="suite")
    for depth in (1, 2):  # a suite measures cell by cell into one result set
        cfg = Configuration(name="spin", command=[str(spin), "1000"], params={"d": depth})
        measure(rs, [cfg], MeasureOptions(runs=1, warmup=0),
                executor=OneByOne(FakeBackend(pmu=False)))
    assert sum("hardware counters unavailable" in n for n in rs.notes) == 1


@pytest.mark.unit
def test_a_tail_knows_when_it_lost_the_start_of_the_output() -> None:
    from perflab.collectors.process import _StreamTail
    from perflab.collectors.workload_json import WorkloadJSONError, parse_last_json

    tail = _StreamTail(limit=64)
    try:
        tail.start()
        os.write(tail.w, b'{"ns_per_op": 1.5}\n')
        text, cut = tail.take()
        assert not cut and parse_last_json(text, cut=cut) == {"ns_per_op": 1.5}
        os.write(tail.w, b'{"pad": "' + b"x" * 300 + b'", "ns_per_op": 1.5}\n')
        text, cut = tail.take()
        assert cut and len(text) == 64
        with pytest.raises(WorkloadJSONError, match="longer than the"):
            parse_last_json(text, cut=cut)
        os.write(tail.w, b"x" * 300 + b'\n{"ns_per_op": 2}\n')  # long noise, then the line
        text, cut = tail.take()
        assert cut and parse_last_json(text, cut=cut) == {"ns_per_op": 2.0}
    finally:
        tail.close()


@pytest.mark.unit
def test_an_outcome_carries_its_derived_metrics_whatever_its_status() -> None:
    """Derived metrics are computed where the run's figures are read (process._outcome), so
    every path to an outcome has them: a failed run without counters its rusage CPU time, a
    region run with counters its CPU time per op, which wins over the workload's own."""
    from perflab.collectors.process import _outcome, _RawRun

    def raw(status: int, **kw: object) -> _RawRun:
        return _RawRun(status=status, wall_ns=3_000_000, utime_us=1500, stime_us=500,
                       maxrss=1000, minflt=10, majflt=0, nvcsw=2, nivcsw=1, exec_errno=0,
                       timed_out=0, pid=1, run_delay_ns=0, started_ns=1, **kw)  # type: ignore[arg-type]

    failed = _outcome(req(["x"]), raw(1 << 8))  # exit status 1
    assert failed.status == "failed" and failed.values["cpu_time"] == pytest.approx(0.002)
    counted = _outcome(req(["x"]), raw(0, final={"task_clock": Reading(4_000_000, 1, 1)},
                                       region_enables=1, region_ns=2_000_000,
                                       stdout='{"ops": 1000, "cpu_ns_per_op": 1}\n'))
    assert counted.status == "ok" and "cpu_time" not in counted.values
    assert counted.values["task_clock"] == pytest.approx(0.004)  # s, as every time
    assert counted.values["cpu_ns_per_op"] == pytest.approx(4000.0)
