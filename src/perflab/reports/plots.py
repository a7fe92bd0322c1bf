"""Plots of a matrix run (matplotlib, Agg, PNG and SVG), after the dotnet/runtime#77568 graphs.

- the metric against a numeric parameter, one line per configuration, the 95% CI as a band,
  one panel per combination of the other parameters (log scales where the data spans decades);
- the ratio to the baseline against the same parameter, CI as error bars, a line at 1;
- scaling: the metric at the largest ``threads`` over the smallest, per configuration;
- kind A vs kind B (hardware vs software exceptions): the ratio of the two per configuration.

``matplotlib.figure.Figure`` is used directly, not pyplot: no global state and no display.
"""

from __future__ import annotations

import itertools
import json
import math
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import printable
from perflab.format import fmt_share
from perflab.judging import Plan
from perflab.model import ResultSet
from perflab.reports.matrix import (
    cell_params,
    config_names,
    interval_words,
    unit_of,
)
from perflab.stats import Comparison, axis_comparisons, cpu_share_caveat

# matplotlib is imported where a plot is drawn: a report without plots, and the study axes
# (reports/report.py), load none of it (0.3 s of import, more on a busy machine).
if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from perflab.reports.analysis import Analysis

# One colour and marker per configuration: matplotlib's ten cycle colours, then five more, so
# that a study of 11-15 configurations (the eh-study has 11) does not draw two in one style.
COLOURS = [f"C{k}" for k in range(10)] + ["black", "navy", "teal", "maroon", "goldenrod"]
MARKERS = "osD^v<>ph*XP"


def colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def marker(i: int) -> str:
    return MARKERS[i % len(MARKERS)]


@dataclass
class PlotFile:
    name: str  # file stem
    title: str
    png: Path
    svg: Path
    caption: str
    figure: Figure | None = field(default=None, repr=False)  # kept for checks (scales, labels)


def caption_for(rs: ResultSet) -> str:
    fp = rs.fingerprint
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(rs.created_at or time.time()))
    cpu = fp.cpu_model or "unknown CPU"
    host = fp.hostname or "unknown host"
    n = fp.cpu_count
    cores = f", {n} CPUs" if n else ""
    return f"run {rs.id} - {when} - {host} ({cpu}{cores})"


def _params_of(rs: ResultSet) -> dict[str, list[Any]]:
    """Each parameter's values in the order the cells first use them."""
    vals: dict[str, list[Any]] = {}
    for cell in rs.cells():
        for k, v in cell_params(rs, cell).items():
            lst = vals.setdefault(k, [])
            if v not in lst:
                lst.append(v)
    return vals


def _numeric(vs: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in vs)


def choose_x(rs: ResultSet, preferred: str | None = None) -> str | None:
    params = _params_of(rs)
    if preferred and preferred in params and _numeric(params[preferred]):
        return preferred
    cands = [(len(v), k) for k, v in params.items() if _numeric(v) and len(v) > 1
             and k != "threads"]
    if not cands:
        cands = [(len(v), k) for k, v in params.items() if _numeric(v) and len(v) > 1]
    return max(cands)[1] if cands else None


def study_axes(rs: ResultSet, report: dict[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """The cross-cell ratios a study draws, as (param, a, b) for a over b: [report] kinds, and
    the scaling parameter's largest value over its smallest where it is not the x axis."""
    report = report or {}
    out: list[tuple[str, Any, Any]] = []
    kinds = choose_kinds(rs, report.get("kinds"))
    if kinds:
        out.append(kinds)
    scaling = report.get("scaling", "threads")
    vals = _params_of(rs).get(scaling)
    if (vals and len(vals) >= 2 and _numeric(vals)
            and scaling != choose_x(rs, report.get("x"))):
        out.append((scaling, max(vals), min(vals)))
    return out


def choose_kinds(rs: ResultSet, spec: dict[str, str] | None) -> tuple[str, str, str] | None:
    params = _params_of(rs)
    if spec:
        p = spec["param"]
        if p in params and spec["a"] in params[p] and spec["b"] in params[p]:
            return p, spec["a"], spec["b"]
        return None
    for k, v in params.items():
        if "hardware" in v and "software" in v:
            return k, "hardware", "software"
    return None


def _spans_decades(values: Sequence[float]) -> bool:
    pos = [v for v in values if v > 0 and math.isfinite(v)]
    return len(pos) > 1 and max(pos) / min(pos) >= 10


def _set_scales(ax: Axes, xs: Sequence[float], ys: Sequence[float], log_x: Any,
                log_y: Any) -> None:
    from matplotlib.ticker import LogFormatter, NullLocator

    if log_x is True or (log_x == "auto" and _spans_decades(xs)):
        if min(xs) <= 0:
            # Depth 0 is a real point: symlog keeps it while spacing 1..100 by decades.
            ax.set_xscale("symlog", linthresh=1)
            # Error bars' margins would otherwise stretch the axis to -1.
            ax.set_xlim(min(xs) - 0.3, max(xs) * 1.3)
        else:
            ax.set_xscale("log")
    if xs and all(float(v).is_integer() for v in xs):
        # An integer parameter (depth, threads) is ticked at its own values, as integers:
        # not "10^1" on a log axis, nor 1.2, 1.4 between 1 and 2 threads.
        ticks = sorted({float(v) for v in xs})
        ax.set_xticks(ticks, [f"{int(v)}" for v in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    if log_y is True or (log_y == "auto" and _spans_decades(ys)):
        ax.set_yscale("log")
        # Plain numbers on a log axis ("2", "20"), not "2x10^0".
        for set_formatter in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            set_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))


def _panels(rs: ResultSet, fixed: Sequence[str]) -> list[dict[str, Any]]:
    """Combinations of the parameters not on the x axis (one panel each)."""
    params = _params_of(rs)
    others = [k for k in params if k not in fixed]
    combos = []
    for combo in itertools.product(*(params[k] for k in others)):
        d = dict(zip(others, combo, strict=True))
        if any(all(cell_params(rs, c).get(k) == v for k, v in d.items()) for c in rs.cells()):
            combos.append(d)
    return combos or [{}]


def _cell_of(rs: ResultSet, params: dict[str, Any]) -> str | None:
    for c in rs.cells():
        if cell_params(rs, c) == params:
            return c
    return None


def _grid(n: int) -> tuple[int, int]:
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    return math.ceil(n / cols), cols


def _figure(n: int, title: str, caption: str,
            sharey: bool = False) -> tuple[Figure, list[Axes]]:
    """``sharey``: one y range for every panel, where panels are compared (ratios: 1.1 must
    look the same in each, not on independent ranges)."""
    from matplotlib.figure import Figure

    rows, cols = _grid(n)
    fig = Figure(figsize=(5.2 * cols, 3.8 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.supxlabel(caption, fontsize=8, color="0.35")
    return fig, axes[:n]


def _label(d: dict[str, Any]) -> str:
    return printable(", ".join(f"{k}={v}" for k, v in d.items()))


def _printable_texts(fig: Figure) -> None:
    """Every text of the figure (titles, labels, legends, ticks from matrix values) with its
    control characters shown as \\xNN: a font has no glyph for ESC (matplotlib warned
    "Glyph 27 missing" on stderr), and an SVG is a file a terminal may print."""
    from matplotlib.text import Text as MplText

    for t in fig.findobj(MplText):
        text = t.get_text()
        if text:
            t.set_text(printable(text, lines=True))


def fit_titles(fig: Figure) -> None:
    """Wrap the figure's title to the figure's width and each panel's title to its panel's,
    measured as drawn (a 5-inch single panel cut "cpu_ns_per_op: threads=8 over threads=1 per
    configuration (...)" at both sides); constrained layout then makes room for the lines."""
    import textwrap

    fig.draw_without_rendering()
    renderer = fig._get_renderer()  # type: ignore[attr-defined]
    titles = [(fig._suptitle, fig.bbox.width)] if fig._suptitle is not None else []
    titles += [(ax.title, ax.get_window_extent(renderer).width)
               for ax in fig.axes if ax.get_visible()]
    for text, room in titles:
        words = text.get_text()
        for _ in range(4):  # each pass measures the wrapped lines again
            wide = text.get_window_extent(renderer).width
            if not words or wide <= 0.96 * room:
                break
            longest = max(map(len, words.splitlines()))
            chars = max(8, int(longest * 0.96 * room / wide) - 1)
            text.set_text(textwrap.fill(" ".join(words.split()), chars))
            words = text.get_text()


def _save(fig: Figure, out: Path, name: str, title: str, caption: str) -> PlotFile:
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / f"{name}.png", out / f"{name}.svg"
    _printable_texts(fig)
    fit_titles(fig)
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    return PlotFile(name=name, title=title, png=png, svg=svg, caption=caption, figure=fig)


def plot_metric(analysis: Analysis, metric: str, x: str, out: Path, *, log_x: Any = "auto",
                log_y: Any = "auto") -> PlotFile | None:
    rs = analysis.rs
    sums = analysis.summaries(metric)
    if not sums:
        return None
    unit = unit_of(rs, metric)
    panels = _panels(rs, [x])
    cap = caption_for(rs)
    title = f"{metric} vs {x} (median, 95% CI band)"
    fig, axes = _figure(len(panels), title, cap)
    xvals = _params_of(rs)[x]
    for ax, panel in zip(axes, panels, strict=True):
        ys_all: list[float] = []
        for i, name in enumerate(config_names(rs)):
            pts = []
            for xv in sorted(xvals):
                cell = _cell_of(rs, {**panel, x: xv})
                s = sums.get((cell, name)) if cell else None
                if s is not None:
                    pts.append((xv, s.median, s.ci_low, s.ci_high))
            if not pts:
                continue
            # A string axis is categorical: its tick labels are made at draw time, from these.
            xs = [printable(p[0]) if isinstance(p[0], str) else p[0] for p in pts]
            med = [p[1] for p in pts]
            lo = [p[2] if math.isfinite(p[2]) else p[1] for p in pts]
            hi = [p[3] if math.isfinite(p[3]) else p[1] for p in pts]
            line = ax.plot(xs, med, marker=marker(i), color=colour(i),
                           label=name)[0]
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
            ys_all += med
        if not ys_all:
            continue
        _set_scales(ax, xvals, ys_all, log_x, log_y)
        ax.set_xlabel(x)
        ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
        ax.set_title(_label(panel) or metric, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, out, f"{_safe(metric)}-vs-{_safe(x)}", title, cap)


@dataclass(frozen=True)
class RatioWords:
    """What a ratio figure says: its title, its y axis, its file's name, and what the ratios
    measure (``caveat``, under the caption)."""
    title: str
    ylabel: str
    name: str
    caveat: str = ""


def _ratio_plot(rs: ResultSet, series: dict[str, dict[str, list[tuple[float, float, float,
                float]]]], x: str, words: RatioWords, out: Path,
                log_x: Any) -> PlotFile | None:
    """series: panel label -> line label -> [(x, ratio, lo, hi)]."""
    if not any(series.values()):
        return None
    title, caveat = words.title, words.caveat
    cap = caption_for(rs) + (f"\n{textwrap.fill(caveat, 110)}" if caveat else "")
    panels = [k for k, v in series.items() if v]
    fig, axes = _figure(len(panels), title, cap, sharey=True)
    xvals = _params_of(rs)[x]
    for ax, panel in zip(axes, panels, strict=True):
        ys: list[float] = []
        order = config_names(rs)
        for label, pts in series[panel].items():
            # One colour and marker per configuration in every panel and every plot.
            i = order.index(label) if label in order else len(order)
            pts = sorted(pts)
            # Dodge the series sideways a little so their error bars do not hide each other.
            k = (i - (len(order) - 1) / 2) * 0.035
            xs = [p[0] * (1 + k) if p[0] > 0 else p[0] + k for p in pts]
            r = [p[1] for p in pts]
            lo = [p[1] - p[2] if math.isfinite(p[2]) else 0.0 for p in pts]
            hi = [p[3] - p[1] if math.isfinite(p[3]) else 0.0 for p in pts]
            ax.errorbar(xs, r, yerr=[lo, hi], marker=marker(i), capsize=3,
                        color=colour(i),
                        label=label)
            ys += r
        ax.axhline(1.0, color="0.4", linestyle="--", linewidth=1)
        _set_scales(ax, list(xvals), ys + [1.0], log_x, "auto")
        ax.set_xlabel(x)
        ax.set_ylabel(words.ylabel)
        ax.set_title(panel, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, out, words.name, title, cap)


def plot_ratio_to_baseline(rs: ResultSet, comparisons: Sequence[Comparison], metric: str,
                           x: str, out: Path, *, log_x: Any = "auto") -> PlotFile | None:
    series: dict[str, dict[str, list[tuple[float, float, float, float]]]] = {}
    base = ""
    for c in comparisons:
        if c.metric != metric:
            continue
        params = cell_params(rs, c.cell)
        if x not in params:
            continue
        xv = params.pop(x)
        base = c.baseline
        series.setdefault(_label(params) or metric, {}).setdefault(c.candidate, []).append(
            (xv, c.ratio, c.ci_low, c.ci_high))
    # The bars are the verdicts' own intervals, at the family-adjusted levels (Holm's are
    # wider than 95%): the title names them, not "95% CI".
    levels = sorted({round(c.ci_level, 4) for c in comparisons
                     if c.metric == metric and math.isfinite(c.ratio)}) or [0.95]
    level = (f"{fmt_share(levels[0])} CI" if len(levels) == 1 else
             f"{fmt_share(levels[0])}-{fmt_share(levels[-1])} CIs") + (
        ", family-adjusted" if levels[-1] > 0.9501 else "")
    words = RatioWords(f"{metric}: ratio to the baseline {base} ({level})",
                        f"{metric} ratio to {base} (x)", f"{_safe(metric)}-ratio-to-baseline")
    return _ratio_plot(rs, series, x, words, out, log_x)


def _cross_ratio(rs: ResultSet, metric: str, x: str, param: str, a: Any, b: Any, plan: Plan,
                 ) -> tuple[dict[str, dict[str, list[tuple[float, float, float, float]]]], str]:
    """Per configuration, metric at param=a over metric at param=b, against x: the intervals
    of stats.axis_comparisons (paired by round where measured in the same rounds), and the
    words for them in a title."""
    series: dict[str, dict[str, list[tuple[float, float, float, float]]]] = {}
    comps = axis_comparisons(rs, metric, param, a, b, plan=plan)
    for c in comps:
        rest = json.loads(c.cell)
        if x not in rest:
            continue
        xv = rest.pop(x)
        series.setdefault(_label(rest) or metric, {}).setdefault(c.candidate, []).append(
            (xv, c.ratio, c.ci_low, c.ci_high))
    return series, interval_words(comps)


def plot_scaling(analysis: Analysis, metric: str, x: str, out: Path, *,
                 param: str = "threads", log_x: Any = "auto") -> PlotFile | None:
    rs = analysis.rs
    vals = _params_of(rs).get(param)
    if not vals or len(vals) < 2 or not _numeric(vals):
        return None
    lo, hi = min(vals), max(vals)
    series, words = _cross_ratio(rs, metric, x, param, hi, lo, analysis.plan)
    share = cpu_share_caveat(rs, metric, param, hi, lo)
    said = RatioWords(f"{metric}: {param}={hi} over {param}={lo} per configuration ({words})",
                       f"{metric} at {param}={hi} / {param}={lo} (x)",
                       f"{_safe(metric)}-scaling-{_safe(param)}", caveat=str(share or ""))
    return _ratio_plot(rs, series, x, said, out, log_x)


def plot_kinds(analysis: Analysis, metric: str, x: str, out: Path,
               kinds: tuple[str, str, str], *, log_x: Any = "auto") -> PlotFile | None:
    rs = analysis.rs
    param, a, b = kinds
    series, words = _cross_ratio(rs, metric, x, param, a, b, analysis.plan)
    said = RatioWords(f"{metric}: {a} over {b} per configuration ({words})",
                       f"{metric} {param}={a} / {param}={b} (x)",
                       f"{_safe(metric)}-{_safe(a)}-vs-{_safe(b)}")
    return _ratio_plot(rs, series, x, said, out, log_x)


def plot_bars(analysis: Analysis, metric: str, out: Path) -> PlotFile | None:
    """Without a numeric parameter: grouped bars of the median per cell, CI as error bars."""
    rs = analysis.rs
    sums = analysis.summaries(metric)
    if not sums:
        return None
    cap = caption_for(rs)
    cells = rs.cells()
    names = config_names(rs)
    unit = unit_of(rs, metric)
    label = f"{metric} ({unit})" if unit else metric
    if len(cells) == 1:
        # One cell (a compare): one horizontal bar per configuration, long names readable.
        title = f"{metric} per configuration (median, 95% CI)"
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 1.6 + 0.45 * len(names)), layout="constrained")
        ax = fig.subplots()
        fig.suptitle(title)
        fig.supxlabel(cap, fontsize=8, color="0.35")
        for i, name in enumerate(names):
            s = sums.get((cells[0], name))
            if s is None:
                continue
            lo = s.median - s.ci_low if math.isfinite(s.ci_low) else 0.0
            hi = s.ci_high - s.median if math.isfinite(s.ci_high) else 0.0
            ax.barh(i, s.median, xerr=[[lo], [hi]], capsize=3, color=colour(i))
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(label)
        ax.grid(True, axis="x", alpha=0.3)
        return _save(fig, out, f"{_safe(metric)}-bars", title, cap)
    title = f"{metric} per cell (median, 95% CI)"
    fig, axes = _figure(1, title, cap)
    ax = axes[0]
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        xs, ys, err_lo, err_hi = [], [], [], []
        for j, cell in enumerate(cells):
            s = sums.get((cell, name))
            if s is None:
                continue
            xs.append(j + i * width)
            ys.append(s.median)
            err_lo.append(s.median - s.ci_low if math.isfinite(s.ci_low) else 0.0)
            err_hi.append(s.ci_high - s.median if math.isfinite(s.ci_high) else 0.0)
        ax.bar(xs, ys, width=width, yerr=[err_lo, err_hi], capsize=3, label=name,
               color=colour(i))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cells))])
    ax.set_xticklabels([_label(cell_params(rs, c)) or "(single)" for c in cells], rotation=30,
                       ha="right", fontsize=8)
    ax.set_ylabel(label)
    ax.legend(fontsize=8)
    return _save(fig, out, f"{_safe(metric)}-bars", title, cap)


@dataclass
class TimelinePanel:
    """One series over commits, for plot_timeline: points in commit order, marks between."""
    title: str
    ylabel: str
    labels: list[str]  # one per point (short commits)
    median: list[float]
    ci_low: list[float]
    ci_high: list[float]
    marks: list[tuple[float, str, str]] = field(default_factory=list)  # (x, text, colour)


def plot_timeline(panels: Sequence[TimelinePanel], out: Path, title: str | None = None) -> Path:
    """One panel per series, stacked: medians with their 95% CIs over commits, and dashed marks
    (change points) between points.  One PNG at ``out`` (history, the dashboard, filed
    reports)."""
    from matplotlib.figure import Figure

    n = max(len(panels), 1)
    fig = Figure(figsize=(9, 2.8 * n + 0.6), layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    for ax, pn in zip(axes, panels, strict=False):
        xs = list(range(len(pn.median)))
        lo = [max(m - low, 0.0) for m, low in zip(pn.median, pn.ci_low, strict=True)]
        hi = [max(high - m, 0.0) for m, high in zip(pn.median, pn.ci_high, strict=True)]
        ax.errorbar(xs, pn.median, yerr=[lo, hi], fmt="o-", ms=4, lw=1, capsize=3,
                    color=colour(0), ecolor="tab:gray", label="median, 95% CI")
        for x, text, col in pn.marks:
            ax.axvline(x, color=col, ls="--", lw=1.2)
            ax.annotate(text, (x, 1.0), xycoords=("data", "axes fraction"), ha="center",
                        va="bottom", color=col, fontsize=8)
        step = max(1, len(xs) // 20)  # keep the labels legible on long series
        ax.set_xticks(xs[::step], [printable(t) for t in pn.labels[::step]], rotation=45,
                      ha="right", fontsize=7)
        ax.set_ylabel(pn.ylabel)
        ax.set_title(pn.title, fontsize=9, pad=14)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    out.parent.mkdir(parents=True, exist_ok=True)
    _printable_texts(fig)
    fit_titles(fig)
    fig.savefig(out, dpi=100)
    return out


def _safe(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(s))


def all_plots(analysis: Analysis, metrics: Sequence[str], out: Path,
              report: dict[str, Any] | None = None) -> list[PlotFile]:
    """Every plot that the result's parameters allow, for each metric: the analysis'
    summaries and comparisons, the axes' comparisons judged by its plan."""
    rs, comparisons = analysis.rs, analysis.comparisons
    report = report or {}
    log_x = report.get("log_x", "auto")
    log_y = report.get("log_y", "auto")
    x = choose_x(rs, report.get("x"))
    kinds = choose_kinds(rs, report.get("kinds"))
    scaling = report.get("scaling", "threads")
    files: list[PlotFile] = []
    for metric in metrics:
        if x is None:
            p = plot_bars(analysis, metric, out)
            if p:
                files.append(p)
            continue
        for p in (plot_metric(analysis, metric, x, out, log_x=log_x, log_y=log_y),
                  plot_ratio_to_baseline(rs, comparisons, metric, x, out, log_x=log_x),
                  plot_scaling(analysis, metric, x, out, param=scaling, log_x=log_x)
                  if scaling != x else None,
                  plot_kinds(analysis, metric, x, out, kinds, log_x=log_x) if kinds else None):
            if p is not None:
                files.append(p)
    return files
