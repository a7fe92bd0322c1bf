"""A run valgrind itself cannot make is named as valgrind's limit, with a fix that is not
"fix the command": its log's own crash and unsupported messages are recognised
(collectors/valgrind.valgrind_failure), on logs valgrind 3.19 wrote (tests/fixtures/valgrind)
and on real runs of a C and a Go program that make a system call valgrind 3.19 does not know
(fchmodat2, Linux 6.6).  Callgrind's crash on the eh/go workload is kept as a recorded log only:
it comes from Go's preemption signals and happens in some runs, not all."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from faults.helpers import Perflab
from perflab.collectors.valgrind import valgrind_failure

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "valgrind"


@pytest.mark.unit
@pytest.mark.parametrize(("log", "said"), [
    ("go-callgrind-assertion.log", "Callgrind crashed (assertion 'sigNum == "
     "vgCallgrind_current_state.sig' failed at threads.c:247)"),
    ("unrecognised-instruction.log", "valgrind does not know an instruction of the program "
     "(bytes 0x62 0xF1 0xFD 0x48 0x6F 0xC1...)"),
])
def test_valgrinds_own_failures_are_recognised(log: str, said: str) -> None:
    assert valgrind_failure((LOGS / log).read_text()) == said


@pytest.mark.unit
def test_a_programs_own_failure_is_not_valgrinds() -> None:
    """A program that exits 3 or dies of its own SIGSEGV under valgrind: nothing of valgrind's
    failed."""
    log = ("==7== Callgrind, a call-graph generating cache profiler\n==7== Command: ./prog\n"
           "==7== \n==7== Process terminating with default action of signal 11 (SIGSEGV)\n"
           "==7==  Access not within mapped region at address 0x0\n==7== \n"
           "==7== Events    : Ir\n==7== Collected : 118273\n")
    assert valgrind_failure(log) == ""
    assert valgrind_failure("") == ""


def _unsupported_syscall_program(source: str, tmp: Path) -> Path:
    """Build tests/fixtures/valgrind/<source> into tmp; skip where the compiler is missing or
    the kernel itself lacks fchmodat2 (the program must succeed alone)."""
    src, exe = LOGS / source, tmp / Path(source).stem
    if src.suffix == ".c":
        if not shutil.which("gcc"):
            pytest.skip("needs gcc")
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    else:
        if not shutil.which("go"):
            pytest.skip("needs go")
        subprocess.run(["go", "build", "-o", str(exe), str(src)], check=True, cwd=tmp)
    alone = subprocess.run([str(exe)], cwd=tmp, capture_output=True, text=True, timeout=60)
    if alone.returncode != 0:
        pytest.skip(f"this kernel has no fchmodat2: {alone.stderr.strip()}")
    return exe


@pytest.mark.system
@pytest.mark.skipif(not shutil.which("valgrind"), reason="needs valgrind")
@pytest.mark.parametrize(("source", "said", "fix"), [
    ("fchmodat2.c", ("valgrind does not support system call 452",),
     "measure CPU time with perf instead (--metric task_clock)"),
    # Under callgrind the Go program fails in every run, on the system call or earlier, in
    # the crash Go's signals cause in some runs: either is named as valgrind's.
    ("fchmodat2.go", (), "valgrind does not support Go programs: measure CPU time with perf "
     "instead (--metric task_clock), or count a non-Go build of the workload under valgrind"),
], ids=["c", "go"])
def test_valgrind_refusing_a_system_call_is_named_as_valgrinds_limit(
        perflab: Perflab, tmp_path: Path, source: str, said: tuple[str, ...], fix: str) -> None:
    exe = _unsupported_syscall_program(source, tmp_path)
    out = perflab("stat", "-r", "1", "--metric", "instructions", "--", str(exe), timeout=300)
    line = out.fails(2, "valgrind could not run fchmodat2", *said)
    assert "valgrind's limit, not the command's fault" in line
    assert line.partition(" -- ")[2] == fix
