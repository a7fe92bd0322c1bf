"""CPU-bound neighbours that a benchmark starts itself to measure "under load".

One home for the benchmarks that need them (run_all.py, fleet.py).  Each neighbour is a Python
busy loop that dies with the benchmark (PR_SET_PDEATHSIG), so a benchmark killed by a signal
or a time limit leaves no spinning process behind.  The benchmarks' other shared helpers live
here too: ``load`` (the load averages they print beside every figure) and ``save_figures``.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def load() -> list[float]:
    """The 1/5/15-minute load averages, rounded, to record beside each figure."""
    return [round(x, 2) for x in os.getloadavg()]


def save_figures(doc: Any, stem: str, out: Path | None = None) -> Path:
    """A benchmark's figures as JSON in ``out``, else benchmarks/STEM-DATE.json; says where."""
    dest = out or Path(__file__).resolve().parent / f"{stem}-{time.strftime('%Y-%m-%d')}.json"
    dest.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written to {dest}")
    return dest


class Neighbours:
    """COUNT CPU-bound busy loops, started and stopped by the benchmark (by their pids)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Neighbours:
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                               preexec_fn=_die_with_parent))
        time.sleep(2.0)  # let the scheduler spread them
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def main(argv: list[str]) -> int:
    """``python benchmarks/neighbours.py [--count N] -- COMMAND...``: run COMMAND with N (2)
    CPU-bound neighbours beside it (``make test-busy``); prints the load before and after and
    returns COMMAND's exit status."""
    count = 2
    if argv[:1] == ["--count"]:
        count, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: neighbours.py [--count N] -- COMMAND...", file=sys.stderr)
        return 2
    with Neighbours(count):
        print(f"neighbours: {count} CPU-bound loops started (load {load()})", flush=True)
        t0 = time.monotonic()
        rc = subprocess.call(argv)
        print(f"neighbours: {' '.join(argv)} exited {rc} after {time.monotonic() - t0:.0f} s "
              f"(load {load()})", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
