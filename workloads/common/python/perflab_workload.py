"""Shared scaffolding of perflab's Python workloads: flags, the process barrier, the JSON head.

Standard library only (workloads run under any python3 >= 3.11).  A workload in
``workloads/<family>/python/`` puts this folder on ``sys.path`` relative to its own file and
imports it; this module in turn finds the repository's ``src/perflab/region_client.py`` relative to
itself, so the timed-region protocol is the one perflab itself implements.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
from perflab import region_client as region  # noqa: E402


class Flags:
    """``--name=value`` / ``--name value`` parameters; every error exits 2 with one line."""

    def __init__(self, prog: str, argv: list[str]) -> None:
        self.prog = prog
        self.values: dict[str, str] = {}
        i = 0
        while i < len(argv):
            a = argv[i]
            if not a.startswith("--") or len(a) < 3:
                self.die(f"unexpected argument '{a}'; parameters are --name=value")
            body = a[2:]
            if "=" in body:
                k, v = body.split("=", 1)
            elif i + 1 < len(argv):
                i += 1
                k, v = body, argv[i]
            else:
                self.die(f"--{body} needs a value; write --{body}=VALUE")
            self.values[k] = v
            i += 1

    def die(self, msg: str) -> NoReturn:
        print(f"{self.prog}: {msg}", file=sys.stderr)
        sys.exit(2)

    def int_flag(self, name: str, default: int, lo: int, hi: int) -> int:
        if name not in self.values:
            return default
        v = self.values.pop(name)
        try:
            x = int(v)
        except ValueError:
            self.die(f"--{name}={v} is not a whole number; give one in [{lo}, {hi}]")
        if not lo <= x <= hi:
            self.die(f"--{name}={v} is out of range; give a value in [{lo}, {hi}]")
        return x

    def choice_flag(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        v = self.values.pop(name, default)
        if v not in choices:
            self.die(f"--{name}={v} is unknown; choose one of {', '.join(choices)}")
        return v

    def reject_unknown(self, known: str) -> None:
        """Exit 2 naming the first parameter nobody read; ``known`` lists the accepted ones."""
        if self.values:
            self.die(f"unknown parameter --{next(iter(self.values))}; known: {known}")


def calibrate(measure: Callable[[int], int], first: int) -> int:
    """Grow a batch from ``first`` until it lasts 50 ms (``measure(b)`` = elapsed ns), then
    scale to about 0.5 s."""
    b = first
    while True:
        el = measure(b)
        if el >= 50_000_000 or b >= 1_000_000_000:
            return max(100, min(50_000_000, int(5e8 / max(el / b, 0.1))))
        b *= 2


def run_processes(target: Callable[..., None], args: Sequence[tuple[Any, ...]]) -> list[Any]:
    """One forked process per ``args`` entry, released together; the timed region spans them.

    ``target(*a, ready, go, out)`` must warm up, wait on ``ready`` then ``go`` (two barriers),
    run its timed part and put one result on ``out``.  Returns the results (arrival order)."""
    ctx = mp.get_context("fork")  # the GIL: one process per "thread"
    n = len(args)
    ready, go, out = ctx.Barrier(n + 1), ctx.Barrier(n + 1), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, ready, go, out)) for a in args]
    for p in procs:
        p.start()
    ready.wait()
    region.begin()
    go.wait()
    results = [out.get() for _ in procs]
    region.end()
    for p in procs:
        p.join()
    return results


def result_head(workload: str, n: int, per_ns: list[int]) -> dict[str, Any]:
    """The contract's first keys: n operations per thread, per_ns the timed ns of each."""
    threads = len(per_ns)
    ops = n * threads
    max_ns = max(per_ns)
    return {
        "workload": workload,
        "ops": ops,
        "threads": threads,
        "per_thread_ns": per_ns,
        "ns_per_op": sum(x / n for x in per_ns) / threads,
        "ops_per_s": ops * 1e9 / max_ns if max_ns else 0.0,
    }
