"""Instruction counts from valgrind's callgrind, for machines without a hardware PMU.

Counts are exact and repeatable for the same binary, input and environment, so perflab compares
them without statistics.  The timed region is counted alone when the workload names a function
(``--toggle-collect``), or uses callgrind's client requests through perflab_region.h.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from perflab.collectors.process import RunOutcome, RunRequest, execute, resolve_executable
from perflab.errors import PerflabError


def require_valgrind() -> str:
    path = shutil.which("valgrind")
    if not path:
        raise PerflabError(
            "valgrind is not installed, and it is needed to count instructions without a PMU",
            "install it (apt-get install valgrind) or choose another --metric")
    return path


def callgrind_argv(valgrind: str, out_file: str, log_file: str, toggle_symbol: str | None,
                   client_region: bool) -> list[str]:
    argv = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out_file}",
            f"--log-file={log_file}", "--dump-line=no", "--compress-strings=no"]
    if toggle_symbol:
        argv += ["--collect-atstart=no", f"--toggle-collect={toggle_symbol}"]
    elif client_region:
        argv += ["--collect-atstart=no"]
    return argv


_TOTALS = re.compile(r"^(?:totals|summary):\s+(\d+)", re.MULTILINE)


def parse_callgrind_total(text: str) -> int:
    m = _TOTALS.search(text)
    if not m:
        raise ValueError("no 'totals:' or 'summary:' line in the callgrind output")
    return int(m.group(1))


# valgrind's own failures, as its log says them: (pattern, what failed).  Any of them means
# valgrind could not run the program, whatever the program would have done alone.
_VALGRIND_FAILURES = (
    (re.compile(r"^(\w+): (\S+:\d+) \([^)]*\): Assertion '(.*)' failed\.", re.MULTILINE),
     "{0} crashed (assertion {2!r} failed at {1})"),
    (re.compile(r"valgrind: the 'impossible' happened:\s*\n\s*(.*)"),
     "valgrind crashed (the 'impossible' happened: {0})"),
    (re.compile(r"vex: the `impossible' happened:\s*\n\s*(.*)"),
     "valgrind's VEX crashed ({0})"),
    (re.compile(r"VALGRIND INTERNAL ERROR: (.*)"), "valgrind failed ({0})"),
    (re.compile(r"unhandled instruction bytes: ((?:0x[0-9A-Fa-f]+ ?){1,6})"),
     "valgrind does not know an instruction of the program (bytes {0}...)"),
    (re.compile(r"Valgrind's memory management: out of memory"),
     "valgrind ran out of memory"),
    (re.compile(r"valgrind: Fatal error at startup: (.*)"), "valgrind could not start ({0})"),
    (re.compile(r"WARNING: unhandled \S+ syscall: (\d+)"),
     "valgrind does not support system call {0}, which the program made"),
)

# What a Go binary holds (its build information's section), for the fix's wording.
_GO_MARK = b".go.buildinfo"


def valgrind_failure(log: str) -> str:
    """What valgrind's log says failed in valgrind itself ("" when nothing did): its tool's
    assertion, its 'impossible' crash, an instruction or a system call it does not support,
    its own memory running out."""
    for pattern, what in _VALGRIND_FAILURES:
        m = pattern.search(log)
        if m:
            return what.format(*(g.strip() for g in m.groups()))
    return ""


def _is_go(program: str) -> bool:
    try:
        with open(program, "rb") as f:
            return _GO_MARK in f.read(64 << 20)
    except OSError:
        return False


def _valgrind_fix(program: str) -> str:
    alt = ("measure CPU time with perf instead (--metric task_clock), or count a non-Go "
           "build of the workload under valgrind")
    if _is_go(program):
        return f"valgrind does not support Go programs: {alt}"
    return "measure CPU time with perf instead (--metric task_clock)"


def _read_log(log_file: str) -> str:
    try:
        with open(log_file, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def execute_callgrind(req: RunRequest, toggle_symbol: str | None = None,
                      client_region: bool = False) -> RunOutcome:
    """Run the command under callgrind; the outcome's values hold ``instructions``.  A run
    that valgrind itself could not make (valgrind_failure) says so, with a fix that is not
    "fix the command"."""
    valgrind = require_valgrind()
    tmp = tempfile.mkdtemp(prefix="perflab-callgrind-")
    out_file, log_file = os.path.join(tmp, "callgrind.out"), os.path.join(tmp, "valgrind.log")
    env = dict(req.env)
    if client_region:
        env["PERFLAB_CALLGRIND_REGION"] = "1"
    wrapped = RunRequest(
        argv=callgrind_argv(valgrind, out_file, log_file, toggle_symbol, client_region) + req.argv,
        env=env, cwd=req.cwd, pin=req.pin, timeout=req.timeout, counters=[], backend=None,
        region=False)
    outcome = execute(wrapped)
    # Timings of a run under valgrind mean nothing: keep only counts and the workload's own
    # non-time figures.
    own = {k: outcome.values[k] for k in ("ops", "checksum", "threads") if k in outcome.values}
    outcome.values = own
    try:
        if outcome.status not in ("ok", "timeout"):
            failed = valgrind_failure(_read_log(log_file))
            if failed:
                program = os.path.basename(req.argv[0])
                outcome.error = (f"valgrind could not run {program}: {failed} (valgrind's "
                                 f"limit, not the command's fault; {outcome.error})")
                outcome.fix = _valgrind_fix(resolve_executable(req.argv[0], req.env))
        if outcome.status == "ok":
            with open(out_file) as f:
                total = parse_callgrind_total(f.read())
            outcome.values["instructions"] = float(total)
            if own.get("ops"):
                outcome.values["instructions_per_op"] = total / own["ops"]
    except (OSError, ValueError) as e:
        outcome.status = "failed"
        log = (_read_log(log_file).strip().splitlines() or [""])[-1]
        outcome.error = f"callgrind produced no count ({e}) {log}".strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcome
