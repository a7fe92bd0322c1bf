"""Checks of user input that more than one verb needs: one home, so every verb refuses bad input
with the same line (problem -- fix) before it measures anything.

typer checks types; these check meaning (a threshold is a fraction, a timeout is positive and
finite, a CPU list names CPUs this process may use) and turn what Python's parsers raise
(shlex's "No closing quotation") into a PerflabError.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_plain, fmt_share


def positive(value: float | None, option: str, example: str) -> float | None:
    """None stays None; otherwise a finite number > 0."""
    if value is None:
        return None
    if not math.isfinite(value) or value <= 0:
        raise PerflabError(f"{option} {fmt_plain(value)} must be a positive number of seconds"
                           if option in ("--timeout", "--budget") else
                           f"{option} {fmt_plain(value)} must be a positive number",
                           f"e.g. {option} {example}")
    return value


def fraction(value: float, option: str, example: str = "0.05") -> float:
    """A relative band or precision: 0 < value < 1 (0.05 means 5%)."""
    if not math.isfinite(value) or value <= 0:
        raise PerflabError(f"{option} {fmt_plain(value)} must be a positive fraction",
                           f"e.g. {option} {example} for {fmt_share(float(example), 0)}")
    if value >= 1:
        raise PerflabError(
            f"{option} {fmt_plain(value)} means {fmt_share(value, 0)}: {option} is a fraction, "
            "not a percentage",
            f"write {option} {fmt_plain(value / 100)} for {fmt_plain(value)}%")
    return value


def thresholds(values: list[str] | None, known: dict[str, Any],
               option: str = "--threshold") -> tuple[float | None, dict[str, str]]:
    """``--threshold`` as given (repeatable): a plain fraction (every metric's relative band,
    0.01 = 1%) and METRIC=BAND or KIND=BAND (a band of its own: 64KiB, 0.5%, 3events; see
    judging.parse_band), each checked against ``known`` (metric name -> MetricInfo) for its name
    and units.  Returns (threshold or None, bands)."""
    from perflab.judging import parse_band
    from perflab.metrics import BAND_KINDS

    kind_unit = {"time": "s", "memory": "KiB", "count": "count"}
    threshold: float | None = None
    bands: dict[str, str] = {}
    for text in values or []:
        name, sep, spec = text.partition("=")
        if not sep:
            try:
                value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
            except ValueError:
                raise PerflabError(f"{option} {text} is neither a fraction nor METRIC=BAND",
                                   f"e.g. {option} 0.01, or {option} max_rss=64KiB") from None
            threshold = fraction(value, option, "0.01")
            continue
        name = name.strip()
        if name in BAND_KINDS:
            unit = kind_unit[name]
        elif name in known:
            unit = known[name].unit
        else:
            raise PerflabError(
                f"{option} {text}: no metric '{name}' here",
                f"name a metric these runs produce ({', '.join(sorted(known)[:8])}, ...) or a "
                f"kind ({', '.join(BAND_KINDS)})")
        try:
            parse_band(spec, unit)
        except ValueError as e:
            raise PerflabError(f"{option} {text}: {e}",
                               f"e.g. {option} {name}=" + {"s": "2%", "KiB": "64KiB"}.get(
                                   unit, "1%")) from None
        bands[name] = spec.strip()
    return threshold, bands


def parse_cpus(text: str | None) -> list[int] | None:
    """'0' | '0,1' | '0-3' -> CPU numbers this process may run on (each bound checked before a
    range is expanded, so '0-100000000' is refused at once)."""
    if not text:
        return None
    have = sorted(os.sched_getaffinity(0))
    cpus: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise PerflabError(f"--pin {text!r} is not a CPU list",
                               "write e.g. --pin 0, --pin 0,1 or --pin 0-1")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise PerflabError(f"--pin {part.strip()} is a reversed range",
                               f"write it low-high: --pin {b}-{a}")
        bad = [c for c in (a, b) if c not in have]
        if bad or any(c not in have for c in range(a, b + 1)):
            raise PerflabError(f"--pin {part.strip()} names CPUs this process cannot use",
                               f"choose among {_ranges(have)}")
        cpus += [c for c in range(a, b + 1) if c not in cpus]
    return cpus


def _ranges(cpus: list[int]) -> str:
    out: list[str] = []
    for c in cpus:
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        elif out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def split_command(text: str, where: str) -> list[str]:
    """shlex.split with one clear line for unbalanced quotes or an empty command."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise PerflabError(f"{where} {text!r} cannot be split into arguments ({e})",
                           "balance the quotes, or escape a literal quote with \\") from None
    if not argv:
        raise PerflabError(f"{where} is empty", "give the program to run")
    return argv


def writable_file(path: Path | None, option: str) -> Path | None:
    """An output file the verb will write at the end: checked before anything is measured."""
    if path is None:
        return None
    if path.is_dir():
        raise PerflabError(f"{option} {path} is a directory", f"give a file name, e.g. "
                           f"{option} {path / 'result'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise PerflabError(f"{option} {path}: the directory {parent} does not exist",
                           f"create it first (mkdir -p {parent}) or choose another path")
    existed = path.exists()
    try:  # the only sure test (permissions, read-only mounts, /proc): open it for writing
        with open(path, "a"):
            pass
    except OSError as e:
        raise PerflabError(f"{option} {path} is not writable ({e.strerror})",
                           "choose a path you can write, or fix its permissions") from None
    if not existed:
        path.unlink(missing_ok=True)
    return path


def output_dir(path: Path, option: str) -> Path:
    """A directory a verb writes its outputs into (a report, a dashboard): made with its parents
    and checked writable, so a bad path is one line, not a traceback after the work.  A verb that
    measures calls it before measuring."""
    if path.exists() and not path.is_dir():
        raise PerflabError(f"{option} {path} is a file, not a directory",
                           f"give a directory, e.g. {option} {path}.d")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PerflabError(f"cannot create the directory {path} for {option} ({e.strerror})",
                           f"choose another {option} you can write") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise PerflabError(f"{option} {path} is not writable",
                           f"choose another {option} you can write, or fix its permissions")
    return path


def reject_surrogates(args: list[str]) -> None:
    """Arguments that are not valid UTF-8 (Python keeps them as lone surrogates) cannot be stored
    as names or commands in the result database: refuse them with one line."""
    for i, a in enumerate(args):
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            shown = a.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise PerflabError(f"argument {i + 1} ('{shown}') is not valid UTF-8",
                               "rename the file or pass the name in UTF-8 (perflab stores "
                               "names and commands as text)") from None
