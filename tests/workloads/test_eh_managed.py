"""The exception-handling workloads of the managed runtimes: eh/java, eh/node, eh/python.

Each test runs the real program (built through the registry when needed) with a small fixed
--iterations and checks what the parameters imply: the checksum (exceptions caught), the JSON
contract, that the depth frames are real (stack trace / error.stack / traceback length grows by
exactly the depth), that the implicit kinds really fault, and that bad parameters exit 2.  A
workload whose runtime is missing is skipped.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from perflab.workloads.registry import Workload
from workload_helpers import CONTRACT_KEYS, built_workload, refuses

pytestmark = pytest.mark.system


def _run(wl: Workload, params: dict[str, Any], extra_vm: list[str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    argv, _ = wl.command({k: str(v) for k, v in params.items()})
    if extra_vm:  # runtime flags go right after the interpreter
        argv = argv[:1] + extra_vm + argv[1:]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _result(wl: Workload, **params: Any) -> dict[str, Any]:
    proc = _run(wl, params)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    _check_contract(out, params)
    return out


def _check_contract(out: dict[str, Any], params: dict[str, Any]) -> None:
    assert CONTRACT_KEYS <= set(out)
    threads = int(params.get("threads", 1))
    n = int(params["iterations"])
    assert out["threads"] == threads
    assert out["ops"] == n * threads
    assert len(out["per_thread_ns"]) == threads
    assert all(ns > 0 for ns in out["per_thread_ns"])
    expected = sum(ns / n for ns in out["per_thread_ns"]) / threads
    assert out["ns_per_op"] == pytest.approx(expected, rel=1e-3)
    assert out["ops_per_s"] == pytest.approx(out["ops"] * 1e9 / max(out["per_thread_ns"]),
                                             rel=1e-3)
    for k in ("depth", "kind", "threads"):
        if k in params:
            assert str(out["params"][k]) == str(params[k])


# ---- Java ----------------------------------------------------------------------------------

def test_java_software_stack_trace_grows_with_depth() -> None:
    wl = built_workload("eh/java")
    n = 3000
    d0 = _result(wl, depth=0, kind="software", iterations=n, warmup=1000)
    d10 = _result(wl, depth=10, kind="software", iterations=n, warmup=1000)
    assert d0["checksum"] == n and d10["checksum"] == n
    assert d10["trace_frames"] - d0["trace_frames"] == 10


def test_java_chain_is_not_inlined() -> None:
    # PrintInlining shows C2's decision for every call site of the chain: the manifest's
    # CompileCommand must make it "disallowed", never "inline".  The VM's output goes to stderr:
    # on stdout a compiler thread's lines could land inside the JSON line.
    wl = built_workload("eh/java")
    proc = _run(wl, {"depth": 3, "kind": "notrace", "iterations": 2000, "warmup": 30000},
                ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintInlining",
                 "-XX:+DisplayVMOutputToStderr"])
    assert proc.returncode == 0, proc.stderr
    chain = [ln for ln in proc.stderr.splitlines() if "Eh::chainNoTrace" in ln]
    assert chain, "C2 never compiled the loop: raise the warm-up"
    assert all("disallowed by CompileCommand" in ln for ln in chain), chain
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["checksum"] == 2000 and out["trace_frames"] == 0


def test_java_implicit_npe_is_caught_with_a_trace() -> None:
    wl = built_workload("eh/java")
    out = _result(wl, depth=2, kind="hardware", iterations=2000, warmup=1000)
    assert out["checksum"] == 2000  # every null dereference became a caught NPE
    assert out["trace_frames"] >= 3  # a real NPE with a real stack trace (no fast throw)


def test_java_threads_and_baseline() -> None:
    wl = built_workload("eh/java")
    out = _result(wl, depth=5, kind="error", threads=2, iterations=5000, warmup=500)
    assert out["checksum"] == 10000
    assert out["parallelism"] == "threads"
    out = _result(wl, depth=1, kind="prealloc", threads=2, iterations=2000, warmup=500)
    assert out["checksum"] == 4000


@pytest.mark.parametrize("kind", ["software", "notrace", "prealloc", "hardware", "error"])
def test_java_async_depth_adds_stages(kind: str) -> None:
    """mode=async: the failure goes through one CompletableFuture handle stage per level of
    depth (counted by the stage itself), and the exception's trace shows the composed levels."""
    wl = built_workload("eh/java")
    n = 1000
    d1 = _result(wl, depth=1, kind=kind, mode="async", threads=2, iterations=n, warmup=500)
    d11 = _result(wl, depth=11, kind=kind, mode="async", threads=2, iterations=n, warmup=500)
    assert d1["checksum"] == d11["checksum"] == 2 * n
    assert d1["params"]["mode"] == "async"
    # depth n = n handle levels above the leaf stage, as eh/cpp has n coroutines (#13)
    assert d1["async_stages"] == 1 and d11["async_stages"] == 11
    if kind in ("software", "hardware"):  # thenCompose runs level n-1 inside level n's frames
        assert d11["trace_frames"] - d1["trace_frames"] >= 10
    sync = _result(wl, depth=11, kind=kind, mode="sync", iterations=n, warmup=500)
    assert sync["async_stages"] == 0


# ---- Node ----------------------------------------------------------------------------------

def test_node_error_stack_grows_with_depth() -> None:
    wl = built_workload("eh/node")
    n = 2000
    d0 = _result(wl, depth=0, kind="software", iterations=n, warmup=500, stack_trace_limit=500)
    d10 = _result(wl, depth=10, kind="software", iterations=n, warmup=500, stack_trace_limit=500)
    assert d0["checksum"] == n and d10["checksum"] == n
    assert d10["stack_frames"] - d0["stack_frames"] == 10


def test_node_async_chain_and_typeerror() -> None:
    wl = built_workload("eh/node")
    a5 = _result(wl, depth=5, kind="software", mode="async", iterations=1000, warmup=200,
                 stack_trace_limit=500)
    a0 = _result(wl, depth=0, kind="software", mode="async", iterations=1000, warmup=200,
                 stack_trace_limit=500)
    assert a5["checksum"] == 1000
    assert a5["stack_frames"] - a0["stack_frames"] == 5  # async frames show in the stack too
    # Only a TypeError counts as caught: null.x must really raise one at every depth.
    hw = _result(wl, depth=3, kind="hardware", iterations=1000, warmup=200)
    assert hw["checksum"] == 1000


def test_node_worker_threads() -> None:
    wl = built_workload("eh/node")
    out = _result(wl, depth=2, kind="object", threads=2, iterations=1000, warmup=200)
    assert out["checksum"] == 2000
    assert out["parallelism"] == "worker_threads"


@pytest.mark.unit
def test_node_runs_without_turbofan_inlining() -> None:
    wl = built_workload("eh/node")
    argv, _ = wl.command()
    assert "--no-turbo-inlining" in argv[: argv.index(str(wl.dir / "eh.js"))]


# ---- Python --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["sync", "async"])
def test_python_traceback_grows_with_depth(mode: str) -> None:
    wl = built_workload("eh/python")
    d1 = _result(wl, depth=1, kind="software", mode=mode, iterations=500, warmup=100)
    d11 = _result(wl, depth=11, kind="software", mode=mode, iterations=500, warmup=100)
    assert d1["checksum"] == 500 and d11["checksum"] == 500
    assert d11["traceback_frames"] - d1["traceback_frames"] == 10


def test_python_implicit_fault_and_baseline() -> None:
    wl = built_workload("eh/python")
    hw = _result(wl, depth=4, kind="hardware", iterations=500, warmup=100)
    assert hw["checksum"] == 500  # None.x raised AttributeError every time
    assert hw["traceback_frames"] == 5
    err = _result(wl, depth=4, kind="error", mode="async", iterations=500, warmup=100)
    assert err["checksum"] == 500 and err["traceback_frames"] == 0


def test_python_processes_for_threads() -> None:
    wl = built_workload("eh/python")
    out = _result(wl, depth=2, threads=2, iterations=500, warmup=100)
    assert out["checksum"] == 1000
    assert out["parallelism"] == "processes"


BAD_PARAMS = [
    ("eh/java", "--kind=bogus"), ("eh/java", "--depth=-1"), ("eh/java", "--mode=sideways"),
    ("eh/node", "--mode=sideways"), ("eh/node", "--depth=999999"), ("eh/node", "--nope=1"),
    ("eh/python", "--kind=segfault"), ("eh/python", "--iterations=lots"),
]


@pytest.mark.parametrize("name,arg", BAD_PARAMS, ids=[f"{n}:{a}" for n, a in BAD_PARAMS])
def test_bad_params_exit_2(name: str, arg: str) -> None:
    # Replace the defaults with a single bad flag: the workload must refuse it with exit 2.
    proc = refuses(built_workload(name), arg)
    assert proc.stdout.strip() == ""
