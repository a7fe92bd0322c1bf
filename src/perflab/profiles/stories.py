"""Counter stories: one sentence per candidate configuration saying which counters moved.

The way the 2009 lat_mmap thread reasoned: "about 200 more instructions per mm syscall, cache
misses almost unchanged" -- per operation where both configurations report the same operation
count (the JSON key ``ops``), else per run; each amount is the comparison's own estimate, and
the test's verdict decides what counts as moved.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from perflab.format import fmt_change_pct, fmt_ci_end, fmt_count, fmt_sig, fmt_signed
from perflab.model import Configuration, ResultSet
from perflab.stats import MOVED, Comparison

# The counters a story talks about, in the order it names them, with the words it uses.
STORY_COUNTERS: tuple[tuple[str, str], ...] = (
    ("instructions", "instructions"),
    ("cycles", "cycles"),
    ("branches", "branches"),
    ("cache_references", "cache references"),
    ("cache_misses", "cache misses"),
    ("branch_misses", "branch misses"),
    ("page_faults", "page faults"),
    ("minor_faults", "minor faults"),
    ("major_faults", "major faults"),
    ("context_switches", "context switches"),
    ("cpu_migrations", "CPU migrations"),
    ("task_clock", "task_clock"),
)
_WORDS = dict(STORY_COUNTERS)


def _name(x: Any) -> str:
    return str(getattr(x, "name", x))


def _find(rs: ResultSet, name: str, cell: str) -> Configuration | None:
    for c in rs.configurations:
        if c.name == name and c.cell == cell:
            return c
    for c in rs.configurations:  # a comparison made outside a cell
        if c.name == name:
            return c
    return None


def _ops(cfg: Configuration) -> float | None:
    """The operations a run of ``cfg`` made (the workload's ``ops``), if every run says."""
    ops = [r.values.get("ops") for r in cfg.measured_runs()]
    return statistics.median(ops) if ops and all(ops) else None  # type: ignore[arg-type]


def _amount(metric: str, delta: float, per: str) -> str:
    """'+203 instructions per op', '+1.2 µs of task_clock per op': perflab.format's numbers,
    rounded to three significant figures (a story's amounts are approximate: "+200", not
    "+200.1"; "-501,000", not "-500,969")."""
    rounded = float(fmt_sig(delta))
    if metric == "task_clock":  # stored in s
        return f"{fmt_signed(rounded, 's')} of task_clock{per}"
    scale = 1
    while per and 0 < abs(rounded) * scale < 0.01 and scale < 10 ** 9:
        scale *= 1000  # a count's change keeps two decimals: "-0 minor faults per op"
    if scale > 1:
        per = f" per {fmt_count(scale)} ops"
    return f"{fmt_signed(rounded * scale, 'count')} {_WORDS.get(metric, metric)}{per}"


def _pct(c: Comparison) -> str:
    if any(math.isnan(x) for x in (c.ratio, c.ci_low, c.ci_high)):
        return ""
    return f"{fmt_change_pct(c.change_pct, 1)} [{fmt_ci_end(c.ci_low)}, {fmt_ci_end(c.ci_high)}]"


def counter_story(rs: ResultSet, comparisons: Iterable[Comparison]) -> list[str]:
    """One line per non-baseline configuration (per cell) whose comparisons include counters:
    what moved (with the change per operation and in percent) and what did not."""
    groups: dict[tuple[str, str, str], dict[str, Comparison]] = {}
    for c in comparisons:
        if c.metric not in _WORDS:
            continue
        key = (c.cell, _name(c.baseline), _name(c.candidate))
        groups.setdefault(key, {})[c.metric] = c
    lines: list[str] = []
    for (cell, base_name, cand_name), by_metric in groups.items():
        base, cand = _find(rs, base_name, cell), _find(rs, cand_name, cell)
        moved: list[str] = []
        still: list[str] = []
        unclear: list[str] = []
        for metric, _ in STORY_COUNTERS:
            comp = by_metric.get(metric)
            if comp is None:
                continue
            pct = _pct(comp)
            amount = ""
            diff = comp.diff
            if not math.isfinite(diff) and base is not None and math.isfinite(comp.ratio):
                samples = base.samples(metric)  # a comparison made without its centre
                diff = statistics.median(samples) * (comp.ratio - 1) if samples else math.nan
            if base is not None and cand is not None and math.isfinite(diff):
                # The amount the comparison estimates (comp.diff: the baseline's centre x
                # (ratio - 1)), so its sign and size are the percentage's (the difference of
                # two per-op medians read "-0.0186 ns of task_clock per op (+195.7%)"); per op
                # only where both ran the same number of operations, else per run.
                ops = _ops(base), _ops(cand)
                if ops[0] and ops[0] == ops[1]:
                    amount = _amount(metric, diff / ops[0], " per op")
                else:
                    amount = _amount(metric, diff, "")
            word = _WORDS[metric]
            if comp.verdict in MOVED:
                moved.append(f"{amount or word} ({pct})" if pct else (amount or word))
            elif comp.verdict == "equivalent":
                still.append(f"{word} ({fmt_change_pct(comp.change_pct, 1)})" if pct else word)
            else:
                unclear.append(f"{word} ({pct})" if pct else word)
        parts = []
        # "nothing moved" is a claim; with counters undecided it is not one perflab can make.
        parts.append("moved: " + ", ".join(moved) if moved else
                     "nothing shown to move" if unclear else "nothing moved")
        if still:
            parts.append("unchanged: " + ", ".join(still))
        if unclear:
            parts.append("undecided: " + ", ".join(unclear))
        where = _cell_text(cell)
        if not any(c.paired or c.deterministic for c in by_metric.values()):
            where += " (not interleaved)"
        lines.append(f"{cand_name} vs {base_name}{where}: " + "; ".join(parts))
    return lines


def _cell_text(cell: str) -> str:
    import json

    try:
        params = json.loads(cell)
    except (TypeError, ValueError):
        return ""
    if not params:
        return ""
    return " (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
