"""The memory workloads (after dotnet/runtime#1457): memory/java and memory/csharp.

Each test runs the real program with a small fixed number of methods and calls and checks what
the parameters imply: the checksum (calls made), that the JIT mode really changes how the code runs
(compiled methods by tier for Java, methods JIT-compiled for Mono), that the memory figures are
there in KiB and ordered as the modes imply, and that bad flags exit 2 with one line.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from perflab.collectors.workload_json import parse_last_json
from perflab.workloads.registry import Workload
from workload_helpers import built_workload, refuses, run_workload

pytestmark = pytest.mark.system


def _result(wl: Workload, **params: Any) -> dict[str, Any]:
    out = run_workload(wl, params, timeout=180)
    n = int(params["methods"]) * int(params["calls"])
    assert out["ops"] == n and out["checksum"] == n  # every call made
    assert out["rss_after_gc_kib"] > 1000
    # perflab takes every number as a metric and refuses a negative one (the suites failed on a
    # wrapped int `result` before it was printed unsigned).
    assert parse_last_json(json.dumps(out)) is not None
    return out


def test_java_jit_modes_really_differ() -> None:
    wl = built_workload("memory/java")
    runs = {j: _result(wl, jit=j, methods=400, calls=3000)
            for j in ("tiered", "c1", "interpreter")}
    assert len({r["result"] for r in runs.values()}) == 1  # the same computation in every mode
    tiered, c1, interp = runs["tiered"], runs["c1"], runs["interpreter"]
    assert interp["compiled_methods"] == 0  # -Xint: nothing compiled
    assert c1["compiled_tier1"] > 0 and c1["compiled_tier3"] == c1["compiled_tier4"] == 0
    assert tiered["compiled_tier3"] + tiered["compiled_tier4"] > 0 and tiered["compiled_tier1"] == 0
    # Compiled code lives in the code cache; the interpreter's holds only the VM's stubs.
    assert interp["code_cache_used_kib"] < c1["code_cache_used_kib"]
    for r in runs.values():
        assert r["committed_kib"] > r["heap_committed_kib"] > 0
        assert r["metaspace_used_kib"] > 0


def test_java_refuses_a_mode_the_vm_does_not_run() -> None:
    wl = built_workload("memory/java")
    # Started without run.sh, the VM has no -Xint: --jit=interpreter would be a false label.
    cp = str(wl.dir / "build" / "classes")
    proc = subprocess.run(["java", "-cp", cp, "Memory", "--jit=interpreter", "--methods=10",
                           "--calls=10"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "run.sh" in proc.stderr and proc.stdout == ""


def test_java_bad_params_exit_2() -> None:
    wl = built_workload("memory/java")
    for bad in ("--jit=c2", "--methods=0", "--calls=x", "--heap=1"):
        assert refuses(wl, bad).stdout.strip() == ""


def test_csharp_modes_really_differ() -> None:
    wl = built_workload("memory/csharp")
    runs = {m: _result(wl, mode=m, methods=400, calls=200)
            for m in ("jit", "jit-noaot", "jit-noopt", "interpreter")}
    assert len({r["result"] for r in runs.values()}) == 1
    assert runs["interpreter"]["jitted_methods"] < 50  # the interpreter compiles nothing
    assert runs["jit"]["jitted_methods"] >= 400 and runs["jit-noopt"]["jitted_methods"] >= 400
    # Without the AOT image of mscorlib, its methods are JIT-compiled too.
    assert runs["jit-noaot"]["jitted_methods"] > runs["jit"]["jitted_methods"]
    for r in runs.values():
        assert r["gc_total_kib"] > 0 and r["private_kib"] > 0 and r["working_set_kib"] > 0


def test_csharp_bad_params_exit_2() -> None:
    wl = built_workload("memory/csharp")
    for bad in ("--mode=aot", "--methods=5000", "--calls=0", "--tiered=1"):
        assert refuses(wl, bad).stdout.strip() == ""


@pytest.mark.parametrize(("name", "params"), [
    ("memory/java", {"jit": "c1", "methods": 400, "calls": 300}),
    ("memory/csharp", {"mode": "jit", "methods": 400, "calls": 100}),
])
def test_result_wraps_unsigned(name: str, params: dict[str, Any]) -> None:
    """These counts make the int sum of the results wrap below zero: `result` stays >= 0, so
    perflab (which refuses negative metrics) can run the memory suites."""
    out = _result(built_workload(name), **params)
    assert 2**31 <= out["result"] < 2**32
