"""The native exception-handling workloads (eh/cpp, eh/c, eh/rust, eh/go) do what they claim.

Each test runs the real binary with a small fixed --iterations: the checksum must equal the
throws, the frames must be real calls (callgrind call counts, disassembly), the hardware
variants must really fault (signals counted by the workload and seen by strace), and bad flags
must exit 2 with one line.  A runtime's tests are skipped only when its toolchain is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from perflab import workloads
from perflab.workloads import Workload
from workload_helpers import region_server

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2] / "workloads"
NATIVE = ["eh/cpp", "eh/c", "eh/rust", "eh/go"]
KEYS = {"ops", "threads", "iterations", "warmup", "per_thread_ns", "ns_per_op", "ops_per_s",
        "per_thread_cpu_ns", "cpu_ns_per_op",
        "checksum", "thrown", "params"}

# Every variant each workload offers (params beyond depth/threads/iterations).
VARIANTS: list[tuple[str, dict[str, str]]] = [
    ("eh/cpp", {"kind": "software", "exception": "struct"}),
    ("eh/cpp", {"kind": "software", "exception": "std"}),
    ("eh/cpp", {"kind": "hardware"}),
    ("eh/cpp", {"kind": "error"}),
    ("eh/cpp", {"kind": "software", "exception": "struct", "mode": "async"}),
    ("eh/cpp", {"kind": "software", "exception": "std", "mode": "async"}),
    ("eh/cpp", {"kind": "error", "mode": "async"}),
    ("eh/c", {"kind": "software"}),
    ("eh/c", {"kind": "hardware", "signal": "segv", "savemask": "1"}),
    ("eh/c", {"kind": "hardware", "signal": "fpe", "savemask": "0"}),
    ("eh/c", {"kind": "error"}),
    ("eh/rust", {"kind": "software", "mode": "panic"}),
    ("eh/rust", {"kind": "software", "mode": "resume"}),
    ("eh/rust", {"kind": "error"}),
    ("eh/go", {"kind": "software"}),
    ("eh/go", {"kind": "hardware"}),
    ("eh/go", {"kind": "error"}),
]

_built: dict[str, Workload] = {}


def built(name: str) -> Workload:
    """The workload, built once per test session; skipped when its toolchain is absent."""
    if name not in _built:
        wl = workloads.get(name, ROOT)
        ok, why = wl.available()
        if not ok:
            pytest.skip(f"{name}: {why}")
        wl.build()  # incremental: a no-op after `make workloads`
        _built[name] = wl
    return _built[name]


def run(argv: list[str], *, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)


def result(wl: Workload, **params: Any) -> dict[str, Any]:
    argv, _ = wl.command(params)
    p = run(argv)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def variant_id(v: tuple[str, dict[str, str]]) -> str:
    return v[0] + ":" + ",".join(f"{k}={x}" for k, x in v[1].items())


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_checksum_counts_every_throw(variant: tuple[str, dict[str, str]]) -> None:
    name, params = variant
    wl = built(name)
    r = result(wl, depth=3, threads=2, iterations=150, **params)
    assert KEYS <= set(r), KEYS - set(r)
    assert r["threads"] == 2 and r["iterations"] == 150 and r["ops"] == 300
    assert r["checksum"] == 300 and r["thrown"] == 300
    assert len(r["per_thread_ns"]) == 2 and all(t > 0 for t in r["per_thread_ns"])
    mean = sum(t / 150 for t in r["per_thread_ns"]) / 2
    assert r["ns_per_op"] == pytest.approx(mean, rel=1e-3)
    assert len(r["per_thread_cpu_ns"]) == 2 and r["cpu_ns_per_op"] > 0
    assert r["params"]["depth"] == 3 and r["params"]["kind"] == params["kind"]
    if params["kind"] == "hardware":
        assert r["signals"] == 300  # one real fault per throw, counted where it is handled


@pytest.mark.parametrize("name", NATIVE)
def test_depth_zero_and_calibration(name: str) -> None:
    wl = built(name)
    r = result(wl, depth=0, kind="error", iterations=0)
    # iterations=0 calibrates to about 0.5 s: far more than the minimum of 100 for this op.
    assert r["calibrated"] is True and r["iterations"] > 1000
    assert r["checksum"] == r["iterations"]


def _callgrind_calls(out: Path) -> Counter[str]:
    """Calls per callee name in a callgrind.out file (names are compressed as "(id) name")."""
    names: dict[str, str] = {}
    calls: Counter[str] = Counter()
    pending: str | None = None
    for line in out.read_text(errors="replace").splitlines():
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            pending = names.get(m.group(2), "?") if m.group(1) == "cfn" else None
        elif line.startswith("calls=") and pending is not None:
            calls[pending] += int(line[6:].split()[0])
            pending = None
    return calls


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.parametrize("variant", [v for v in VARIANTS if v[0] != "eh/go"], ids=variant_id)
def test_every_frame_is_a_real_call(variant: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    """callgrind counts a call of the frame function (or coroutine) per level per throw: none
    was inlined or turned into a jump.  (Go is not run under valgrind; see the disassembly test.)"""
    name, params = variant
    wl = built(name)
    depth, iterations = 7, 30
    argv, _ = wl.command({**params, "depth": depth, "iterations": iterations, "threads": 1})
    out = tmp_path / "callgrind.out"
    p = run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv])
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    throws = r["iterations"] + r["warmup"]
    # async: the coroutine's ramp function is called once per level (its resume parts are
    # "[clone .actor]"/"[clone .destroy]").
    frame = "perflab_async_frame" if params.get("mode") == "async" else "perflab_frame"
    frames = sum(n for fn, n in _callgrind_calls(out).items()
                 if frame in fn and "[clone" not in fn)
    assert frames == throws * depth, (frames, throws, depth)


def _objdump_functions(binary: Path) -> dict[str, list[str]]:
    text = run(["objdump", "-d", "-C", "--no-show-raw-insn", str(binary)]).stdout
    funcs: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            current = funcs.setdefault(m.group(1), [])
        elif current is not None and line.strip():
            current.append(line)
    return funcs


@pytest.mark.parametrize("name", NATIVE)
def test_the_frame_function_calls_itself(name: str) -> None:
    """The disassembly of the recursive frame function holds a `call` to itself, not a `jmp`."""
    wl = built(name)
    binary = Path(wl.command({})[0][0])
    if name == "eh/go":
        if shutil.which("go") is None:
            pytest.skip("go is not installed")
        for fn in ("main.perflabFrame", "main.perflabFrameError"):
            dis = run(["go", "tool", "objdump", "-s", f"^{fn}$", str(binary)]).stdout
            assert f"CALL {fn}(SB)" in dis, dis[:2000]
        dis = run(["go", "tool", "objdump", "-s", "^main.catchOne$", str(binary)]).stdout
        assert "CALL main.perflabFrame(SB)" in dis
        return
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed")
    funcs = {f: body for f, body in _objdump_functions(binary).items()
             if "perflab_frame" in f and "[clone" not in f and "::{{closure}}" not in f}
    assert len(funcs) >= 2, list(funcs)  # a software/hardware frame and the error frame
    for fn, body in funcs.items():
        calls_self = [ln for ln in body if re.search(r"\bcall\b", ln) and f"<{fn}>" in ln]
        jumps_self = [ln for ln in body if re.search(r"\bjmp\b", ln) and f"<{fn}>" in ln]
        assert calls_self, f"{fn} never calls itself:\n" + "\n".join(body[:40])
        assert not jumps_self, f"{fn} tail-jumps to itself: {jumps_self}"


@pytest.mark.parametrize("params", [{"kind": "software", "exception": "struct"},
                                    {"kind": "software", "exception": "std"},
                                    {"kind": "error"}], ids=lambda p: ",".join(p.values()))
def test_cpp_async_depth_adds_coroutine_frames(params: dict[str, str]) -> None:
    """mode=async: every level is a coroutine frame (counted by its promise) and the exception
    is stored and rethrown once per level it leaves; depth 0 throws inside the try block."""
    wl = built("eh/cpp")
    n = 200
    for depth in (0, 1, 10):
        r = result(wl, depth=depth, mode="async", threads=2, iterations=n, **params)
        assert r["checksum"] == r["thrown"] == 2 * n
        assert r["coroutine_frames"] == 2 * n * depth
        rethrows = 2 * n * depth if params["kind"] == "software" else 0
        assert r["async_rethrows"] == rethrows
    sync = result(wl, depth=10, mode="sync", iterations=n, **params)
    assert sync["coroutine_frames"] == sync["async_rethrows"] == 0


def test_cpp_async_refuses_hardware() -> None:
    wl = built("eh/cpp")
    p = run([wl.command({})[0][0], "--mode=async", "--kind=hardware"])
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "--mode=async" in p.stderr
    p = run([wl.command({})[0][0], "--mode=sideways"])  # neither sync nor async
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "mode" in p.stderr


STRACE_VARIANTS = [("eh/cpp", {"kind": "hardware"}, "SIGSEGV"),
                   ("eh/c", {"kind": "hardware", "signal": "segv"}, "SIGSEGV"),
                   ("eh/c", {"kind": "hardware", "signal": "fpe"}, "SIGFPE"),
                   ("eh/go", {"kind": "hardware"}, "SIGSEGV")]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize(("name", "params", "signal"), STRACE_VARIANTS,
                         ids=[f"{n}:{s}" for n, _, s in STRACE_VARIANTS])
def test_hardware_kinds_really_fault(name: str, params: dict[str, str], signal: str) -> None:
    """The kernel delivers one real signal per hardware throw (seen from outside, by strace)."""
    wl = built(name)
    argv, _ = wl.command({**params, "depth": 2, "iterations": 40, "threads": 1})
    p = run(["strace", "-f", "-qq", "-e", "trace=none", "-e", f"signal={signal}", *argv])
    if p.returncode != 0 and "ptrace" in p.stderr:
        pytest.skip(f"strace cannot trace here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    seen = len(re.findall(rf"--- {signal} ", p.stderr))
    assert seen == r["iterations"] + r["warmup"] and r["signals"] == 40


@pytest.mark.parametrize("name", NATIVE)
@pytest.mark.parametrize("bad", [["--depth=-1"], ["--depth=abc"], ["--kind=nope"],
                                 ["--bogus=1"], ["--threads=0"], ["--depth"], ["stray"]])
def test_bad_flags_exit_2_with_one_line(name: str, bad: list[str]) -> None:
    wl = built(name)
    binary = wl.command({})[0][0]
    p = run([binary, "--iterations=10", *bad])
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("name", NATIVE)
def test_the_timed_region_is_announced(name: str) -> None:
    """With perflab's fifos set, the workload sends enable then disable and waits for acks."""
    wl = built(name)
    argv, _ = wl.command({"depth": 1, "iterations": 20, "threads": 2})
    with region_server() as (env, got):
        p = run(argv, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert got == ["enable", "disable"]
    assert json.loads(p.stdout.strip().splitlines()[-1])["checksum"] == 40
