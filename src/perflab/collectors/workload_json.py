"""The workload's own figures: the JSON object on the last non-empty line of its stdout."""

from __future__ import annotations

import json
import math
from typing import Any

from perflab.format import fmt_plain

# Of stdout and of stderr kept per run (process.py's tails, perflab-launch.c's TAIL_LIMIT):
# the workload JSON line and the last error line live in it.
TAIL_BYTES = 1 << 20


class WorkloadJSONError(ValueError):
    pass


def parse_last_json(stdout: str, *, cut: bool = False) -> dict[str, float] | None:
    """Numeric top-level keys of the trailing JSON object, or None when the output has none.

    Output whose last line starts with '{' but does not parse is an error (a workload that meant
    to report and broke), not silence.  So is a last line that ends with '}' but began before
    the kept tail of the output (``cut``: only the last TAIL_BYTES are kept): its metrics
    would otherwise vanish without a word.
    """
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None
    last = lines[-1].strip()
    if cut and len(lines) == 1 and last.endswith("}") and not stdout.startswith("{"):
        raise WorkloadJSONError(
            f"the last line of stdout is longer than the {TAIL_BYTES >> 20} MiB perflab keeps "
            "of a run's output, so its JSON cannot be read; print the JSON object on a line "
            f"of its own, under {TAIL_BYTES >> 20} MiB")
    if not last.startswith("{"):
        return None
    try:
        obj: Any = json.loads(last)
    except json.JSONDecodeError as e:
        raise WorkloadJSONError(f"malformed JSON on the last line of stdout ({e.msg} at column "
                                f"{e.colno}): {last[:120]}") from e
    if not isinstance(obj, dict):
        raise WorkloadJSONError("the last line of stdout is JSON but not an object")
    out: dict[str, float] = {}
    for k, v in obj.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue  # labels and nested details are not metrics
        if not math.isfinite(v):
            raise WorkloadJSONError(f"the workload reported {k} = {v} (not a finite number); "
                                    "report a number, or leave the key out")
        if v < 0:
            # Every perflab metric is a time, a count or a rate; a negative one would give
            # nonsense ratios ("-200% faster").
            raise WorkloadJSONError(f"the workload reported {k} = {fmt_plain(v)}, a negative "
                                    "value; metrics must be times, counts or rates (>= 0)")
        out[str(k)] = float(v)
    return out


def runtime_label(stdout: str) -> str | None:
    """The trailing JSON object's ``runtime`` string ("mono 6.8.0.105 (...)", ".NET Core
    3.1.23", "OpenJDK 17..."): the runtime that actually ran, as the workload itself saw it.
    None when the output has no such label (or no JSON line)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines or not lines[-1].lstrip().startswith("{"):
        return None
    try:
        obj: Any = json.loads(lines[-1])
    except json.JSONDecodeError:
        return None
    label = obj.get("runtime") if isinstance(obj, dict) else None
    return label.strip() if isinstance(label, str) and label.strip() else None
