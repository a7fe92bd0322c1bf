"""A study's answer in one screen (the terminal's end of ``perflab run`` and ``perflab report``):
per metric a matrix of ratios to the baseline with verdict marks (cells down, configurations
across), then the study's axes answered in words with their intervals, then the warnings, one
line per kind.  The long tables go to tables.md and the HTML page; this names where."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from perflab.format import fmt_fixed, fmt_interval, fmt_params, fmt_sig
from perflab.model import Configuration, ResultSet
from perflab.reports.matrix import cell_params, config_names, interval_words, unit_of
from perflab.reports.plots import choose_x, study_axes
from perflab.reports.terminal import verdict_style
from perflab.stats import (
    Comparison,
    axis_comparisons,
    cpu_share_caveat,
    fit_slope,
    parse_estimator,
    sibling_comparisons,
    slope_pool,
)
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis

LEGEND = ("▲ slower or larger, ▼ faster or smaller, = equivalent within the band, ? inconclusive, "
          "~ different, - not measured")
MARKS = {"slower": "▲", "larger": "▲", "faster": "▼", "smaller": "▼", "equivalent": "=",
         "inconclusive": "?"}


def verdict_mark(c: Comparison) -> str:
    """The verdict as one character (LEGEND)."""
    return MARKS.get(c.verdict, "~")


def _ratio_text(c: Comparison) -> str:
    return "-" if math.isnan(c.ratio) else f"{fmt_sig(c.ratio, 3)}{verdict_mark(c)}"


def varying_params(rs: ResultSet) -> list[str]:
    """The parameters whose values differ between cells, in the suite's order."""
    seen: dict[str, set[str]] = {}
    for cell in rs.cells():
        for k, v in cell_params(rs, cell).items():
            seen.setdefault(k, set()).add(str(v))
    return [k for k, vs in seen.items() if len(vs) > 1]


def ratio_matrix(a: Analysis, metric: str, width: int | None = None) -> Table | None:
    """Cells down (one column per varying parameter), configurations across, each the ratio
    of the candidate to the cell's baseline with its verdict mark.  Wider than ``width`` with
    its borders, it is drawn compact (Table.compact) with each name broken after its '-'
    (cpp-async over two lines)."""
    rs = a.rs
    comps = [c for c in a.comparisons if c.metric == metric]
    if not comps:
        return None
    by = {(c.cell, c.candidate): c for c in comps}
    names = [n for n in config_names(rs) if any(c.candidate == n for c in comps)]
    params = varying_params(rs) or ["cell"]
    base = rs.settings.suite.baseline or comps[0].baseline
    t = Table.of(f"{metric}: ratio to {base} per cell ({len(comps)} comparisons, "
                 f"{comps[0].correction})",
                 [Column(p, align="left") for p in params] + [Column(n) for n in names])
    for cell in rs.cells():
        vals = cell_params(rs, cell)
        row: list[str | Cell] = [str(vals.get(p, fmt_params(vals) or "-")) for p in params]
        for n in names:
            c = by.get((cell, n))
            row.append(Cell(_ratio_text(c), verdict_style(c)) if c else "-")
        t.add_row(*row)
    if width is not None and t.natural_width() > width:
        t.compact = True
        t.columns = [Column(c.header.replace("-", "-\n"), c.align) for c in t.columns]
    return t


def _spread(comps: Sequence[Comparison]) -> str:
    """One configuration's ratios over cells: "1.92 [1.63, 2.26]" or "1.92-5.5 [1.63, 5.79]"."""
    rs_ = [c.ratio for c in comps if not math.isnan(c.ratio)]
    if not rs_:
        return "-"
    lo = min(c.ci_low for c in comps)
    hi = max(c.ci_high for c in comps)
    low, high = fmt_sig(min(rs_), 3), fmt_sig(max(rs_), 3)
    centre = low if low == high else f"{low}-{high}"
    return f"{centre} [{fmt_sig(lo, 3)}, {fmt_sig(hi, 3)}]"


def _verdict_counts(comps: Sequence[Comparison]) -> str:
    counts: dict[str, int] = {}
    for c in comps:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda x: -x[1]))


def _by_name(comps: Sequence[Comparison]) -> str:
    groups: dict[str, list[Comparison]] = {}
    for c in comps:
        groups.setdefault(c.candidate, []).append(c)
    return ", ".join(f"{n} {_spread(cs)}" for n, cs in groups.items())


def axis_answers(a: Analysis, metric: str) -> list[str]:
    """Each study axis (a suite's [report] kinds, its thread scaling) in words: per
    configuration the ratio over the cells (its range), with the widest CI."""
    rs = a.rs
    out = []
    for param, hi, lo in study_axes(rs, rs.settings.suite.report or {}):
        ac = axis_comparisons(rs, metric, param, hi, lo, plan=a.plan)
        if ac:
            share = cpu_share_caveat(rs, metric, param, hi, lo)
            out.append(f"{param}={hi} / {param}={lo}: {_by_name(ac)} ({len(ac)} comparisons: "
                       f"{_verdict_counts(ac)}; {interval_words(ac)})"
                       + (f"; {share}" if share else ""))
    # each variant against its sibling, judged as the result's own comparisons are (the pairs
    # it judged already are its own)
    pairs = sibling_comparisons(a.rs, metric, plan=a.plan, judged=a.comparisons)
    for suffix, comps in pairs.items():
        out.append(f"{suffix} / its sibling: {_by_name(comps)} ({len(comps)} comparisons: "
                   f"{_verdict_counts(comps)}; {interval_words(comps)})")
    step = per_step(a, metric)
    if step:
        out.append(step)
    return out


def per_step(a: Analysis, metric: str) -> str | None:
    """What one more step of the x axis (depth: one more frame) costs per configuration: the
    least-squares slope of the metric over the runs with its 95% interval, widened for the lag-1
    correlation as the verdicts are (stats.fit_slope, the correlation pooled over every
    configuration's series), at the first value of every other parameter."""
    rs = a.rs
    x = choose_x(rs, (rs.settings.suite.report or {}).get("x"))
    cells = rs.cells()
    if not x or not cells:
        return None
    first = {k: v for k, v in cell_params(rs, cells[0]).items() if k != x}
    unit = unit_of(rs, metric)
    groups = {name: [(float(c.params[x]), c.samples(metric)) for c in rs.configurations
                     if c.name == name and _at(c, first, x)]
              for name in config_names(rs)}
    est = parse_estimator(a.plan.estimator)
    pool = slope_pool(list(groups.values()), est)
    parts, rho = [], 0.0
    for name, group in groups.items():
        fit = fit_slope(group, est, pool)
        if fit is not None:
            parts.append(f"{name} {fmt_interval(fit.est, fit.low, fit.high, unit)}")
            rho = max(rho, fit.serial)
    if not parts:
        return None
    at = f" at {fmt_params(first)}" if first else ""
    how = (f"lag-1 {fmt_fixed(rho, 2)} pooled over {pool.series} series" if pool is not None
           else f"lag-1 {fmt_fixed(rho, 2)}")
    return (f"{metric} per extra {x}{at} (least-squares slope over the runs, 95% CI widened "
            f"for {how}): " + ", ".join(parts))


def _at(c: Configuration, fixed: dict[str, Any], x: str) -> bool:
    if x not in c.params:
        return False
    try:
        float(c.params[x])
    except (TypeError, ValueError):
        return False
    return all(str(c.params.get(k)) == str(v) for k, v in fixed.items())
