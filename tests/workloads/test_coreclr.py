"""The C# workloads' runtime parameter through perflab itself: `perflab stat` of a workload on
Mono and on CoreCLR stores (and prints) the runtime that ran in the result's environment, and
bad input (a runtime not installed, a knob of the other runtime, an unknown runtime) is one
line naming the problem and the fix.  Skipped with one line where a runtime is missing."""

from __future__ import annotations

import pytest

from cli_helpers import run_cli
from perflab.storage import Store
from workload_helpers import CSHARP_RUNTIMES, built_workload, csharp_runtime

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
    (label,) = rs.fingerprint["runtimes"].values()
    assert label.startswith(RUNTIME_NAMES[runtime])
    assert rs.configurations[0].params["runtime"] == runtime


@pytest.mark.parametrize(("spec", "env", "problem", "fix"), [
    ("eh/csharp runtime=coreclr", {"PERFLAB_CORECLR_ROOT": "/nonexistent-dotnet"},
     "eh/csharp: runtime=coreclr needs CoreCLR 3.1.23, which is not installed here",
     "run `make setup`"),
    ("eh/csharp tiered_compilation=off", {},
     "eh/csharp: tiered_compilation=off is a knob of runtime=coreclr; runtime=mono has no such "
     "knob", "add runtime=coreclr, or drop tiered_compilation"),
    ("eh/csharp runtime=clr", {}, "eh/csharp: parameter runtime=clr is not allowed",
     "give one of mono, coreclr"),
])
def test_bad_runtime_input_is_one_line(spec: str, env: dict[str, str], problem: str, fix: str,
                                       capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    built_workload("eh/csharp")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err = run_cli(["stat", "-W", spec, "-r", "2"], capsys)
    assert code != 0 and out == ""
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert line == f"perflab: {problem} -- {line.split(' -- ', 1)[1]}"
    assert line.split(" -- ", 1)[1].startswith(fix)
