"""A study's answer in one screen (the terminal's end of ``perflab run`` and ``perflab report``):
per metric a matrix of ratios to the baseline with verdict marks (cells down, configurations
across), then the study's axes answered in words with their intervals, then the warnings, one
line per kind.  The long tables go to tables.md and the HTML page; this names where."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.format import fmt_interval, fmt_params, fmt_sig
from perflab.model import Configuration, ResultSet
from perflab.reports.matrix import cell_params, config_names, interval_words, unit_of
from perflab.reports.plots import choose_x, study_axes
from perflab.reports.terminal import verdict_style
from perflab.stats import (
    Comparison,
    adjust_family,
    axis_comparisons,
    compare_samples,
    cpu_share_caveat,
    parse_estimator,
    round_pairs,
)
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis

LEGEND = ("▲ slower or larger, ▼ faster or smaller, = equivalent within the band, ? inconclusive, "
          "~ different, - not measured")
MARKS = {"slower": "▲", "larger": "▲", "faster": "▼", "smaller": "▼", "equivalent": "=",
         "inconclusive": "?"}


def mark(c: Comparison) -> str:
    """The verdict as one character (LEGEND)."""
    return MARKS.get(c.verdict, "~")


def _ratio_text(c: Comparison) -> str:
    return "-" if math.isnan(c.ratio) else f"{fmt_sig(c.ratio, 3)}{mark(c)}"


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
    pairs = sibling_comparisons(a, metric)
    for suffix, comps in pairs.items():
        out.append(f"{suffix} / its sibling: {_by_name(comps)} ({len(comps)} comparisons: "
                   f"{_verdict_counts(comps)}; {interval_words(comps)})")
    step = per_step(a, metric)
    if step:
        out.append(step)
    return out


def sibling_comparisons(a: Analysis, metric: str) -> dict[str, list[Comparison]]:
    """Configurations named NAME-SUFFIX beside a configuration NAME (cpp-async and cpp): the
    variant against its sibling in each cell, paired by round (they ran in the same rounds),
    one family per suffix."""
    rs, plan = a.rs, a.plan
    names = config_names(rs)
    info = rs.metrics.get(metric)
    band = plan.band_for(metric, info)
    by_key = {(c.cell, c.name): c for c in rs.configurations}
    out: dict[str, list[Comparison]] = {}
    for name in names:
        base_name, _, suffix = name.rpartition("-")
        if not base_name or base_name not in names:
            continue
        for (cell, n), cand in by_key.items():
            base = by_key.get((cell, base_name))
            if n != name or base is None:
                continue
            paired = bool(rs.settings.interleaved)
            xs, ys = (round_pairs(base, cand, metric) if paired
                      else (base.samples(metric), cand.samples(metric)))
            if not xs or not ys:
                continue
            c = compare_samples(xs, ys, threshold=band.rel, abs_band=band.absolute,
                                paired=paired, metric=metric, baseline=base_name,
                                candidate=name, estimator=parse_estimator(plan.estimator),
                                alpha=plan.alpha, info=info)
            c.cell = cell
            out.setdefault(suffix, []).append(c)
    for comps in out.values():
        adjust_family(comps, plan.correction, plan.alpha, info)
        for c in comps:
            c.correction = plan.correction
    return out


def per_step(a: Analysis, metric: str) -> str | None:
    """What one more step of the x axis (depth: one more frame) costs per configuration: the
    least-squares slope of the metric over the runs, with its 95% t-interval, at the first
    value of every other parameter."""
    rs = a.rs
    x = choose_x(rs, (rs.settings.suite.report or {}).get("x"))
    cells = rs.cells()
    if not x or not cells:
        return None
    first = {k: v for k, v in cell_params(rs, cells[0]).items() if k != x}
    unit = unit_of(rs, metric)
    parts = []
    for name in config_names(rs):
        cfgs = [c for c in rs.configurations if c.name == name and _at(c, first, x)]
        pts = [(float(c.params[x]), v) for c in cfgs for v in c.samples(metric)]
        xs = np.array([p[0] for p in pts])
        if len(set(xs.tolist())) < 2 or len(pts) < 4:
            continue
        # scipy.stats costs 0.35 s to import: only a study with a depth-like axis pays it.
        from scipy import stats as sps

        fit = sps.linregress(xs, np.array([p[1] for p in pts]))
        half = float(sps.t.ppf(0.975, len(pts) - 2)) * float(fit.stderr)
        ci = fmt_interval(fit.slope, fit.slope - half, fit.slope + half, unit)
        parts.append(f"{name} {ci}")
    if not parts:
        return None
    at = f" at {fmt_params(first)}" if first else ""
    return (f"{metric} per extra {x}{at} (least-squares slope over the runs, 95% CI): "
            + ", ".join(parts))


def _at(c: Configuration, fixed: dict[str, Any], x: str) -> bool:
    if x not in c.params:
        return False
    try:
        float(c.params[x])
    except (TypeError, ValueError):
        return False
    return all(str(c.params.get(k)) == str(v) for k, v in fixed.items())
