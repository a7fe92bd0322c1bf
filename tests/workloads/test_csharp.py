"""The C# workloads on Mono and CoreCLR: eh/csharp and timers/csharp.

Each test runs the real program (built through the registry when needed, skipped where Mono is
missing) with a small fixed --iterations and checks what the parameters imply: checksums, the JSON
contract, that the depth frames are real (the stack at the throw point grows by exactly one frame
per level in sync mode, by the async state machine's frames per level in async mode), that the
hardware kinds really fault (strace sees the SIGSEGV/SIGFPE), that partitioned really uses one
queue per thread, that firing timers fire, the timed-region protocol, and that bad flags exit 2.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from perflab.workloads.registry import Workload
from workload_helpers import (
    CSHARP_RUNTIMES,
    built_workload,
    check_per_thread,
    csharp_runtime,
    refuses,
    region_server,
    run_workload,
)

pytestmark = pytest.mark.system


@pytest.fixture(params=CSHARP_RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    """Each runtime the one assembly runs on (skipped with one line where not installed)."""
    return csharp_runtime(request.param)


def _result(wl: Workload, env: dict[str, str] | None = None, **params: Any) -> dict[str, Any]:
    out = run_workload(wl, params, env=env)
    check_per_thread(out, params)
    assert out["ops_per_s"] == pytest.approx(out["ops"] * 1e9 / max(out["per_thread_ns"]),
                                             rel=1e-3)
    for k, v in params.items():
        if k in out["params"]:
            assert str(out["params"][k]) == str(v)
    return out


# ---- eh/csharp -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["software", "hardware", "divide", "error"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_eh_checksum_every_kind_and_mode(kind: str, mode: str, runtime: str) -> None:
    wl = built_workload("eh/csharp")
    out = _result(wl, depth=3, kind=kind, mode=mode, iterations=500, warmup=100,
                  runtime=runtime)
    assert out["checksum"] == 500  # every throw caught (error: every error value seen)
    # The runtime asked for is the one that ran (its own name for itself).
    assert out["runtime"].startswith("mono 6." if runtime == "mono" else ".NET Core 3.1.")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_eh_depth_really_adds_frames(mode: str, runtime: str) -> None:
    wl = built_workload("eh/csharp")
    frames = {d: _result(wl, depth=d, mode=mode, iterations=50, warmup=0,
                         runtime=runtime)["stack_frames_at_throw"]
              for d in (0, 1, 10)}
    if mode == "sync":
        # One real frame per level: nothing inlined, nothing turned into a tail call.
        assert frames[1] - frames[0] == 1 and frames[10] - frames[0] == 10, frames
    else:
        # Each async level is the method's stub, the builder's Start and the state machine's
        # MoveNext (Mono: 3 frames; CoreCLR 3.1: 4): the same number for every level.
        per = frames[10] - frames[1]
        assert per >= 9 and per % 9 == 0, frames
    # The caught exception's own stack trace covers the chain too (sync: every frame).
    if mode == "sync":
        t0 = _result(wl, depth=0, mode=mode, iterations=10, warmup=0,
                     runtime=runtime)["trace_frames"]
        t10 = _result(wl, depth=10, mode=mode, iterations=10, warmup=0,
                      runtime=runtime)["trace_frames"]
        assert t10 - t0 == 10


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize(("kind", "signal"), [("hardware", "SIGSEGV"), ("divide", "SIGFPE"),
                                              ("software", None)])
def test_eh_hardware_kinds_really_fault(kind: str, signal: str | None, runtime: str) -> None:
    wl = built_workload("eh/csharp")
    argv, _ = wl.command({"depth": "2", "kind": kind, "iterations": "300", "warmup": "0",
                          "runtime": runtime})
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=none", "-e",
                           "signal=SIGSEGV,SIGFPE", *argv],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    segv = proc.stderr.count("--- SIGSEGV")
    fpe = proc.stderr.count("--- SIGFPE")
    if signal is None:
        assert segv == 0 and fpe == 0
    else:
        # One fault per exception (plus the one measured before the loop).
        assert (segv if signal == "SIGSEGV" else fpe) >= 300


def test_eh_threads_and_region(runtime: str) -> None:
    wl = built_workload("eh/csharp")
    with region_server() as (env, got):
        out = _result(wl, env=env, depth=2, threads=2, iterations=1000, warmup=100,
                      runtime=runtime)
    assert out["checksum"] == 2000 and out["parallelism"] == "threads"
    assert got == ["enable", "disable"]


def test_eh_bad_params_exit_2() -> None:
    wl = built_workload("eh/csharp")
    for bad in ("--kind=bogus", "--mode=threaded", "--depth=-1", "--threads=0", "--colour=1"):
        assert refuses(wl, bad).stdout.strip() == ""


# ---- timers/csharp ---------------------------------------------------------------------------

@pytest.mark.parametrize("queue", ["global", "partitioned", "shared"])
@pytest.mark.parametrize("cancel", ["same", "other"])
def test_timers_churn_checksum(queue: str, cancel: str, runtime: str) -> None:
    wl = built_workload("timers/csharp")
    out = _result(wl, queue=queue, cancel=cancel, threads=2, live=100, iterations=5000,
                  warmup=1000, runtime=runtime)
    assert out["runtime"].startswith("mono 6." if runtime == "mono" else ".NET Core 3.1.")
    assert out["checksum"] == 10000  # every timer created was disposed
    assert out["fired"] == 0 and out["live_disposed"] == 100  # hour-long timers never fire
    # cancel=other really disposes on another thread (the disposer compares thread ids).
    assert out["cross_thread_cancels"] == (10000 if cancel == "other" else 0)
    if queue == "partitioned":
        # One queue per thread, each receiving exactly its thread's timers (plus its live share).
        assert out["queues"] == 2 and out["queue_inserts"] == [5050, 5050]
    elif queue == "shared":
        assert out["queues"] == 1 and out["queue_inserts"] == [10100]
    else:
        assert out["queues"] == 1 and out["queue_inserts"] == []


@pytest.mark.parametrize("queue", ["global", "partitioned"])
def test_timers_fire(queue: str, runtime: str) -> None:
    wl = built_workload("timers/csharp")
    out = _result(wl, queue=queue, fire=2000, threads=2, iterations=300, warmup=100,
                  runtime=runtime)
    assert out["fired"] == 600 and out["checksum"] == 600
    assert out["fire_rate_per_s"] > 0
    # A timer due in 2 ms cannot fire early; lateness is measured against the requested time.
    assert 0 <= out["lateness_p50_ns"] <= out["lateness_p99_ns"]
    assert out["lateness_p99_ns"] < 10e9


def test_timers_region_and_bad_params(runtime: str) -> None:
    wl = built_workload("timers/csharp")
    with region_server() as (env, got):
        _result(wl, env=env, iterations=1000, warmup=0, runtime=runtime)
    assert got == ["enable", "disable"]
    for bad in ("--queue=percpu", "--cancel=later", "--fire=-1", "--threads=x", "--wx=off"):
        assert refuses(wl, bad).stdout.strip() == ""
