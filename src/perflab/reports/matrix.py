"""Tables of a matrix run: per cell the median and CI of each configuration, and the
regression-report layout (rows = cells, columns = base, diff, ratio, verdict).

Everything is built as plain rows (lists of dicts) first, then rendered as rich tables, Markdown
or CSV, so every output says the same thing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from perflab.format import (
    env_differences,
    fmt_change,
    fmt_change_pct,
    fmt_cv,
    fmt_env,
    fmt_interval,
    fmt_p,
    fmt_params,
    fmt_pct,
    fmt_ratio,
    fmt_share,
    fmt_signed,
    fmt_value,
)
from perflab.model import Configuration, ResultSet
from perflab.reports.modes import mark
from perflab.stats import Comparison, Summary
from perflab.table import Table

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from perflab.reports.analysis import Analysis


def suite_view(rs: ResultSet) -> ResultSet:
    """The result without configurations a resumed suite superseded (interrupted cells)."""
    sup = set(rs.settings.suite.superseded or [])
    if not sup:
        return rs
    return replace(rs, configurations=[c for c in rs.configurations if c.id not in sup])


def is_exact(rs: ResultSet, metric: str) -> bool:
    info = rs.metrics.get(metric)
    return bool(info and info.deterministic)


def unit_of(rs: ResultSet, metric: str) -> str:
    info = rs.metrics.get(metric)
    if info is not None and info.unit:
        return info.unit
    return "ns" if metric.startswith("ns_") or metric.endswith("_ns") else ""


def fmt_ci(s: Summary, unit: str, exact: bool = False) -> str:
    """``median [low, high] unit`` (perflab/format.py: one formatter for every table)."""
    if s.n == 0:
        return "-"
    return fmt_interval(s.median, s.ci_low, s.ci_high, unit, exact=exact)


def cell_params(rs: ResultSet, cell: str) -> dict[str, Any]:
    """A cell's parameters, in the order the suite gave them (the cell key is sorted JSON;
    a ``compare`` result's cell may not be parameters at all)."""
    for c in rs.configurations:
        if c.cell == cell:
            return dict(c.params)
    try:
        got = json.loads(cell)
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def cell_label(cell: str, rs: ResultSet | None = None) -> str:
    """``depth=10 threads=2``, for tables and warnings."""
    params = cell_params(rs, cell) if rs is not None else json.loads(cell)
    return fmt_params(params) or "(single cell)"


def config_names(rs: ResultSet) -> list[str]:
    seen: dict[str, None] = {}
    for c in rs.configurations:
        seen.setdefault(c.name, None)
    return list(seen)


def medians_rows(a: Analysis, metric: str) -> list[dict[str, str]]:
    """One row per cell: the cell's parameters, then median [CI] per configuration."""
    rs = a.rs
    unit = unit_of(rs, metric)
    sums = a.summaries(metric)
    names = config_names(rs)
    rows = []
    for cell in rs.cells():
        row: dict[str, str] = {"cell": cell_label(cell, rs)}
        for n in names:
            s = sums.get((cell, n))
            row[n] = (fmt_ci(s, unit, is_exact(rs, metric))
                      + _mark(a, cell, n, metric)) if s else "-"
        rows.append(row)
    return rows


def _mark(a: Analysis, cell: str, name: str, metric: str) -> str:
    """modes.mark of the configuration ``name`` of ``cell`` (the last of that name, as
    Analysis.summaries keeps)."""
    cfg = next((c for c in reversed(a.rs.configurations_in(cell)) if c.name == name), None)
    return mark(a, cfg, metric) if cfg is not None else ""


def delta_value(c: Comparison) -> float | None:
    """The comparison's change in the metric's own unit: the candidate's shown value less the
    baseline's (Comparison.cand_center - base_center), the same estimate as the ratio."""
    return c.diff if math.isfinite(c.diff) else None


def fmt_delta(c: Comparison, unit: str) -> str:
    """delta_value in the metric's own unit (KiB, ns)."""
    d = delta_value(c)
    return "-" if d is None else fmt_signed(d, unit, like=c.base_center)


def fmt_verdict(c: Comparison) -> str:
    """The verdict as every report prints it (Comparison.label: reason, regression or
    improvement, not interleaved)."""
    return c.label


def comparison_rows(a: Analysis, metric: str) -> list[dict[str, str]]:
    """The regression-report layout: one row per (cell, candidate) for ``metric``."""
    rs = a.rs
    unit = unit_of(rs, metric)
    rows = []
    for c in a.comparisons_of(metric):
        rows.append({
            "cell": cell_label(c.cell, rs),
            "configuration": c.candidate,
            # The values the change is made of (stats.Comparison.base_center, cand_center).
            "base": fmt_value(c.base_center, unit) + _mark(a, c.cell, c.baseline, metric),
            "diff": fmt_value(c.cand_center, unit) + _mark(a, c.cell, c.candidate, metric),
            "delta": fmt_delta(c, unit),
            "ratio": fmt_ratio(c),
            "change": fmt_change_pct(c.change_pct, 1),
            "p": "-" if c.p_value is None else fmt_p(c.p_value),
            "verdict": fmt_verdict(c),
            **_status(rs),
        })
    return rows


def comparison_csv_rows(a: Analysis, metric: str) -> list[dict[str, Any]]:
    """comparison_rows for a CSV reader: each formatted column followed by its numbers (in
    the metric's unit, named as results.csv names them; base_value and diff_value are the
    values the change is made of), so a spreadsheet need not parse
    "5,426 [4,875, 6,002] ns"."""
    sums = a.summaries(metric)
    unit = unit_of(a.rs, metric)
    out = []
    for c, text in zip(a.comparisons_of(metric), comparison_rows(a, metric), strict=True):
        b, d = sums.get((c.cell, c.baseline)), sums.get((c.cell, c.candidate))
        row: dict[str, Any] = {"cell": text["cell"], "configuration": text["configuration"],
                               "baseline": c.baseline, "unit": unit}
        for key, s, shown in (("base", b, c.base_center), ("diff", d, c.cand_center)):
            row.update({key: text[key], f"{key}_value": shown,
                        f"{key}_median": s.median if s else None,
                        f"{key}_ci_low": s.ci_low if s else None,
                        f"{key}_ci_high": s.ci_high if s else None})
        row.update({"delta": text["delta"], "delta_value": delta_value(c),
                    "ratio": text["ratio"], "ratio_value": c.ratio, "ratio_ci_low": c.ci_low,
                    "ratio_ci_high": c.ci_high, "change": text["change"],
                    "change_pct": c.change_pct, "p": text["p"], "p_adjusted": c.p_value,
                    "verdict": text["verdict"], "decision": c.verdict})
        out.append(row)
    return out


def configuration_rows(rs: ResultSet) -> list[dict[str, str]]:
    """What each configuration ran: its command (the first cell's, with the number of cells
    whose parameters vary it) and its benchmark, so a grep for the program finds it in the HTML, the
    Markdown and the CSV."""
    rows: dict[str, dict[str, str]] = {}
    cells: dict[str, int] = {}
    firsts: dict[str, Configuration] = {}
    for c in rs.configurations:
        firsts.setdefault(c.name, c)
    # The variables that tell configurations apart (runtime knobs), set before the command as
    # a shell would: configurations that run one command differ only there.
    envs = dict(zip(firsts, env_differences([c.env for c in firsts.values()]), strict=True))
    for c in rs.configurations:
        cells[c.name] = cells.get(c.name, 0) + 1
        if c.name not in rows:
            cmd = " ".join(c.command)
            rows[c.name] = {"configuration": c.name + (" (baseline)" if c.is_baseline else ""),
                            "benchmark": c.benchmark if c.benchmark != cmd else "-",
                            "command": " ".join(filter(None, (fmt_env(envs[c.name]), cmd)))}
    for name, n in cells.items():
        if n > 1:
            rows[name]["command"] += f"  (first of {n} cells)"
    return list(rows.values())


def axis_rows(rs: ResultSet, comparisons: Sequence[Comparison]) -> list[dict[str, str]]:
    """A study axis (stats.axis_comparisons): one row per (other parameters, configuration)."""
    return [{"cell": cell_label(c.cell, rs), "configuration": c.candidate,
             "ratio": fmt_ratio(c), "change": fmt_change_pct(c.change_pct, 1),
             "p": "-" if c.p_value is None else fmt_p(c.p_value), "verdict": fmt_verdict(c)}
            for c in comparisons]


def interval_words(comps: Sequence[Comparison]) -> str:
    """How the intervals of these comparisons were made, for a title: "95.0%-99.2% CIs,
    holm-adjusted, paired by round" or "95.0% CIs, not interleaved"."""
    if not comps:
        return "95% CIs"
    levels = sorted(c.ci_level for c in comps)
    level = (f"{fmt_share(levels[0])} CIs" if levels[0] == levels[-1] else
             f"{fmt_share(levels[0])}-{fmt_share(levels[-1])} CIs") + (
        f", {comps[0].correction}-adjusted" if levels[-1] > 0.9501 else "")
    paired = sum(c.paired for c in comps)
    how = ("paired by round" if paired == len(comps) else "not interleaved" if not paired
           else f"{paired} of {len(comps)} paired by round")
    return f"{level}, {how}"


def _spread_text(s: Summary, unit: str, exact: bool, value: float | None = None) -> str:
    """``value ±CV`` for the A/B/C table: ``value`` is the comparison's (base_center or
    cand_center, whose ratio is the change beside it), the median where nothing was compared;
    an exact count is one number."""
    v = s.median if value is None or math.isnan(value) else value
    if exact and s.min == s.max:
        return f"{fmt_value(v, unit)} (exact)"
    return fmt_value(v, unit) + fmt_cv(v, s.cv, s.stdev, unit)


def counter_rows(a: Analysis, cell: str) -> list[dict[str, str]]:
    """Ingo Molnar's A/B/C table for one cell: configurations as columns, every metric as a
    row (median and spread), and each configuration's % delta against the baseline.  Where the
    run compared that metric, the delta is the comparison's (with its CI); otherwise it is the
    ratio of medians, a description rather than a verdict."""
    rs = a.rs
    configs = rs.configurations_in(cell)
    base = rs.baseline_in(cell) or (configs[0] if configs else None)
    if base is None:
        return []
    others = [c for c in configs if c is not base]
    comp = {(c.candidate, c.metric): c for c in a.comparisons if c.cell == cell}
    rows: list[dict[str, str]] = []
    for m, info in rs.metrics.items():
        bs = base.samples(m)
        if not bs:
            continue
        exact = bool(info.deterministic)
        sb = a.summary(base, m)
        first = next((comp[(c.name, m)] for c in others if (c.name, m) in comp), None)
        row = {"metric": m, f"{base.name} (base)": _spread_text(
            sb, info.unit, exact, None if first is None else first.base_center)}
        b_med = sb.median
        for c in others:
            xs = c.samples(m)
            cp = comp.get((c.name, m))
            row[c.name] = _spread_text(a.summary(c, m), info.unit, exact, None if cp is None
                                       else cp.cand_center) if xs else "-"
            if cp is not None:
                delta = fmt_change(cp, info.unit)
            elif xs and b_med:
                delta = fmt_pct(a.summary(c, m).median / b_med) + (" (exact)" if exact else "")
            else:
                delta = "-"
            row[f"Δ {c.name}"] = delta
        rows.append(row)
    return rows


_RAW_COLUMNS = {"metric", "unit", "configuration", "baseline", "runs", "median", "ci_low",
                "ci_high", "cv", "ratio", "ratio_ci_low", "ratio_ci_high", "p_adjusted",
                "verdict", "label", "runs_needed", "command", "status"}


def _status(rs: ResultSet) -> dict[str, str]:
    """The column a CSV row of a result that did not complete carries (status interrupted or
    failed): its figures are of the runs stored before it stopped."""
    return {} if rs.status == "complete" else {"status": rs.status}


def raw_rows(a: Analysis, metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Machine-readable rows (CSV): numbers, not formatted text."""
    rs = a.rs
    comp = {(c.cell, c.candidate, c.metric): c for c in a.comparisons}
    rows: list[dict[str, Any]] = []
    for metric in metrics:
        sums = a.summaries(metric)
        for c in rs.configurations:
            s = sums.get((c.cell, c.name))
            if s is None:
                continue
            cmp_ = comp.get((c.cell, c.name, metric))
            row: dict[str, Any] = {"metric": metric, "unit": unit_of(rs, metric)}
            # A matrix parameter keeps its own column: one named like a column of ours (a
            # parameter "n", "median") is written as "param.NAME", never overwritten.
            row.update({(f"param.{k}" if k in _RAW_COLUMNS else k): v
                        for k, v in c.params.items()})
            row.update({"configuration": c.name, "command": " ".join(c.command),
                        "baseline": c.is_baseline, "runs": s.n,
                        "median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high,
                        "cv": s.cv})
            if cmp_ is not None:
                row.update({"ratio": cmp_.ratio, "ratio_ci_low": cmp_.ci_low,
                            "ratio_ci_high": cmp_.ci_high, "p_adjusted": cmp_.p_value,
                            "verdict": cmp_.verdict, "label": cmp_.label,
                            "runs_needed": cmp_.runs_needed})
            row.update(_status(rs))
            rows.append(row)
    return rows


# The text columns of a matrix table (aligned left; the others are figures, aligned right);
# the key columns are never wrapped in the terminal.
LEFT = ("cell", "configuration", "metric")
_KEYS = ("cell", "configuration")


def table(rows: list[dict[str, str]], title: str = "", left: Collection[str] = LEFT,
          verdict_styles: Sequence[str] | None = None) -> Table:
    """Rows as the one table model; ``verdict_styles`` colour each row's verdict cell in the
    terminal (from terminal.verdict_style of the row's comparison: the rule lives there)."""
    return Table.from_dicts(rows, title, left=left, no_wrap=_KEYS, fold=True,
                            styles=verdict_styles)


def rich_table(rows: list[dict[str, str]], title: str,
               verdict_styles: Sequence[str] | None = None) -> RichTable:
    """Rows as a terminal table (see table)."""
    return table(rows, title, verdict_styles=verdict_styles).rich_table()


def to_csv(rows: list[dict[str, Any]]) -> str:
    """Rows of any shapes as CSV: the columns are every key, in the order first seen."""
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    return Table.from_dicts([{k: r.get(k) for k in keys} for r in rows]).to_csv() if rows \
        else "\n"


