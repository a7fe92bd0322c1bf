#!/usr/bin/env python3
"""perflab workload eh/python: raise/except through DEPTH frames (after dotnet/runtime#77568).

Kinds: software (``raise ValueError``), hardware (an AttributeError from ``None.x``: the
interpreter's implicit fault), error (an error code returned through the same frames: the
baseline).  Modes: sync, async (a chain of coroutines, each awaiting the next).  The GIL makes
threads meaningless for a CPU-bound loop, so threads > 1 runs one *process* per thread (fork),
all released from one barrier; the JSON says "parallelism": "processes".

Standard library only; runs under any python3 >= 3.11.  The timed-region helper comes from the
repository's src/perflab/region_client.py, through workloads/common/python/perflab_workload.py (both
found relative to this file).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable

# Flags, the process barrier and the JSON head are shared with the other Python workloads.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "common", "python"))
from perflab_workload import Flags, calibrate, region, result_head, run_processes  # noqa: E402

KINDS = ("software", "hardware", "error")
MODES = ("sync", "async")


class Holder:
    nul: object = None  # a class attribute, so every read is a real lookup
    fail = 1


# ---- the chains ----
def chain_software(n: int) -> int:
    if n <= 1:
        raise ValueError("depth")
    return chain_software(n - 1) + 1


def chain_hardware(n: int, h: object) -> int:
    if n <= 1:
        return h.x  # type: ignore[attr-defined]  # h is None: AttributeError
    return chain_hardware(n - 1, h) + 1


def chain_error(n: int, fail: int) -> int:
    if n <= 1:
        return -1 if fail else 0
    r = chain_error(n - 1, fail)
    if r < 0:
        return r
    return r + 1


async def achain_software(n: int) -> int:
    if n <= 1:
        raise ValueError("depth")
    return await achain_software(n - 1) + 1


async def achain_hardware(n: int, h: object) -> int:
    if n <= 1:
        return h.x  # type: ignore[attr-defined]
    return await achain_hardware(n - 1, h) + 1


async def achain_error(n: int, fail: int) -> int:
    if n <= 1:
        return -1 if fail else 0
    r = await achain_error(n - 1, fail)
    if r < 0:
        return r
    return r + 1


# ---- one loop per kind and mode; each returns the number caught ----
def loop_software(depth: int, n: int) -> int:
    c = 0
    for _ in range(n):
        try:
            if depth == 0:
                raise ValueError("depth")
            chain_software(depth)
        except ValueError:
            c += 1
    return c


def loop_hardware(depth: int, n: int) -> int:
    c = 0
    h = Holder.nul
    for _ in range(n):
        try:
            if depth == 0:
                h.x  # type: ignore[attr-defined]  # noqa: B018
            else:
                chain_hardware(depth, h)
        except AttributeError:
            c += 1
    return c


def loop_error(depth: int, n: int) -> int:
    c = 0
    fail = Holder.fail
    for _ in range(n):
        r = -fail if depth == 0 else chain_error(depth, fail)
        if r < 0:
            c += 1
    return c


async def aloop_software(depth: int, n: int) -> int:
    c = 0
    for _ in range(n):
        try:
            if depth == 0:
                raise ValueError("depth")
            await achain_software(depth)
        except ValueError:
            c += 1
    return c


async def aloop_hardware(depth: int, n: int) -> int:
    c = 0
    h = Holder.nul
    for _ in range(n):
        try:
            if depth == 0:
                h.x  # type: ignore[attr-defined]  # noqa: B018
            else:
                await achain_hardware(depth, h)
        except AttributeError:
            c += 1
    return c


async def aloop_error(depth: int, n: int) -> int:
    c = 0
    fail = Holder.fail
    for _ in range(n):
        r = -fail if depth == 0 else await achain_error(depth, fail)
        if r < 0:
            c += 1
    return c


SYNC = {"software": loop_software, "hardware": loop_hardware, "error": loop_error}
ASYNC = {"software": aloop_software, "hardware": aloop_hardware, "error": aloop_error}


def make_timed(kind: str, mode: str, depth: int) -> Callable[[int], tuple[int, int]]:
    """A function running n iterations and returning (elapsed ns, caught)."""
    if mode == "sync":
        fn = SYNC[kind]

        def run_sync(n: int) -> tuple[int, int]:
            t0 = time.perf_counter_ns()
            c = fn(depth, n)
            return time.perf_counter_ns() - t0, c

        return run_sync
    afn = ASYNC[kind]
    loop = asyncio.new_event_loop()

    async def body(n: int) -> tuple[int, int]:
        t0 = time.perf_counter_ns()  # timed inside the coroutine: loop start-up excluded
        c = await afn(depth, n)
        return time.perf_counter_ns() - t0, c

    def run_async(n: int) -> tuple[int, int]:
        return loop.run_until_complete(body(n))

    return run_async


def traceback_frames(kind: str, mode: str, depth: int) -> int:
    """Frames in the traceback of one exception thrown through depth frames."""
    if kind == "error":
        return 0
    try:
        if depth == 0:
            if kind == "software":
                raise ValueError("depth")
            Holder.nul.x  # type: ignore[attr-defined]  # noqa: B018
        elif mode == "sync":
            if kind == "software":
                chain_software(depth)
            else:
                chain_hardware(depth, None)
        else:
            coro = achain_software(depth) if kind == "software" else achain_hardware(depth, None)
            asyncio.new_event_loop().run_until_complete(coro)
    except (ValueError, AttributeError) as e:
        tb = e.__traceback__
        frames = 0
        while tb is not None:
            frames += 1
            tb = tb.tb_next
        return frames
    return -1


def worker(kind: str, mode: str, depth: int, warmup: int, n: int, ready, go, out) -> None:  # noqa: ANN001
    timed = make_timed(kind, mode, depth)
    timed(warmup)
    ready.wait()
    go.wait()
    out.put(timed(n))


def main(argv: list[str]) -> None:
    f = Flags("eh/python", argv)
    depth = f.int_flag("depth", 0, 0, 10000)
    kind = f.choice_flag("kind", "software", KINDS)
    mode = f.choice_flag("mode", "sync", MODES)
    threads = f.int_flag("threads", 1, 1, 256)
    iterations = f.int_flag("iterations", 0, 0, 1_000_000_000)
    # The 3.11 specialising interpreter settles within a few dozen executions of each
    # instruction; a couple of thousand iterations is plenty.
    warmup = f.int_flag("warmup", 2000, 0, 100_000_000)
    f.reject_unknown("depth, kind, mode, threads, iterations, warmup")
    sys.setrecursionlimit(max(1000, depth + 200))

    timed = make_timed(kind, mode, depth)
    t0 = time.monotonic()
    warmed = 0
    while warmed < warmup and time.monotonic() - t0 < 1.0:
        b = min(500, warmup - warmed)
        timed(b)
        warmed += b
    n = iterations
    if n == 0:  # calibrate: grow a batch until it lasts 50 ms, then scale to about 0.5 s
        n = calibrate(lambda b: timed(b)[0], 10)

    if threads == 1:
        region.begin()
        ns, caught = timed(n)
        region.end()
        per_ns = [ns]
    else:
        results = run_processes(worker, [(kind, mode, depth, warmed, n)] * threads)
        per_ns = [r[0] for r in results]
        caught = sum(r[1] for r in results)

    print(json.dumps({
        **result_head("eh/python", n, per_ns),
        "checksum": caught,
        "iterations": n,
        "calibrated": iterations == 0,
        "iterations_per_thread": n,
        "warmup_iterations": warmed,
        "traceback_frames": traceback_frames(kind, mode, depth),
        "parallelism": "processes" if threads > 1 else "main-thread",
        "runtime": sys.version.split()[0],
        "params": {"depth": depth, "kind": kind, "mode": mode, "threads": threads,
                   "iterations": iterations},
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
