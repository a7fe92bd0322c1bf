"""The timers family: create and cancel never-firing timers in C, Go, Java, Node and Python.

Each test runs the real program (built through the registry when needed) with a small fixed
--iterations and checks the checksum (timers cancelled == timers created), the JSON contract,
that live timers neither fire nor get lost, the queue-size behaviour where the runtime exposes it
(Java's remove-on-cancel policy), and that bad parameters exit 2.  A workload whose runtime is
missing is skipped.
"""

from __future__ import annotations

from typing import Any

import pytest

from perflab.workloads.registry import Workload
from workload_helpers import built_workload, check_per_thread, refuses, run_workload

pytestmark = pytest.mark.system


def _result(wl: Workload, **params: Any) -> dict[str, Any]:
    out = _run(wl, **params)
    if "fired" in out:
        assert out["fired"] == 0  # an hour-long timeout never fires during a test
    return out


def _run(wl: Workload, **params: Any) -> dict[str, Any]:
    out = run_workload(wl, params)
    check_per_thread(out, params)
    threads, n = int(params.get("threads", 1)), int(params["iterations"])
    assert out["ops_per_s"] > 0
    # The proof the work happened: every timer created was cancelled (or, --fire, fired).
    assert out["checksum"] == n * threads
    return out


@pytest.mark.parametrize("kind", ["timerfd", "posix", "heap", "queue"])
def test_c_kinds(kind: str) -> None:
    wl = built_workload("timers/c")
    out = _result(wl, kind=kind, threads=2, live=100, iterations=3000)
    assert out["params"]["kind"] == kind and out["params"]["live"] == 100
    if kind != "heap":  # the timers kept alive were all still armed at the end
        assert out["live_cancelled"] == 100
    assert out["cross_thread_cancels"] == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_c_partitioned_queue_really_uses_one_queue_per_thread(threads: int) -> None:
    wl = built_workload("timers/c")
    glob = _result(wl, kind="queue", queue="global", threads=threads, iterations=3000)
    part = _result(wl, kind="queue", queue="partitioned", threads=threads, iterations=3000)
    # `queues` counts the queues that received timers during the timed region.
    assert glob["queues"] == 1 and glob["firing_threads"] == 1
    assert part["queues"] == threads and part["firing_threads"] == threads
    # Hour-long timers do not wake a firing thread per operation: only a nearer deadline does
    # (a wake-up left over from the warm-up may land in the timed region).
    assert glob["firing_wakeups"] < 10 and part["firing_wakeups"] < 10


@pytest.mark.parametrize("kind,queue", [("queue", "global"), ("queue", "partitioned"),
                                        ("timerfd", "global"), ("posix", "global")])
def test_c_cancel_other_cancels_on_another_thread(kind: str, queue: str) -> None:
    wl = built_workload("timers/c")
    n = 3000
    other = _result(wl, kind=kind, queue=queue, cancel="other", threads=2, iterations=n)
    same = _result(wl, kind=kind, queue=queue, cancel="same", threads=2, iterations=n)
    # kind=queue compares the cancelling thread's id with the creator's at every cancel.
    assert other["cross_thread_cancels"] == 2 * n
    assert same["cross_thread_cancels"] == 0
    assert other["params"]["cancel"] == "other"


@pytest.mark.parametrize("queue", ["global", "partitioned"])
def test_c_fire_really_fires(queue: str) -> None:
    wl = built_workload("timers/c")
    n, fire_us = 2000, 300
    out = _run(wl, kind="queue", queue=queue, fire=fire_us, threads=2, iterations=n)
    assert out["fired"] == out["checksum"] == 2 * n
    assert out["fire_rate_per_s"] > 0
    # Lateness is measured in the callback: never early, p99 at least p50.
    assert 0 <= out["lateness_p50_ns"] <= out["lateness_p99_ns"] <= out["lateness_max_ns"]
    # Each thread waited for its last timer: at least the delay.
    assert min(out["per_thread_ns"]) >= fire_us * 1000
    assert out["firing_wakeups"] > 0
    never = _result(wl, kind="queue", queue=queue, threads=2, iterations=n)
    assert "lateness_p50_ns" not in never and never["fired"] == 0


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


@pytest.mark.parametrize("threads", [1, 2])
def test_java_partitioned_uses_one_executor_per_thread(threads: int) -> None:
    wl = built_workload("timers/java")
    n = 2000
    glob = _result(wl, queue="global", remove_on_cancel="true", threads=threads, iterations=n,
                   warmup=500)
    part = _result(wl, queue="partitioned", remove_on_cancel="true", threads=threads,
                   iterations=n, warmup=500)
    # `queues` counts the executors that received tasks during the timed region.
    assert glob["queues"] == 1 and part["queues"] == threads
    assert part["firing_threads"] == threads


def test_java_cancel_other_cancels_on_another_thread() -> None:
    wl = built_workload("timers/java")
    n = 2000
    for queue in ("global", "partitioned"):
        other = _result(wl, cancel="other", queue=queue, remove_on_cancel="true", threads=2,
                        iterations=n, warmup=500)
        assert other["cross_thread_cancels"] == 2 * n
        assert other["queue_size"] == 0  # every task removed on cancel, by the partner
    same = _result(wl, cancel="same", threads=2, iterations=n, warmup=500)
    assert same["cross_thread_cancels"] == 0


@pytest.mark.parametrize("queue", ["global", "partitioned"])
def test_java_fire_really_fires(queue: str) -> None:
    wl = built_workload("timers/java")
    n, fire_us = 1000, 300
    out = _run(wl, queue=queue, fire=fire_us, threads=2, iterations=n, warmup=500)
    assert out["fired"] == out["checksum"] == 2 * n
    assert out["fire_rate_per_s"] > 0
    assert 0 <= out["lateness_p50_ns"] <= out["lateness_p99_ns"] <= out["lateness_max_ns"]
    assert min(out["per_thread_ns"]) >= fire_us * 1000
    assert out["queue_size"] == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_node(threads: int) -> None:
    wl = built_workload("timers/node")
    out = _result(wl, threads=threads, live=30, iterations=4000, warmup=500)
    assert out["live_cancelled"] == 30
    assert out["parallelism"] == ("main-thread" if threads == 1 else "worker_threads")


def test_python() -> None:
    wl = built_workload("timers/python")
    out = _result(wl, threads=1, live=25, iterations=3000, warmup=100)
    assert out["live_cancelled"] == 25
    assert out["queue_size"] >= 25  # the live handles are still in the loop's heap
    out = _result(wl, threads=2, live=10, iterations=2000, warmup=100, yield_every=0)
    assert out["parallelism"] == "processes" and out["live_cancelled"] == 10
    refuses(wl, "--yield_every=-5")


BAD_PARAMS = [
    ("timers/c", ["--kind=itimer"]), ("timers/c", ["--live=-1"]),
    ("timers/c", ["--cancel=later"]), ("timers/c", ["--queue=percpu"]),
    ("timers/c", ["--fire=-5"]),
    # Combinations that make no sense: one line naming the flag.
    ("timers/c", ["--queue=partitioned", "--kind=timerfd"]),
    ("timers/c", ["--cancel=other", "--kind=heap"]),
    ("timers/c", ["--fire=100", "--kind=posix"]),
    ("timers/c", ["--fire=100", "--kind=queue", "--cancel=other"]),
    ("timers/java", ["--remove_on_cancel=maybe"]), ("timers/java", ["--cancel=later"]),
    ("timers/java", ["--queue=percpu"]), ("timers/java", ["--fire=-1"]),
    ("timers/java", ["--fire=100", "--cancel=other"]),
    ("timers/node", ["--live=x"]),
]


@pytest.mark.parametrize("name,args", BAD_PARAMS, ids=[f"{n}:{' '.join(a)}" for n, a in BAD_PARAMS])
def test_bad_params(name: str, args: list[str]) -> None:
    refuses(built_workload(name), *args)
