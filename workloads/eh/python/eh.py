#!/usr/bin/env python3
"""perflab workload eh/python: raise/except through DEPTH frames (after dotnet/runtime#77568).

Kinds: software (``raise ValueError``), hardware (an AttributeError from ``None.x``: the
interpreter's implicit fault), error (an error code returned through the same frames: the
baseline).  Modes: sync, async (a chain of coroutines, each awaiting the next).  The GIL makes
threads meaningless for a CPU-bound loop, so threads > 1 runs one *process* per thread (fork),
all released from one barrier; the JSON says "parallelism": "processes".

Standard library only; runs under any python3 >= 3.11.  The timed-region helper comes from the
repository's src/perflab/region.py, found relative to this file.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "..", "src"))
from perflab import region  # noqa: E402

KINDS = ("software", "hardware", "error")
MODES = ("sync", "async")


def die(msg: str) -> None:
    print(f"eh/python: {msg}", file=sys.stderr)
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


def choice_flag(f: dict[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    v = f.pop(name, default)
    if v not in choices:
        die(f"--{name}={v} is unknown; choose one of {', '.join(choices)}")
    return v


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
    f = parse_flags(argv)
    depth = int_flag(f, "depth", 0, 0, 10000)
    kind = choice_flag(f, "kind", "software", KINDS)
    mode = choice_flag(f, "mode", "sync", MODES)
    threads = int_flag(f, "threads", 1, 1, 256)
    iterations = int_flag(f, "iterations", 0, 0, 1_000_000_000)
    # The 3.11 specialising interpreter settles within a few dozen executions of each
    # instruction; a couple of thousand iterations is plenty.
    warmup = int_flag(f, "warmup", 2000, 0, 100_000_000)
    if f:
        die(f"unknown parameter --{next(iter(f))}; known: depth, kind, mode, threads, "
            "iterations, warmup")
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
        b = 10
        while True:
            el, _ = timed(b)
            if el >= 50_000_000 or b >= 1_000_000_000:
                n = max(100, min(50_000_000, int(5e8 / max(el / b, 0.1))))
                break
            b *= 2

    if threads == 1:
        region.begin()
        ns, caught = timed(n)
        region.end()
        per_ns = [ns]
    else:
        ctx = mp.get_context("fork")
        ready, go, out = ctx.Barrier(threads + 1), ctx.Barrier(threads + 1), ctx.Queue()
        procs = [ctx.Process(target=worker, args=(kind, mode, depth, warmed, n, ready, go, out))
                 for _ in range(threads)]
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
        caught = sum(r[1] for r in results)

    ops = n * threads
    max_ns = max(per_ns)
    print(json.dumps({
        "workload": "eh/python",
        "ops": ops,
        "threads": threads,
        "per_thread_ns": per_ns,
        "ns_per_op": sum(x / n for x in per_ns) / threads,
        "ops_per_s": ops * 1e9 / max_ns if max_ns else 0.0,
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
