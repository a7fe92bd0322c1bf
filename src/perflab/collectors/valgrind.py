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

from perflab.collectors.process import RunOutcome, RunRequest, execute
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


def execute_callgrind(req: RunRequest, toggle_symbol: str | None = None,
                      client_region: bool = False) -> RunOutcome:
    """Run the command under callgrind; the outcome's values hold ``instructions``."""
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
        if outcome.status == "ok":
            with open(out_file) as f:
                total = parse_callgrind_total(f.read())
            outcome.values["instructions"] = float(total)
            if own.get("ops"):
                outcome.values["instructions_per_op"] = total / own["ops"]
    except (OSError, ValueError) as e:
        outcome.status = "failed"
        log = ""
        try:
            log = open(log_file).read().strip().splitlines()[-1]
        except (OSError, IndexError):
            pass
        outcome.error = f"callgrind produced no count ({e}) {log}".strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcome
