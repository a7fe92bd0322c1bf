"""The stubs workload (workloads/stubs/c, x86-64): every call happens, and the generated stubs
really are `jmp [rip+disp]` (or the two-slot precode) on r-x pages with their slots on the next,
writable page."""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from workload_helpers import region_server

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "workloads" / "stubs" / "c"

pytestmark = [pytest.mark.system,
              pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                 reason="the stubs workload generates x86-64 code")]
_built: list[str] = []


def binary() -> list[str]:
    if _built:
        return _built
    m = tomllib.loads((STUBS / "workload.toml").read_text())
    missing = [exe for exe in m.get("requires", []) if shutil.which(exe) is None]
    if missing:
        pytest.skip(f"stubs/c: {', '.join(missing)} not installed")
    proc = subprocess.run(m["build"], cwd=STUBS, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, f"build of stubs/c failed:\n{proc.stdout}{proc.stderr}"
    _built.extend(a.replace("{dir}", str(STUBS)) for a in m["run"])
    return _built


def run(*args: str) -> dict[str, Any]:
    proc = subprocess.run(binary() + list(args), capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in ("ops", "threads", "per_thread_ns", "ns_per_op", "ops_per_s", "checksum",
                "params"):
        assert key in out
    return out


CASES = [("direct", 1), ("pointer", 1), ("pointer", 64), ("stub", 1), ("stub", 64),
         ("stub", 4096), ("precode", 1), ("precode", 4096)]


@pytest.mark.parametrize("mode", ["latency", "throughput"])
@pytest.mark.parametrize("kind,count", CASES)
def test_checksum_proves_every_call(kind: str, count: int, mode: str) -> None:
    n = 30011  # not a multiple of the stub count: a skipped or doubled call would show
    out = run(f"--kind={kind}", f"--count={count}", f"--mode={mode}", f"--iterations={n}")
    assert out["checksum"] == out["ops"] == n
    assert out["params"]["kind"] == kind and out["params"]["count"] == count
    if kind in ("stub", "precode"):
        assert out["layout_ok"] is True


def test_threads_each_call() -> None:
    out = run("--kind=stub", "--count=64", "--iterations=10000", "--threads=2")
    assert out["threads"] == 2 and len(out["per_thread_ns"]) == 2
    assert out["checksum"] == out["ops"] == 20000


def _objdump(code: bytes, vma: int, tmp_path: Path) -> str:
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) not installed")
    f = tmp_path / "stub.bin"
    f.write_bytes(code)
    return subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64",
                           f"--adjust-vma={vma:#x}", str(f)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("wx", ["mprotect", "memfd"])
def test_stub_is_jmp_rip_with_slot_on_next_rw_page(wx: str, tmp_path: Path) -> None:
    out = run("--kind=stub", "--count=4096", f"--wx={wx}", "--iterations=1000")
    assert out["wx_method"] == wx
    code = bytes.fromhex(out["stub_bytes"])
    stub, slot, page = int(out["stub_addr"], 16), int(out["slot_addr"], 16), out["page_size"]
    assert code[:2] == b"\xff\x25"  # jmp qword ptr [rip + disp32]
    disp = int.from_bytes(code[2:6], "little", signed=True)
    assert stub + 6 + disp == slot
    assert slot // page == stub // page + 1
    # Protections as the kernel reports them (/proc/self/maps): W^X.
    assert out["code_perms"].startswith("r-x") and out["slot_perms"].startswith("rw-")
    assert out["code_perms"][3] == out["slot_perms"][3] == ("s" if wx == "memfd" else "p")
    # 4096 stubs of 8 bytes: 8 code pages interleaved with 8 slot pages.
    assert out["pages"] == 2 * 4096 * 8 // page
    asm = _objdump(code, stub, tmp_path)
    m = re.search(r"jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# (0x[0-9a-f]+)", asm)
    assert m, asm
    assert int(m.group(1), 16) == slot


def test_precode_has_two_slots_on_next_page(tmp_path: Path) -> None:
    out = run("--kind=precode", "--count=64", "--iterations=1000")
    code = bytes.fromhex(out["stub_bytes"])
    stub, slot, page = int(out["stub_addr"], 16), int(out["slot_addr"], 16), out["page_size"]
    asm = _objdump(code, stub, tmp_path)
    mov = re.search(r"mov\s+0x[0-9a-f]+\(%rip\),%r10\s+# (0x[0-9a-f]+)", asm)
    jmp = re.search(r"jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# (0x[0-9a-f]+)", asm)
    assert mov and jmp, asm
    md_slot, target_slot = int(mov.group(1), 16), int(jmp.group(1), 16)
    assert target_slot == slot and md_slot == stub + page and target_slot == md_slot + 8
    assert out["code_perms"].startswith("r-x") and out["slot_perms"].startswith("rw-")


def test_direct_loop_really_calls_the_target() -> None:
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) not installed")
    exe = binary()[0]
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True,
                         text=True, check=True).stdout
    for loop in ("loop_direct_latency", "loop_direct_throughput"):
        body = asm.split(f"<{loop}>:\n", 1)[1].split("\n\n", 1)[0]
        assert re.search(r"\bcall\s+[0-9a-f]+ <perflab_stub_target>", body), body
    target = asm.split("<perflab_stub_target>:\n", 1)[1].split("\n\n", 1)[0]
    assert "ret" in target


@pytest.mark.parametrize("kind", ["stub", "precode"])
def test_wx_off_maps_rwx_and_the_other_modes_never_do(kind: str) -> None:
    """W^X off (dotnet/runtime#65738's "before"): the stubs live in one rwx mapping, counted in
    /proc/self/maps by the workload; every W^X-on mode leaves no writable+executable mapping."""
    n = 4097
    off = run(f"--kind={kind}", "--count=4096", "--wx=off", f"--iterations={n}")
    assert off["checksum"] == n and off["layout_ok"] is True and off["wx_method"] == "off"
    assert off["code_perms"] == off["slot_perms"] == "rwxp"
    assert off["maps_wx"] >= 1
    for wx in ("mprotect", "memfd", "auto"):
        on = run(f"--kind={kind}", "--count=4096", f"--wx={wx}", f"--iterations={n}")
        assert on["checksum"] == n and on["layout_ok"] is True
        assert on["maps_wx"] == 0, wx
        assert on["code_perms"].startswith("r-x") and on["slot_perms"].startswith("rw-")
        # W^X splits the interleaved area into one mapping per page: one executable mapping per
        # code page (file-backed neighbours never merge with them) where off has one in all.
        pairs = on["pages"] // 2
        assert on["maps_exec"] - off["maps_exec"] == pairs - 1, wx
        # The data pages are writable mappings of their own (the last may merge with an
        # anonymous rw neighbour).
        assert on["maps_writable"] - off["maps_writable"] >= pairs - 2, wx


@pytest.mark.parametrize("kind,wx", [("direct", "auto"), ("pointer", "auto"), ("stub", "off"),
                                     ("stub", "mprotect"), ("precode", "memfd")])
def test_first_call_is_timed(kind: str, wx: str) -> None:
    out = run(f"--kind={kind}", "--count=64", f"--wx={wx}", "--iterations=1000")
    assert isinstance(out["first_call_ns"], int) and out["first_call_ns"] > 0
    assert out["maps_writable"] > 0 and out["maps_exec"] > 0
    if kind in ("stub", "precode"):  # generation (mmap + 64 stubs + protections) costs > 1 us
        assert out["first_call_ns"] > 1000


@pytest.mark.parametrize("args", [["--kind=bogus"], ["--count=3"], ["--count=0"],
                                  ["--mode=fast"], ["--wx=maybe"], ["--color=red"],
                                  ["--wx=off", "--kind=direct"],
                                  ["--wx=mprotect", "--kind=pointer"],
                                  ["--iterations=ten"], ["--threads=0"]])
def test_bad_params_exit_2_with_one_line(args: list[str]) -> None:
    proc = subprocess.run(binary() + args, capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_timed_region_is_announced() -> None:
    """With perflab's fifos set, the workload sends enable then disable and waits for acks."""
    argv = binary() + ["--kind=stub", "--count=64", "--iterations=1000", "--threads=2"]
    with region_server() as (env, got):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert got == ["enable", "disable"]
    assert json.loads(p.stdout.strip().splitlines()[-1])["checksum"] == 2000
