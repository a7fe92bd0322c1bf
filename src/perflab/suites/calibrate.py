"""Iterations per configuration, resolved once per cell from a target timed-region duration.

A suite with ``[measure] calibrate = 0.1`` asks for about 100 ms of timed region per run.  A
fixed iteration count cannot give that across a matrix: a throw at depth 0 in C++ costs ~1 us,
at depth 100 in Python ~14 us, so 4,000 iterations are 4 ms for one and 56 ms for the other,
and a 4 ms region is at the mercy of every interrupt (CV 10-37% in the first demo).

Before a cell is measured, each configuration whose workload takes ``iterations`` is run once
(a probe; twice when the first is too short to time), its own per-thread ns per op read from its
JSON, and the count that gives the target duration is fixed for all of that cell's runs, so its
runs stay comparable with each other (the workloads' own "calibrate to 0.5 s" mode would pick a
different count in every run).  The probes also warm the caches and the page cache; they are not
stored as runs.  The counts chosen are recorded in the result's settings.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from perflab.collectors.process import RunRequest, execute
from perflab.errors import PerflabError

MAX_PROBES = 3
MIN_PROBE_FRACTION = 0.02  # a probe shorter than 2% of the target is re-run, longer
MAX_GROWTH = 200.0  # from one probe to the next


class CalibrationFailed(PerflabError):
    pass


@dataclass
class Calibrated:
    iterations: int
    probes: int
    probe_region_s: float  # the last probe's timed region (per thread)
    seconds: float  # wall time the probes took


def region_seconds(values: dict[str, float], iterations: int) -> float | None:
    """One thread's timed-region duration of a probe: the workload's per-thread ns per op times
    the iterations per thread; perflab's region clock or wall time when there is no ns_per_op."""
    if values.get("ns_per_op", 0) > 0:
        return values["ns_per_op"] * iterations / 1e9
    for key in ("region_time", "wall_time"):
        if values.get(key, 0) > 0:
            return values[key]
    return None


def next_count(n: int, region_s: float, target: float) -> tuple[int, bool]:
    """(the next iteration count, whether it is final) after a probe of n took region_s."""
    if region_s <= 0:
        return min(int(n * MAX_GROWTH), 10**12), False
    want = n * target / region_s
    if region_s >= MIN_PROBE_FRACTION * target:
        return round_up(want), True
    return round_up(min(want, n * MAX_GROWTH)), False


def round_up(x: float) -> int:
    """Up to two significant figures (12,345 -> 13,000), so counts read well in commands."""
    if x <= 100:
        return max(1, math.ceil(x))
    scale = 10 ** (int(math.log10(x)) - 1)
    return int(math.ceil(x / scale) * scale)


def clamp(n: int, param: Any) -> int:
    lo = getattr(param, "min", None)
    hi = getattr(param, "max", None)
    n = max(n, int(lo) if lo is not None and lo > 0 else 1)
    return min(n, int(hi)) if hi is not None else n


def calibrate(argv_for: Any, env: dict[str, str], start: int, target: float, param: Any,
              name: str, timeout: float | None = None) -> Calibrated:
    """Probe ``argv_for(n)`` until the timed region's duration is known, then scale to target."""
    n = clamp(max(1, start), param)
    spent = 0.0
    region = 0.0
    for probe in range(1, MAX_PROBES + 1):
        out = execute(RunRequest(argv=argv_for(n), env={**os.environ, **env}, counters=[],
                                 region=False, timeout=timeout))
        spent += out.values.get("wall_time", 0.0)
        if out.status != "ok":
            raise CalibrationFailed(f"{name}: the calibration run with iterations={n} failed: "
                                    f"{out.error}", "fix the configuration, or set iterations "
                                    "and drop [measure] calibrate")
        got = region_seconds(out.values, n)
        if got is None:
            raise CalibrationFailed(f"{name}: the calibration run reported no ns_per_op and no "
                                    "time", "calibrate only workloads that report ns_per_op")
        region = got
        nxt, final = next_count(n, got, target)
        nxt = clamp(nxt, param)
        if final or nxt == n or probe == MAX_PROBES:
            return Calibrated(nxt, probe, region, spent)
        n = nxt
    raise AssertionError("unreachable")  # pragma: no cover
