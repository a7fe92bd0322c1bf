"""JIT frames by name: perflab asks Java, Node, Mono and CoreCLR to write /tmp/perf-PID.map when
it profiles, so perf names their compiled code; the "-g" advice is only for native code without
symbols.  Real profiles of timers/java (2 threads) and eh/csharp on Mono and on CoreCLR, plus
the rules."""

from __future__ import annotations

import shutil

import pytest

from perflab.profiles import record_profile, top_symbols
from perflab.profiles.analysis import Aggregate
from perflab.profiles.record import (
    JIT_MAP_OPTIONS,
    jit_map_env,
    perf_map_pid,
    symbol_warnings,
)
from perflab.profiles.store import load_profile
from perflab.storage import Store
from workload_helpers import built_workload, csharp_runtime

pytestmark = pytest.mark.measure

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf")


@pytest.mark.unit
def test_jit_map_env_appends_to_what_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx1g")
    monkeypatch.delenv("NODE_OPTIONS", raising=False)
    monkeypatch.delenv("COMPlus_PerfMapEnabled", raising=False)
    env = jit_map_env({"MONO_ENV_OPTIONS": "--debug"})
    assert env["JAVA_TOOL_OPTIONS"] == "-Xmx1g " + JIT_MAP_OPTIONS["JAVA_TOOL_OPTIONS"]
    assert env["NODE_OPTIONS"] == "--perf-basic-prof"
    assert env["MONO_ENV_OPTIONS"] == "--debug --jitmap"
    assert jit_map_env(env) == env  # never twice
    # CoreCLR's is a switch: set where unset, the user's own value left alone.
    assert env["COMPlus_PerfMapEnabled"] == "1"
    assert jit_map_env({"COMPlus_PerfMapEnabled": "0"})["COMPlus_PerfMapEnabled"] == "0"


@pytest.mark.unit
def test_no_rebuild_advice_for_jit_code(tmp_path: object) -> None:
    assert perf_map_pid("/tmp/perf-1234.map") == 1234 and perf_map_pid("/usr/bin/java") is None
    agg = Aggregate(unresolved_by_module={"/tmp/perf-999999999.map": 0.4,
                                          "/opt/app/bin/server": 0.3})
    said = symbol_warnings(agg)
    jit = [w for w in said if "perf-999999999.map" in w]
    native = [w for w in said if "server" in w]
    assert jit and "-g" not in jit[0] and "JIT code" in jit[0]
    assert native and "-g" in native[0]  # native code without symbols: rebuild advice


def record_workload(tmp_path: object, name: str, **params: str) -> tuple[Store, int]:
    """Profile the registry's workload ``name`` with ``params`` into a fresh store."""
    store = Store(f"{tmp_path}/r.sqlite")
    argv, _ = built_workload(name).command(params)
    return store, record_profile(argv, store=store, name=name)


@needs_perf
def test_java_frames_are_named(tmp_path: object) -> None:
    store, pid = record_workload(tmp_path, "timers/java", threads="2", iterations="150000")
    rec = load_profile(store, pid)
    syms = top_symbols(pid, store, limit=None)
    jit = [s for s in syms if perf_map_pid(s.module) is not None]
    named = [s for s in jit if s.resolved]
    # The executor's own methods, by name, from the JVM's map (JIT-compiled or interpreted).
    assert any("java.util.concurrent.ScheduledThreadPoolExecutor" in s.symbol for s in named)
    named_self = sum(s.self_share for s in named)
    unnamed_self = sum(s.self_share for s in jit if not s.resolved)
    assert named_self > 0.05, (named_self, unnamed_self)
    assert unnamed_self < 0.05 and unnamed_self < named_self / 4  # a small minority
    assert rec.summary["jit"]["maps"] and rec.summary["jit"]["maps"][0]["exists"]
    assert not any("-g" in w for w in rec.summary["warnings"])


@needs_perf
def test_mono_frames_are_named(tmp_path: object) -> None:
    # 100,000 throws (about 0.6 s): with 20,000 the region held so few samples that 1 run in 12
    # had none in the workload's own methods.
    store, pid = record_workload(tmp_path, "eh/csharp", depth="10", iterations="100000")
    syms = top_symbols(pid, store, limit=None, sort="total")
    # Mono's --jitmap names the workload's methods "Class:Method (args)".
    assert any(s.symbol.startswith("Eh:Loop") and perf_map_pid(s.module) is not None
               for s in syms), [s.symbol for s in syms[:30]]


@needs_perf
def test_coreclr_frames_are_named(tmp_path: object) -> None:
    csharp_runtime("coreclr")
    store, pid = record_workload(tmp_path, "eh/csharp", runtime="coreclr", depth="10",
                                 iterations="50000")
    syms = top_symbols(pid, store, limit=None, sort="total")
    # COMPlus_PerfMapEnabled=1 names the jitted methods "[module] Class::Method(args)[tier]":
    # the loop that catches, and the throw path's own methods (Fail throws, Chain and OnceSync
    # lead to it).  Most of a throw's time is in libcoreclr's dispatch, whose samples do not
    # always unwind into managed frames, so any one of them can be missing from a short
    # profile: at least two of the four by name.
    named = [s.symbol for s in syms if perf_map_pid(s.module) is not None]
    own = ("Eh::Loop", "Eh::Fail", "Eh::Chain", "Eh::OnceSync")
    found = [m for m in own if any(m in s for s in named)]
    assert len(found) >= 2, (found, [s for s in named if "Eh::" in s],
                             [s.symbol for s in syms[:30]])


@needs_perf
def test_node_frames_are_named(tmp_path: object) -> None:
    from pathlib import Path

    built_workload("eh/node")  # built before the directory is listed
    before = set(Path.cwd().glob("isolate-0x*-v8.log"))
    store, pid = record_workload(tmp_path, "eh/node", depth="10", iterations="20000")
    # V8 writes isolate-0x...-PID-v8.log into the working directory whenever a perf map is on:
    # perflab removes the profiled process's.
    assert set(Path.cwd().glob("isolate-0x*-v8.log")) <= before
    syms = top_symbols(pid, store, limit=None, sort="total")
    # node --perf-basic-prof names JavaScript functions "JS:*name file:line:col".
    assert any(s.symbol.startswith("JS:") and "eh.js" in s.symbol
               and perf_map_pid(s.module) is not None for s in syms), [s.symbol for s in syms[:30]]
