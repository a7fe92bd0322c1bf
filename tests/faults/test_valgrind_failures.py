"""A run valgrind itself cannot make is named as valgrind's limit, with a fix that is not
"fix the command": its log's own crash and unsupported messages are recognised
(collectors/valgrind.valgrind_failure), on logs valgrind 3.19 wrote (tests/fixtures/valgrind)
and on the real Go workload, which callgrind crashes on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from faults.helpers import Perflab
from perflab.collectors.valgrind import valgrind_failure

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "valgrind"
GO_EH = ROOT / "workloads" / "eh" / "go" / "build" / "eh"


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


@pytest.mark.system
@pytest.mark.skipif(not shutil.which("valgrind") or not GO_EH.exists(),
                    reason="needs valgrind and the built eh/go workload")
def test_valgrind_crashing_on_go_is_named_as_valgrinds_limit(perflab: Perflab) -> None:
    out = perflab("stat", "-r", "1", "--metric", "instructions", "--", str(GO_EH), timeout=300)
    line = out.fails(2, "valgrind could not run eh")
    assert "valgrind's limit, not the command's fault" in line
    assert "valgrind does not support Go programs" in line and "--metric task_clock" in line
    assert "fix the command" not in line
