"""Terminal tables in the spirit of `perf stat` and Ingo Molnar's side-by-side A/B table."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rich.table import Table

from perflab.model import BUILTIN_METRICS, Configuration, ResultSet
from perflab.reports.format import fmt_change, fmt_value
from perflab.stats import CORRECTION_NAMES, Comparison, summarize

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "equivalent": "cyan",
                 "inconclusive": "yellow"}

# Metrics shown by default, in perf stat's order; workload keys follow.
DEFAULT_ORDER = [
    "task_clock", "context_switches", "cpu_migrations", "page_faults", "cycles", "instructions",
    "branches", "branch_misses", "cache_references", "cache_misses", "instructions_per_op",
    "wall_time", "region_time", "user_time", "sys_time", "max_rss", "minor_faults",
    "major_faults", "voluntary_switches", "involuntary_switches",
]


def metrics_to_show(rs: ResultSet, requested: Sequence[str] | None = None) -> list[str]:
    """The primary metric first, then perflab's in perf stat's order, then workload figures
    that vary from run to run."""
    if requested:
        return [m for m in requested if m in rs.metrics]
    primary = rs.settings.get("primary_metric", "wall_time")
    out = [primary] if primary in rs.metrics else []
    out += [m for m in DEFAULT_ORDER if m in rs.metrics and m not in out]
    for m in rs.metrics:
        if m in out or m in BUILTIN_METRICS:
            continue
        # A workload key that never varies within a configuration is bookkeeping (an
        # operation count, a checksum, a thread count), not a measurement.
        if any(len(set(c.samples(m))) > 1 for c in rs.configurations):
            out.append(m)
    return out


def stat_table(rs: ResultSet, cfg: Configuration, metrics: Sequence[str]) -> Table:
    t = Table(title=f"{cfg.name}: {len(cfg.measured_runs())} runs", title_justify="left",
              header_style="bold")
    for col in ("metric", "median", "95% CI", "CV", "min", "max", "source"):
        t.add_column(col, justify="left" if col in ("metric", "source") else "right",
                     no_wrap=col != "source")
    primary = rs.settings.get("primary_metric")
    for m in metrics:
        info = rs.metrics[m]
        xs = cfg.samples(m)
        if not xs:
            continue
        s = summarize(xs, info.deterministic)
        ci = ("exact" if info.deterministic and s.ci_low == s.ci_high else
              "-" if math.isnan(s.ci_low) else
              f"{fmt_value(s.ci_low, info.unit)} .. {fmt_value(s.ci_high, info.unit)}")
        name = f"[bold]{m}[/]" if m == primary else m
        t.add_row(name, fmt_value(s.median, info.unit), ci,
                  "-" if math.isnan(s.cv) else f"{s.cv:.1%}", fmt_value(s.min, info.unit),
                  fmt_value(s.max, info.unit), info.source)
    return t


def compare_table(rs: ResultSet, comparisons: Sequence[Comparison], metrics: Sequence[str],
                  cell: str) -> Table:
    """Configurations as columns, metrics as rows, % change against the baseline with its CI."""
    configs = rs.configurations_in(cell)
    base = rs.baseline_in(cell)
    assert base is not None
    by_key = {(c.candidate, c.metric): c for c in comparisons if c.cell == cell}
    t = Table(header_style="bold", title_justify="left",
              title=None if cell == "{}" else f"cell {cell}")
    t.add_column("metric", no_wrap=True)
    t.add_column(f"{base.name} (baseline)", justify="right")
    others = [c for c in configs if c is not base]
    for c in others:
        t.add_column(c.name, justify="right")
        t.add_column("change [95% CI]", justify="right")
        t.add_column("verdict")
    primary = rs.settings.get("primary_metric")
    for m in metrics:
        info = rs.metrics[m]
        bs = base.samples(m)
        if not bs:
            continue
        sb = summarize(bs, info.deterministic)
        cv = "" if info.deterministic or math.isnan(sb.cv) else f" ±{sb.cv:.1%}"
        row = [f"[bold]{m}[/]" if m == primary else m, fmt_value(sb.median, info.unit) + cv]
        for c in others:
            cs = c.samples(m)
            comp = by_key.get((c.name, m))
            if not cs or comp is None:
                row += ["-", "-", ""]
                continue
            sc = summarize(cs, info.deterministic)
            cvc = "" if info.deterministic or math.isnan(sc.cv) else f" ±{sc.cv:.1%}"
            verdict = comp.verdict
            if verdict == "inconclusive" and comp.runs_needed:
                verdict += f" (~{comp.runs_needed} runs)"
            row += [fmt_value(sc.median, info.unit) + cvc,
                    fmt_change(comp.ratio, comp.ci_low, comp.ci_high, comp.deterministic),
                    f"[{VERDICT_STYLE[comp.verdict]}]{verdict}[/]"]
        t.add_row(*row)
    return t


def correction_line(correction: str, n_tests: int, threshold: float) -> str:
    return (f"verdicts: 95% CI of the median ratio vs a ±{threshold:.1%} band; p-values adjusted "
            f"with {CORRECTION_NAMES[correction]} across {n_tests} comparisons")


def warnings(rs: ResultSet) -> list[str]:
    """What makes these numbers less trustworthy (hyperfine-style warnings, and more)."""
    out: list[str] = []
    primary = rs.settings.get("primary_metric", "wall_time")
    cpus = rs.fingerprint.get("cpu_count") or 1
    for cfg in rs.configurations:
        failed = [r for r in cfg.runs if r.status != "ok"]
        if failed:
            out.append(f"{cfg.name}: {len(failed)} run(s) failed and were left out "
                       f"({failed[0].error})")
        xs = cfg.samples(primary)
        info = rs.metrics.get(primary)
        if len(xs) >= 4 and info and not info.deterministic:
            s = summarize(xs)
            if s.outliers:
                out.append(f"{cfg.name}: {s.outliers} statistical outlier(s) in {primary} "
                           "(outside 1.5 IQR); the median is robust to them, but a quiet machine "
                           "is better")
            if s.cv > 0.05:
                out.append(f"{cfg.name}: {primary} varies a lot (CV {s.cv:.1%}); consider "
                           "--pin, more runs, or a quieter machine")
        warm = [r for r in cfg.runs if r.warmup and primary in r.values]
        if warm and len(xs) >= 3 and warm[0].values[primary] > 1.5 * float(np.median(xs)):
            out.append(f"{cfg.name}: the warm-up run was much slower than the rest (caches, "
                       "JIT): warm-up matters here")
        invol = cfg.samples("involuntary_switches")
        if invol and float(np.median(invol)) > 50:
            out.append(f"{cfg.name}: {np.median(invol):.0f} involuntary context switches per run "
                       "(median): other work competed for the CPU")
    loads = [r.load1 for c in rs.configurations for r in c.runs if r.load1 is not None]
    if loads and max(loads) > max(1.0, 0.5 * cpus):
        out.append(f"the machine was busy: load average up to {max(loads):.2f} on {cpus} CPUs "
                   "during the runs")
    return out
