"""Read `perf script` text into samples (a stack of frames each, leaf first).

Hand-written because nothing kept on PyPI parses `perf script` with the module (DSO) and the
address of every frame, which the top-symbols table and the "no symbols" diagnosis need; the
folded stacks for flame graphs are derived from the same samples, so there is one parser.

It reads perf's default layout and the one perflab asks for
(``-F comm,pid,tid,time,period,event,ip,sym,dso``): a header line per sample,
``comm pid/tid [cpu] time: [period] event:`` followed, with call graphs, by one indented
``address symbol (module)`` line per frame and a blank line; without call graphs the single
frame sits on the header line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

UNKNOWN = "[unknown]"

_HEADER = re.compile(
    r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+(?:\[(?P<cpu>\d+)\]\s+)?"
    r"(?P<time>\d+\.\d+):\s+(?:(?P<period>\d+)\s+)?(?P<event>[^\s:]\S*?):(?:\s+|$)(?P<rest>.*)$"
)
# The module is the last parenthesised group that starts like a path or a [pseudo-module]:
# C++ symbols carry parentheses of their own.
_FRAME = re.compile(r"^\s*(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s*\((?P<dso>(?:/|\[)[^\n]*)\)\s*$")
_FRAME_NO_DSO = re.compile(r"^\s*(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s*$")
_SYMOFF = re.compile(r"\+0x[0-9a-fA-F]+$")


@dataclass(frozen=True)
class Frame:
    """One frame of a sampled stack."""

    symbol: str  # the function, or "<module>+0x<addr>" when perf found no symbol
    module: str  # the DSO's path, "[kernel.kallsyms]", "[unknown]"...
    address: int
    resolved: bool

    @property
    def module_name(self) -> str:
        m = self.module
        return m if m.startswith("[") else os.path.basename(m)


@dataclass
class Sample:
    comm: str
    pid: int
    tid: int
    time: float
    event: str
    period: int  # the sample's weight (ns of cpu-clock, cycles...); 1 when not printed
    frames: list[Frame] = field(default_factory=list)  # leaf first


def _frame(addr: str, sym: str, dso: str) -> Frame:
    address = int(addr, 16)
    sym = _SYMOFF.sub("", sym.strip())
    dso = dso.strip() or UNKNOWN
    if not sym or sym == UNKNOWN:
        base = dso if dso.startswith("[") else os.path.basename(dso)
        base = base.strip("[]") or "unknown"
        return Frame(symbol=f"{base}+0x{address:x}", module=dso, address=address, resolved=False)
    return Frame(symbol=sym, module=dso, address=address, resolved=True)


def _inlined(fr: Frame, outer: list[Frame]) -> Frame:
    """perf prints an inlined frame as ``addr name (inlined)`` with no module: it belongs to
    the module of the frame printed before it."""
    if fr.module == UNKNOWN and fr.symbol.endswith(" (inlined)") and outer:
        return Frame(fr.symbol, outer[-1].module, fr.address, fr.resolved)
    return fr


def parse_frame(line: str) -> Frame | None:
    m = _FRAME.match(line)
    if m:
        return _frame(m["addr"], m["sym"], m["dso"])
    m = _FRAME_NO_DSO.match(line)
    if m:
        return _frame(m["addr"], m["sym"], UNKNOWN)
    return None


def parse_perf_script(lines: Iterable[str]) -> Iterator[Sample]:
    """Yield the samples of `perf script` output (text lines, with or without newlines)."""
    current: Sample | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            if current is not None:
                yield current
                current = None
            continue
        # perf right-aligns the command name, so a header may start with blanks too.
        m = _HEADER.match(line.lstrip()) if not line.startswith("#") else None
        if m is None and line[0].isspace():
            if current is not None:
                fr = parse_frame(line)
                if fr is not None:
                    current.frames.append(_inlined(fr, current.frames))
            continue
        if m is None:
            continue  # perf's own notices ("Warning: ...") are not samples
        if current is not None:
            yield current
        period = int(m["period"]) if m["period"] else 1
        current = Sample(comm=m["comm"], pid=int(m["pid"]), tid=int(m["tid"] or m["pid"]),
                         time=float(m["time"]), event=m["event"], period=period)
        rest = m["rest"].strip()
        if rest:  # no call graph: the one frame is on the header line
            fr = parse_frame(rest)
            if fr is not None:
                current.frames.append(fr)
    if current is not None:
        yield current
