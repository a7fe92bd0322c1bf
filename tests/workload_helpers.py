"""Helpers shared by the workload tests (imported as a plain module: `tests` is on sys.path).

- ``CONTRACT_KEYS``: the keys every workload's JSON line carries.
- ``built_workload``: a registry workload, built if needed, or the test skipped.
- ``refuses``: run a workload with one bad flag and check it exits 2 with one line naming it.
- ``region_server``: serve perflab's timed-region fifos like perflab does, recording commands.
- ``run_workload``: run a workload outside perflab and return its checked JSON line.
- ``check_per_thread``: a threaded workload's ops and per-thread times add up.
- ``csharp_runtime``: a C# runtime to test on (mono, coreclr), the test skipped with one line
  where it is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from perflab.workloads import coreclr, registry
from perflab.workloads.registry import Workload

CONTRACT_KEYS = {"ops", "threads", "per_thread_ns", "ns_per_op", "ops_per_s", "checksum", "params"}


def built_workload(name: str) -> Workload:
    """The registry's workload `name`, built once if needed; skips when its runtime is missing."""
    wl = registry.get(name)
    ok, why = wl.available()
    if not ok:
        pytest.skip(f"{name}: {why}")
    if not wl.is_built():
        wl.build()
    return wl


CSHARP_RUNTIMES = ("mono", "coreclr")


def csharp_runtime(name: str) -> str:
    """``name`` when that C# runtime is installed here, else the test is skipped (one line)."""
    if name == "coreclr" and coreclr.root() is None:
        pytest.skip(f"CoreCLR {coreclr.VERSION} not installed -- {coreclr.INSTALL_HINT}")
    if name == "mono" and registry.tool_path("mono") is None:
        pytest.skip("Mono not installed -- apt-get install mono-mcs mono-runtime")
    return name


def refuses(wl: Workload, *args: str) -> subprocess.CompletedProcess[str]:
    """Run wl with its default flags replaced by args: it must exit 2 with one stderr line that
    names the first flag.  Returns the process for further checks."""
    argv, _ = wl.command()
    prefix = [a for a in argv if not any(a.startswith(f"--{p}=") for p in wl.params)]
    proc = subprocess.run(prefix + list(args), capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and args[0].split("=")[0] in lines[0], proc.stderr
    return proc


@contextmanager
def region_server() -> Iterator[tuple[dict[str, str], list[str]]]:
    """Yields (env, got): run a workload with env inside the block; after it, got holds the
    commands the workload sent ("enable", "disable"), each acknowledged as perflab does."""
    with tempfile.TemporaryDirectory() as d:
        ctl, ack = os.path.join(d, "ctl"), os.path.join(d, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        got: list[str] = []

        def serve() -> None:
            with open(ctl, "rb", buffering=0) as c, open(ack, "wb", buffering=0) as a:
                buf = b""
                while ch := c.read(1):
                    buf += ch
                    if ch == b"\n":
                        got.append(buf.decode().strip())
                        buf = b""
                        a.write(b"ack\n")

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        yield dict(os.environ, PERFLAB_CTL_FIFO=ctl, PERFLAB_ACK_FIFO=ack), got
        t.join(10)


def run_workload(wl: Workload, params: dict[str, Any], *, env: dict[str, str] | None = None,
                 timeout: float = 120) -> dict[str, Any]:
    """Run ``wl`` with ``params`` (values as on the command line) outside perflab: it exits 0
    and its last stdout line is the contract's JSON object."""
    argv, _ = wl.command({k: str(v) for k, v in params.items()})
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert CONTRACT_KEYS <= set(out)
    return out


def check_per_thread(out: dict[str, Any], params: dict[str, Any]) -> None:
    """A threaded workload's figures add up: one time per thread, ops = iterations x threads,
    ns_per_op the mean of the threads' ns per iteration."""
    threads = int(params.get("threads", 1))
    n = int(params["iterations"])
    assert out["threads"] == threads and len(out["per_thread_ns"]) == threads
    assert out["ops"] == n * threads
    assert all(ns > 0 for ns in out["per_thread_ns"])
    assert out["ns_per_op"] == pytest.approx(
        sum(ns / n for ns in out["per_thread_ns"]) / threads, rel=1e-3)
