"""The C# workloads' runtime parameter through perflab itself: `perflab stat` of a workload on
Mono and on CoreCLR stores (and prints) the runtime that ran in the result's environment, and
bad input (a runtime not installed, a knob of the other runtime, an unknown runtime) is one
line naming the problem and the fix; each CoreCLR knob changes what the runtime itself reports
(methods jitted by tier from its perf map, the GC mode).  Skipped with one line where a runtime
is missing."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from cli_helpers import run_cli
from perflab.storage import Store
from workload_helpers import CSHARP_RUNTIMES, built_workload, csharp_runtime, run_workload

pytestmark = pytest.mark.system

RUNTIME_NAMES = {"mono": "mono 6.8", "coreclr": ".NET Core 3.1.23"}


@pytest.mark.parametrize("runtime", CSHARP_RUNTIMES)
def test_stat_names_the_runtime_in_the_environment(runtime: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    csharp_runtime(runtime)
    built_workload("eh/csharp")
    code, out, err = run_cli(["stat", "-W", f"eh/csharp runtime={runtime} depth=10", "-r", "2",
                              "-w", "0", "-p", "iterations=2000", "-p", "warmup=200"], capsys)
    assert code == 0, err
    assert f"runtime: {RUNTIME_NAMES[runtime]}" in out
    store = Store()
    rs = store.load(store.result_ids()[-1])
    (label,) = (rs.fingerprint.runtimes or {}).values()
    assert label.startswith(RUNTIME_NAMES[runtime])
    assert rs.configurations[0].params["runtime"] == runtime


def test_compare_names_each_configurations_runtime(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # the runtime line on one line: it is read below
    for runtime in CSHARP_RUNTIMES:
        csharp_runtime(runtime)
    built_workload("eh/csharp")
    code, out, err = run_cli(["compare", "-W", "eh/csharp runtime=mono", "-W",
                              "eh/csharp runtime=coreclr", "-r", "2", "-w", "0", "-p",
                              "iterations=500", "-p", "warmup=0"], capsys)
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("runtime: ")]
    mono_at = line.index("eh/csharp runtime=mono: mono 6.8")
    assert line.index("eh/csharp runtime=coreclr: .NET Core 3.1.23") > mono_at  # their order


@pytest.mark.parametrize(("spec", "env", "problem", "fix"), [
    ("eh/csharp runtime=coreclr", {"PERFLAB_CORECLR_ROOT": "/nonexistent-dotnet"},
     "eh/csharp: runtime=coreclr needs CoreCLR 3.1.23, which is not installed here",
     "run `make setup`"),
    ("eh/csharp tiered_compilation=off", {},
     "eh/csharp: tiered_compilation=off is a knob of runtime=coreclr; runtime=mono has no such "
     "knob", "add runtime=coreclr, or drop tiered_compilation"),
    ("eh/csharp runtime=clr", {}, "eh/csharp: parameter runtime=clr is not allowed",
     "give one of mono, coreclr"),
    ("timers/csharp gc_server=on", {},
     "timers/csharp: gc_server=on is a knob of runtime=coreclr; runtime=mono has no such knob",
     "add runtime=coreclr, or drop gc_server"),
    ("memory/csharp runtime=coreclr mode=interpreter", {},
     "memory/csharp: mode=interpreter is a knob of runtime=mono; runtime=coreclr has no such "
     "knob", "add runtime=mono, or drop mode"),
])
def test_bad_runtime_input_is_one_line(spec: str, env: dict[str, str], problem: str, fix: str,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    built_workload(spec.split()[0])
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err = run_cli(["stat", "-W", spec, "-r", "2"], capsys)
    assert code != 0 and out == ""
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line == f"perflab: {problem} -- {line.split(' -- ', 1)[1]}"
    assert line.split(" -- ", 1)[1].startswith(fix)


# ---- CoreCLR's knobs: each changes what the runtime itself reports ---------------------------

def _memory(**params: Any) -> dict[str, Any]:
    csharp_runtime("coreclr")
    wl = built_workload("memory/csharp")
    out = run_workload(wl, {"runtime": "coreclr", "methods": 1000, "calls": 50, **params},
                       timeout=180)
    assert out["checksum"] == 50_000 and out["runtime"].startswith(".NET Core 3.1.")
    return out


def test_memory_on_coreclr_reports_committed_gc_heap_and_methods_jitted() -> None:
    out = _memory()
    for key in ("committed_kib", "private_kib", "rss_after_gc_kib", "gc_heap_kib",
                "gc_total_kib"):
        assert out[key] > 0, key
    # Every generated method was jitted (tier 0 by default), each counted once per version.
    assert out["jitted_tier0"] >= 1000
    assert out["jitted_methods"] == (out["jitted_tier0"] + out["jitted_tier1"]
                                     + out["jitted_optimized"])
    assert out["stubs"] > 0 and out["gc_server"] is False
    assert "loader_heap_kib" not in out  # Mono's counter: left out, not reported as -1
    if shutil.which("mono"):  # the same work on both runtimes
        mono = run_workload(built_workload("memory/csharp"),
                            {"runtime": "mono", "methods": 1000, "calls": 50})
        assert mono["result"] == out["result"] and mono["checksum"] == out["checksum"]


def test_tiered_compilation_off_jits_everything_optimized_at_once() -> None:
    on, off = _memory(), _memory(tiered_compilation="off")
    assert on["jitted_tier0"] >= 1000 and on["jitted_optimized"] < 100
    assert off["jitted_tier0"] == 0 and off["jitted_tier1"] == 0
    assert off["jitted_optimized"] >= 1000


def test_quick_jit_for_loops_sends_methods_with_loops_to_tier_0() -> None:
    # 3.1's default jits a method with a loop optimized at once; with the knob on it starts at
    # tier 0 like every other method (the workload's own loops, and the framework's).
    default, quick = _memory(), _memory(quick_jit_for_loops="on")
    assert quick["jitted_optimized"] < default["jitted_optimized"]
    assert quick["jitted_tier0"] > default["jitted_tier0"]


def test_ready_to_run_off_jits_the_framework() -> None:
    default, off = _memory(), _memory(ready_to_run="off")
    assert off["jitted_methods"] > default["jitted_methods"] + 300


def test_gc_server_is_the_gc_mode_the_runtime_reports() -> None:
    assert _memory()["gc_server"] is False
    assert _memory(gc_server="on")["gc_server"] is True
