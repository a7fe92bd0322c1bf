"""The fork server's two paths give the same figures: a run made alone (perflab opening the
counters on the held command and answering its timed region: LaunchServer.run) and a run made
in a batch (the server doing both itself: LaunchServer.run_batch).  Real processes, real
perf_event_open software counters, real signals and timeouts, on tests/programs/spin.c."""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from perflab.collectors.perf_events import KernelBackend
from perflab.collectors.process import Interrupted, LaunchServer, RunOutcome, RunRequest

pytestmark = pytest.mark.measure

SOFTWARE = ["task_clock", "page_faults", "context_switches", "cpu_migrations"]


def req(argv: list[str], **kw: object) -> RunRequest:
    kw.setdefault("backend", KernelBackend())
    return RunRequest(argv=argv, env=dict(os.environ), **kw)  # type: ignore[arg-type]


def both(server: LaunchServer, r: RunRequest, n: int) -> tuple[list[RunOutcome],
                                                                list[RunOutcome]]:
    """n runs of r alone and n in one batch, alternating the order of the two blocks."""
    alone = [server.run(r) for _ in range(n)]
    batch = server.run_batch([r] * n, stop_on_failure=False)
    return alone, batch


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for perflab, its subreaper, counts as ended)."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def med(outs: list[RunOutcome], name: str) -> float:
    return statistics.median(o.values[name] for o in outs)


def test_whole_process_counts_agree(spin: Path) -> None:
    """Page faults of a command touching 3000 pages: the same in both paths (software counter
    and rusage), and the same names, units and exact figures from the workload's JSON."""
    with LaunchServer() as server:
        alone, batch = both(server, req([str(spin), "100000", "3000"], counters=SOFTWARE,
                                        region=False), 5)
    for o in alone + batch:
        assert o.status == "ok" and o.exit_code == 0, o.error
        assert not o.region_used and o.counter_error == ""
        assert o.running_fraction == {n: 1.0 for n in SOFTWARE}
    assert set(alone[0].values) == set(batch[0].values)
    for name in ("page_faults", "minor_faults"):
        a, b = med(alone, name), med(batch, name)
        assert a >= 3000 and abs(a - b) <= 0.02 * a, (name, a, b)
    assert med(alone, "max_rss") == pytest.approx(med(batch, "max_rss"), rel=0.1)
    assert med(alone, "ops") == med(batch, "ops") == 100000
    # the same loop: CPU time within a factor that only a broken counter would leave
    assert 0.5 < med(batch, "task_clock") / med(alone, "task_clock") < 2
    assert all(o.started_at and abs(o.started_at - time.time()) < 60 for o in alone + batch)


def test_timed_region_counts_agree(spin: Path) -> None:
    """The region's counters exclude the 3000 faults made before it, in both paths; the
    region's time is inside the wall time; each run's stdout is its own."""
    with LaunchServer() as server:
        alone, batch = both(server, req([str(spin), "200000", "3000"], counters=SOFTWARE), 9)
    for o in alone + batch:
        assert o.status == "ok" and o.region_used, o.error
        assert o.values["page_faults"] < 100  # the region only
        assert 3000 <= o.values["minor_faults"]  # rusage: the whole process
        assert 0 < o.values["region_time"] < o.values["wall_time"]
        assert o.stdout.count('"ops": 200000') == 1 and o.stderr == ""
    # The region's wall time: a CPU-bound neighbour's slice (~3 ms) stretches a preempted run's
    # 0.2 ms region many times over (medians 0.2 vs 2.8 ms beside two busy loops), and only
    # ever lengthens it, so the fastest run of each path is what they must agree on.
    fastest = [min(o.values["region_time"] for o in outs) for outs in (batch, alone)]
    assert 0.5 < fastest[0] / fastest[1] < 2, fastest
    assert 0.5 < med(batch, "task_clock") / med(alone, "task_clock") < 2


def test_every_run_of_a_batch_has_its_own_counts(spin: Path) -> None:
    """The server opens a batch's counters once, on itself, and each command inherits them:
    a run's counts are the difference of two reads.  Every run (not a median) must carry its
    own: two interleaved commands with different work, one whose work is done by its
    children, and the timed region's counts.  Without the server's non-inherited dummy event
    the kernel swapped the server's and the command's event sets, and most runs read 0."""
    small = req([str(spin), "300000", "1000"], counters=SOFTWARE, region=False)
    big = req([str(spin), "900000", "3000"], counters=SOFTWARE, region=False)
    kids = req(["sh", "-c", f"{spin} 300000 2000; {spin} 300000 2000"], counters=SOFTWARE,
               region=False)
    region = req([str(spin), "600000", "3000"], counters=SOFTWARE)
    with LaunchServer() as server:
        outs = server.run_batch([small, big, kids] * 6, stop_on_failure=False)
        regions = server.run_batch([region] * 8, stop_on_failure=False)
    for i, o in enumerate(outs):
        assert o.status == "ok" and o.counter_error == "", o.error
        pages = (1000, 3000, 4000)[i % 3]
        assert pages <= o.values["page_faults"] <= pages + 400, (i, o.values)
        task_s = o.values["task_clock"]
        cpu_s = o.values["user_time"] + o.values["sys_time"]  # wait4's rusage (s), in ticks
        assert 0 < task_s <= o.values["wall_time"] * 1.05 + 1e-4, (i, o.values)
        assert abs(task_s - cpu_s) < 0.5 * task_s + 0.005, (i, o.values)
    by = [[o.values["task_clock"] for o in outs[k::3]] for k in range(2)]
    assert statistics.median(by[1]) > 2 * statistics.median(by[0])  # 3x the loop
    # The region runs twice small's loop: its CPU time (not its share of the wall clock, which
    # a busy machine lowers) is far from 0 (the kernel's swap read 0) in every run: at least a
    # tenth of small's whole run, most of which is exec and small's 1,000 page faults (a
    # quarter failed at load 2: 0.611 ms against 0.631 ms).
    floor = 0.1 * statistics.median(by[0])
    for o in regions:
        assert o.status == "ok" and o.region_used, o.error
        assert o.values["page_faults"] < 100  # the region's, not the 3000 before it
        assert floor < o.values["task_clock"], (floor, o.values)
        assert o.values["task_clock"] <= o.values["region_time"] * 1.05 + 1e-4, o.values


def test_failures_are_the_same_outcomes(spin: Path, tmp_path: Path) -> None:
    """Exit codes, signals, timeouts (with the whole process group killed), a program that
    cannot start and timed-region protocol errors: identical status, code and message."""
    marker = tmp_path / "grandchild.pid"
    bad_interp = tmp_path / "bad-interp"
    bad_interp.write_text("#!/no/such/interpreter\n")
    bad_interp.chmod(0o755)
    ctl = 'echo {} > "$PERFLAB_CTL_FIFO"; read a < "$PERFLAB_ACK_FIFO"; echo out'
    cases = [
        req([str(spin), "10", "0", "3"]),
        req(["sh", "-c", "echo dying >&2; kill -SEGV $$"]),
        req(["sh", "-c", f"sleep 30 & echo $! > {marker}; wait"], timeout=0.3),
        req([str(bad_interp)]),
        req(["sh", "-c", ctl.format("bogus")], counters=SOFTWARE),
        req(["sh", "-c", ctl.format("enable")], counters=SOFTWARE),
    ]
    with LaunchServer() as server:
        for r in cases:
            alone = server.run(r)
            if r.timeout:
                pid = int(marker.read_text())
                assert gone(pid)  # the group's sleep went with it
            (batch,) = server.run_batch([r])
            if r.timeout:
                assert int(marker.read_text()) != pid and gone(int(marker.read_text()))
            assert (alone.status, alone.exit_code, alone.error) == (
                batch.status, batch.exit_code, batch.error), r.argv
            assert alone.stdout == batch.stdout and alone.stderr == batch.stderr
            assert alone.region_used == batch.region_used


def test_a_batch_without_counters_starts_commands_as_a_run_alone_does(tmp_path: Path) -> None:
    """Without counters a batch starts each command with vfork, not the held fork of a run
    alone: the same working directory, CPU pinning, environment, process group, signal
    dispositions and mask, and the same outcome for a working directory that is gone."""
    show = ('pwd; grep -E "^(Cpus_allowed_list|SigBlk|SigIgn):" /proc/self/status; '
            'echo "$PERFLAB_T"; [ "$(ps -o pgid= $$)" -eq $$ ] && echo leader')
    env = dict(os.environ, PERFLAB_T="x y")
    cases = [req(["sh", "-c", show], cwd=str(tmp_path), pin=[0]),
             req(["sh", "-c", show], pin=[1] if (os.cpu_count() or 1) > 1 else [0]),
             req(["sh", "-c", show], cwd=str(tmp_path / "gone"))]
    for r in cases:
        r.env = env
    with LaunchServer() as server:
        for r in cases:
            alone = server.run(r)
            (batch,) = server.run_batch([r])
            assert (alone.status, alone.exit_code, alone.error) == (
                batch.status, batch.exit_code, batch.error), r.argv
            assert alone.stdout == batch.stdout, r.cwd
        ok = server.run_batch(cases[:1])[0]
    assert ok.stdout.splitlines()[0] == str(tmp_path)
    assert "Cpus_allowed_list:\t0" in ok.stdout and "x y" in ok.stdout and "leader" in ok.stdout


def test_a_batch_command_gets_the_whole_cpu_set_back() -> None:
    """The server holds itself to its CPU around each vfork so the command starts there
    (perflab-launch.c, launcher_cpus); the command takes the server's whole CPU set back
    before exec, and so does the server once the command has started.  A --pin command gets
    its pin and nothing else, the server its whole set."""
    def allowed(status: str) -> str:
        return next(line for line in status.splitlines() if line.startswith("Cpus_allowed_list"))

    mine = allowed(Path("/proc/self/status").read_text())
    last = max(os.sched_getaffinity(0))
    show = ["sh", "-c", "cat /proc/self/status"]
    with LaunchServer() as server:
        outs = server.run_batch([req(show) for _ in range(20)])
        pinned = server.run_batch([req(show, pin=[last]) for _ in range(5)])
        assert server._proc is not None
        launcher = allowed(Path(f"/proc/{server._proc.pid}/status").read_text())
    assert {allowed(o.stdout) for o in outs} == {mine}
    assert {allowed(o.stdout).split()[-1] for o in pinned} == {str(last)}
    assert launcher == mine


def test_a_batch_stops_at_a_failure_and_keeps_outputs_apart(spin: Path) -> None:
    with LaunchServer() as server:
        outs = server.run_batch([req(["sh", "-c", "echo one; echo e1 >&2"]),
                                 req(["sh", "-c", "echo two; exit 4"]),
                                 req(["sh", "-c", "echo three"])])
        assert [o.stdout for o in outs] == ["one\n", "two\n"]  # stopped after the failure
        assert outs[0].stderr == "e1\n" and outs[1].stderr == ""
        assert outs[1].status == "failed" and outs[1].exit_code == 4
        every = server.run_batch([req(["sh", "-c", "exit 4"]), req(["true"])],
                                 stop_on_failure=False)
        assert [o.exit_code for o in every] == [4, 0]


def interrupted(batch: Callable[[], object], after: float = 1.0) -> Interrupted:
    """The Interrupted that ``batch()`` raises when Ctrl-C (a KeyboardInterrupt from a timer's
    signal handler, as Python raises it for SIGINT) arrives ``after`` seconds in."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, after)
        with pytest.raises(Interrupted) as caught:
            batch()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return caught.value


def test_ctrl_c_during_a_batch_keeps_the_finished_runs(spin: Path, tmp_path: Path) -> None:
    """SIGINT while the server runs a batch: the command running is killed with its group,
    the runs finished before it are handed over, and the server is not reused."""
    marker = tmp_path / "pid"
    slow = req(["sh", "-c", f"sleep 30 & echo $! > {marker}; wait"])
    quick = req([str(spin), "1000"])

    server = LaunchServer()
    done = interrupted(lambda: server.run_batch([quick, quick, slow, quick])).outcomes
    assert [o.status for o in done] == ["ok", "ok"] and done[0].values["ops"] == 1000
    assert server._proc is None  # closed
    assert gone(int(marker.read_text()))  # the server killed the group as it ended
    assert server.run_batch([quick])[0].status == "ok"  # a new server on demand
    server.close()


def test_a_chunked_batch_hands_over_its_runs_as_it_goes(spin: Path) -> None:
    """With on_chunk the server hands over the runs made so far every chunk_s and goes on:
    the chunks, in order, are the batch's outcomes, each run with its own counts and output,
    and the first chunk arrives while the batch's later runs are still to be made."""
    chunks: list[tuple[float, list[RunOutcome]]] = []
    sleepy = req(["sh", "-c", "sleep 0.02; echo $$"], counters=SOFTWARE)
    with LaunchServer() as server:
        t0 = time.monotonic()
        outs = server.run_batch([sleepy] * 12, on_chunk=lambda c: chunks.append(
            (time.monotonic(), list(c))), chunk_s=0.05)
        t_end = time.monotonic()
    assert len(chunks) >= 2 and chunks[0][0] < t_end - 0.05  # not all at the end
    assert [o for _, c in chunks for o in c] == outs and len(outs) == 12
    assert all(o.status == "ok" and o.values["task_clock"] > 0 for o in outs)
    assert len({o.stdout for o in outs}) == 12  # each run's own pid on its stdout
    assert t_end - t0 >= 12 * 0.02


def test_a_chunk_handler_that_raises_stops_the_batch(spin: Path, tmp_path: Path) -> None:
    """An exception in on_chunk (perflab failing to store a chunk, say) stops the server: the
    command running is killed with its group, no later run is made, the exception goes on."""
    marker = tmp_path / "pids"
    slow = req(["sh", "-c", f"echo $$ >> {marker}; sleep 30 & echo $! >> {marker}; wait"])
    quick = req([str(spin), "1000"])
    made: list[list[RunOutcome]] = []

    def keep(chunk: list[RunOutcome]) -> None:
        made.append(chunk)
        time.sleep(0.3)  # the server goes on meanwhile: into the slow run
        raise RuntimeError("store failed")

    server = LaunchServer()
    with pytest.raises(RuntimeError, match="store failed"):
        server.run_batch([quick] * 40 + [slow, quick], on_chunk=keep, chunk_s=0.001)
    assert len(made) == 1 and server._proc is None
    pids = [int(p) for p in marker.read_text().split()] if marker.exists() else []
    assert all(gone(p) for p in pids)


def test_ctrl_c_during_a_chunked_batch_hands_over_only_the_runs_not_handed(
        spin: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    slow = req(["sh", "-c", f"sleep 30 & echo $! > {marker}; wait"])
    quick = req([str(spin), "1000"])
    handed: list[RunOutcome] = []

    server = LaunchServer()
    rest = interrupted(lambda: server.run_batch([quick] * 30 + [slow, quick],
                                                on_chunk=handed.extend, chunk_s=0.001)).outcomes
    assert handed and len(handed) + len(rest) == 30  # every finished run, once
    assert all(o.status == "ok" and o.values["ops"] == 1000 for o in handed + rest)
    assert gone(int(marker.read_text()))
    server.close()


def test_chunks_that_arrive_while_perflab_is_busy_are_all_read(spin: Path) -> None:
    """The server does not wait for perflab between chunks: when perflab is slow with one
    (a database restart, say), the later chunks and the end wait in the pipe, and perflab
    reads them all (a buffered reader once hid them from select: a hang)."""
    import threading

    quick = req([str(spin), "1000"])
    got: list[int] = []
    result: list[list[RunOutcome]] = []

    def keep(chunk: list[RunOutcome]) -> None:
        if not got:
            time.sleep(0.5)  # meanwhile the server makes the other runs and ends the batch
        got.append(len(chunk))

    def go() -> None:
        with LaunchServer() as server:
            result.append(server.run_batch([quick] * 60, on_chunk=keep, chunk_s=0.001))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "run_batch hung on chunks already read into its buffer"
    assert len(result[0]) == 60 and sum(got) == 60 and len(got) >= 2
