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
import multiprocessing as mp
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "..", "src"))
from perflab import region  # noqa: E402

HOUR_S = 3600.0
fired = 0


def on_fire() -> None:  # never expected to run
    global fired
    fired += 1


def die(msg: str) -> None:
    print(f"timers/python: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_flags(argv: list[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--") or len(a) < 3:
            die(f"unexpected argument '{a}'; parameters are --name=value")
        body = a[2:]
        if "=" in body:
            k, v = body.split("=", 1)
        elif i + 1 < len(argv):
            i += 1
            k, v = body, argv[i]
        else:
            die(f"--{body} needs a value; write --{body}=VALUE")
        flags[k] = v
        i += 1
    return flags


def int_flag(f: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    if name not in f:
        return default
    v = f.pop(name)
    try:
        x = int(v)
    except ValueError:
        die(f"--{name}={v} is not a whole number; give one in [{lo}, {hi}]")
    if not lo <= x <= hi:
        die(f"--{name}={v} is out of range; give a value in [{lo}, {hi}]")
    return x


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
    f = parse_flags(argv)
    threads = int_flag(f, "threads", 1, 1, 256)
    iterations = int_flag(f, "iterations", 0, 0, 1_000_000_000)
    live = int_flag(f, "live", 0, 0, 10_000_000)
    yield_every = int_flag(f, "yield_every", 1024, 0, 1_000_000_000)
    warmup = int_flag(f, "warmup", 2000, 0, 100_000_000)
    if f:
        die(f"unknown parameter --{next(iter(f))}; known: threads, live, yield_every, "
            "iterations, warmup")

    runner = Runner(0, yield_every)
    runner.run(warmup)
    n = iterations
    if n == 0:  # calibrate: grow a batch until it lasts 50 ms, then scale to about 0.5 s
        b = 100
        while True:
            el, _ = runner.run(b)
            if el >= 50_000_000 or b >= 1_000_000_000:
                n = max(100, min(50_000_000, int(5e8 / max(el / b, 0.1))))
                break
            b *= 2
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
        ctx = mp.get_context("fork")
        ready, go, out = ctx.Barrier(threads + 1), ctx.Barrier(threads + 1), ctx.Queue()
        shares = [live // threads + (1 if t < live % threads else 0) for t in range(threads)]
        procs = [ctx.Process(target=worker, args=(s, yield_every, warmup, n, ready, go, out))
                 for s in shares]
        for p in procs:
            p.start()
        ready.wait()
        region.begin()
        go.wait()
        results = [out.get() for _ in procs]
        region.end()
        for p in procs:
            p.join()
        per_ns = [r[0] for r in results]
        cancelled = sum(r[1] for r in results)
        live_cancelled = sum(r[2] for r in results)
        queue_size = sum(r[3] for r in results)
        fired_total = fired + sum(r[4] for r in results)

    ops = n * threads
    max_ns = max(per_ns)
    print(json.dumps({
        "workload": "timers/python",
        "ops": ops,
        "threads": threads,
        "per_thread_ns": per_ns,
        "ns_per_op": sum(x / n for x in per_ns) / threads,
        "ops_per_s": ops * 1e9 / max_ns if max_ns else 0.0,
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
