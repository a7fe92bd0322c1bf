#!/usr/bin/env python3
"""perflab workload timers/python: asyncio ``loop.call_later`` + ``cancel`` churn of timers that
never fire (an hour), after dotnet/coreclr#14527.

asyncio keeps one heap of timer handles per event loop; a cancelled handle stays in the heap
until the loop next runs and finds more than half of the heap cancelled.  The hot loop yields to
the event loop every --yield_every operations (default 1024; 0 = never) so that clean-up happens
as in a live application.  The GIL makes threads meaningless, so threads > 1 runs one *process*
(own loop) per thread, all released from one barrier ("parallelism": "processes").
checksum = handles cancelled (must equal the handles created).

Standard library only; runs under any python3 >= 3.11.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

# Flags, the process barrier and the JSON head are shared with the other Python workloads.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "common", "python"))
from perflab_workload import Flags, calibrate, region, result_head, run_processes  # noqa: E402

HOUR_S = 3600.0
fired = 0


def on_fire() -> None:  # never expected to run
    global fired
    fired += 1


async def churn(n: int, yield_every: int) -> tuple[int, int]:
    """Create and cancel n timers; returns (elapsed ns, cancelled)."""
    loop = asyncio.get_running_loop()
    cancelled = 0
    t0 = time.perf_counter_ns()
    for i in range(n):
        h = loop.call_later(HOUR_S, on_fire)
        h.cancel()
        if h.cancelled():
            cancelled += 1
        if yield_every and i % yield_every == yield_every - 1:
            await asyncio.sleep(0)  # one loop turn: it drops cancelled handles from its heap
    return time.perf_counter_ns() - t0, cancelled


class Runner:
    """One event loop, its live timers and the churn, reusable across batches."""

    def __init__(self, live: int, yield_every: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.yield_every = yield_every
        self.live = [self.loop.call_later(HOUR_S, on_fire) for _ in range(live)]

    def run(self, n: int) -> tuple[int, int]:
        return self.loop.run_until_complete(churn(n, self.yield_every))

    def queue_size(self) -> int:
        # asyncio's heap of scheduled handles (a private attribute: -1 if it ever goes away).
        sched = getattr(self.loop, "_scheduled", None)
        return len(sched) if sched is not None else -1

    def close(self) -> int:
        c = 0
        for h in self.live:
            h.cancel()
            c += h.cancelled()
        self.loop.close()
        return c


def worker(live: int, yield_every: int, warmup: int, n: int, ready, go, out) -> None:  # noqa: ANN001
    r = Runner(live, yield_every)
    r.run(warmup)
    ready.wait()
    go.wait()
    ns, c = r.run(n)
    qs = r.queue_size()
    out.put((ns, c, r.close(), qs, fired))


def main(argv: list[str]) -> None:
    f = Flags("timers/python", argv)
    threads = f.int_flag("threads", 1, 1, 256)
    iterations = f.int_flag("iterations", 0, 0, 1_000_000_000)
    live = f.int_flag("live", 0, 0, 10_000_000)
    yield_every = f.int_flag("yield_every", 1024, 0, 1_000_000_000)
    warmup = f.int_flag("warmup", 2000, 0, 100_000_000)
    f.reject_unknown("threads, live, yield_every, iterations, warmup")

    runner = Runner(0, yield_every)
    runner.run(warmup)
    n = iterations
    if n == 0:  # calibrate: grow a batch until it lasts 50 ms, then scale to about 0.5 s
        n = calibrate(lambda b: runner.run(b)[0], 100)
    runner.close()

    if threads == 1:
        r = Runner(live, yield_every)
        region.begin()
        ns, cancelled = r.run(n)
        region.end()
        queue_size = r.queue_size()
        live_cancelled = r.close()
        per_ns = [ns]
        fired_total = fired
    else:
        shares = [live // threads + (1 if t < live % threads else 0) for t in range(threads)]
        results = run_processes(worker, [(s, yield_every, warmup, n) for s in shares])
        per_ns = [r[0] for r in results]
        cancelled = sum(r[1] for r in results)
        live_cancelled = sum(r[2] for r in results)
        queue_size = sum(r[3] for r in results)
        fired_total = fired + sum(r[4] for r in results)

    ops = n * threads
    print(json.dumps({
        **result_head("timers/python", n, per_ns),
        "checksum": cancelled,
        "created": ops,
        "fired": fired_total,
        "live_cancelled": live_cancelled,
        "queue_size": queue_size,
        "iterations": n,
        "calibrated": iterations == 0,
        "iterations_per_thread": n,
        "timeout_s": 3600,
        "parallelism": "processes" if threads > 1 else "main-thread",
        "runtime": sys.version.split()[0],
        "params": {"threads": threads, "live": live, "yield_every": yield_every,
                   "iterations": iterations},
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
