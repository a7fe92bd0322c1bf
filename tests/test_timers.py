"""The timers family: create and cancel never-firing timers in C, Go, Java, Node and Python.

Each test runs the real program (built through the registry when needed) with a small fixed
--iterations and checks the checksum (timers cancelled == timers created), the JSON contract,
that live timers neither fire nor get lost, the queue-size behaviour where the runtime exposes it
(Java's remove-on-cancel policy), and that bad parameters exit 2.  A workload whose runtime is
missing is skipped.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from perflab.workloads.registry import Workload
from workload_helpers import CONTRACT_KEYS, built_workload, refuses

pytestmark = pytest.mark.slow


def _result(wl: Workload, **params: Any) -> dict[str, Any]:
    argv, _ = wl.command({k: str(v) for k, v in params.items()})
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert CONTRACT_KEYS <= set(out)
    threads = int(params.get("threads", 1))
    n = int(params["iterations"])
    assert out["threads"] == threads and len(out["per_thread_ns"]) == threads
    assert out["ops"] == n * threads
    assert all(ns > 0 for ns in out["per_thread_ns"])
    assert out["ns_per_op"] == pytest.approx(
        sum(ns / n for ns in out["per_thread_ns"]) / threads, rel=1e-3)
    assert out["ops_per_s"] > 0
    # The proof the work happened: every timer created was cancelled.
    assert out["checksum"] == n * threads
    if "fired" in out:
        assert out["fired"] == 0  # an hour-long timeout never fires during a test
    return out


@pytest.mark.parametrize("kind", ["timerfd", "posix", "heap"])
def test_c_kinds(kind: str) -> None:
    wl = built_workload("timers/c")
    out = _result(wl, kind=kind, threads=2, live=100, iterations=3000)
    assert out["params"]["kind"] == kind and out["params"]["live"] == 100
    if kind != "heap":  # the kernel timers kept alive were all still armed at the end
        assert out["live_cancelled"] == 100


def test_c_bad_params() -> None:
    wl = built_workload("timers/c")
    refuses(wl, "--kind=itimer")
    refuses(wl, "--live=-1")


def test_go() -> None:
    wl = built_workload("timers/go")
    out = _result(wl, threads=2, live=51, iterations=5000)
    assert out["live_cancelled"] == 51  # all live timers still pending, none lost or fired
    refuses(wl, "--threads=0")


def test_java_remove_on_cancel_policy() -> None:
    wl = built_workload("timers/java")
    n, live = 3000, 40
    keep = _result(wl, remove_on_cancel="false", threads=2, live=live, iterations=n, warmup=500)
    drop = _result(wl, remove_on_cancel="true", threads=2, live=live, iterations=n, warmup=500)
    # Without the policy every cancelled task stays queued until its hour is up.
    assert keep["queue_size"] == 2 * n + live
    assert drop["queue_size"] == live
    assert keep["live_cancelled"] == live and drop["live_cancelled"] == live
    assert keep["params"]["remove_on_cancel"] is False
    assert drop["params"]["remove_on_cancel"] is True


def test_java_bad_params() -> None:
    wl = built_workload("timers/java")
    refuses(wl, "--remove_on_cancel=maybe")


@pytest.mark.parametrize("threads", [1, 2])
def test_node(threads: int) -> None:
    wl = built_workload("timers/node")
    out = _result(wl, threads=threads, live=30, iterations=4000, warmup=500)
    assert out["live_cancelled"] == 30
    assert out["parallelism"] == ("main-thread" if threads == 1 else "worker_threads")


def test_node_bad_params() -> None:
    wl = built_workload("timers/node")
    refuses(wl, "--live=x")


def test_python() -> None:
    wl = built_workload("timers/python")
    out = _result(wl, threads=1, live=25, iterations=3000, warmup=100)
    assert out["live_cancelled"] == 25
    assert out["queue_size"] >= 25  # the live handles are still in the loop's heap
    out = _result(wl, threads=2, live=10, iterations=2000, warmup=100, yield_every=0)
    assert out["parallelism"] == "processes" and out["live_cancelled"] == 10
    refuses(wl, "--yield_every=-5")
