"""Terminal tables in the spirit of `perf stat` and Ingo Molnar's side-by-side A/B table."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from perflab.format import (
    fmt_band,
    fmt_change,
    fmt_cv,
    fmt_fixed,
    fmt_seconds,
    fmt_share,
    fmt_sig,
    fmt_value,
)
from perflab.judging import Estimator, parse_estimator
from perflab.metrics import BUILTIN_METRICS, MetricInfo, in_family
from perflab.model import Configuration, ResultSet
from perflab.reports.modes import mark, modal_samples, notes
from perflab.stats import (
    CORRECTION_NAMES,
    Comparison,
    Summary,
    bands_used,
    pooled_serial_notes,
)
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "equivalent": "cyan",
                 "inconclusive": "yellow", "larger": "bold", "smaller": "bold",
                 "different": "bold magenta"}


def verdict_style(c: Comparison) -> str:
    """Red for a regression, green for an improvement, whatever the metric's words."""
    if c.regression:
        return "bold red"
    if c.improvement:
        return "bold green"
    return VERDICT_STYLE.get(c.verdict, "")

# Metrics shown by default, in perf stat's order; workload keys follow.
DEFAULT_ORDER = [
    "task_clock", "context_switches", "cpu_migrations", "page_faults", "cycles", "instructions",
    "branches", "branch_misses", "cache_references", "cache_misses", "instructions_per_op",
    "wall_time", "region_time", "user_time", "sys_time", "max_rss", "minor_faults",
    "major_faults", "voluntary_switches", "involuntary_switches",
]


def metrics_to_show(rs: ResultSet, requested: Sequence[str] | None = None) -> list[str]:
    """The ``requested`` metrics (each with its family's members), else the primary metric
    first, then perflab's in perf stat's order, then workload figures that vary from run to
    run."""
    if requested:  # a metric, or a family: a harness run's every benchmark's metric of it
        return list(dict.fromkeys(m for r in requested for m in rs.metrics if in_family(m, r)))
    primary = rs.settings.primary_metric or "wall_time"
    # The primary metric, or a harness run's every benchmark's metric of its family
    out = [m for m in rs.metrics if in_family(m, primary)]
    out += [m for m in DEFAULT_ORDER if m in rs.metrics and m not in out]
    for m in rs.metrics:
        if m in out or m in BUILTIN_METRICS:
            continue
        # A workload key that never varies within a configuration is bookkeeping (an
        # operation count, a checksum, a thread count), not a measurement.
        if any(len(set(c.samples(m))) > 1 for c in rs.configurations):
            out.append(m)
    return out


def _metric_rows(rs: ResultSet, cfg: Configuration, metrics: Sequence[str],
                 ) -> Iterator[tuple[str, Cell, MetricInfo, list[float]]]:
    """The rows of a table led by ``cfg``: (metric, its label, its info, cfg's samples) for each
    metric ``cfg`` has samples of; the primary metric's label is bold."""
    primary = rs.settings.primary_metric
    for m in metrics:
        xs = cfg.samples(m)
        if xs:
            yield m, Cell(m, "bold" if in_family(m, primary) else ""), rs.metrics[m], xs


def stat_table(a: Analysis, cfg: Configuration, metrics: Sequence[str],
               estimator: Estimator | None = None) -> Table:
    """One configuration: the centre (median, or --estimator's) with its 95% CI per metric."""
    rs = a.rs
    head = "median" if estimator is None or estimator.kind == "median" else estimator.label
    t = Table.of(f"{cfg.name}: {len(cfg.measured_runs())} runs",
                 [Column(col, "left" if col in ("metric", "source") else "right",
                         wrap=col == "source")
                  for col in ("metric", head, "95% CI", "CV", "min", "max", "source")])
    for m, name, info, _ in _metric_rows(rs, cfg, metrics):
        s = a.summary(cfg, m, estimator)
        ci = ("exact" if info.deterministic and s.ci_low == s.ci_high else
              "-" if math.isnan(s.ci_low) else
              f"{fmt_value(s.ci_low, info.unit)} .. {fmt_value(s.ci_high, info.unit)}")
        t.add_row(name, fmt_value(s.center, info.unit) + mark(a, cfg, m), ci,
                  "-" if math.isnan(s.cv) else fmt_share(s.cv), fmt_value(s.min, info.unit),
                  fmt_value(s.max, info.unit), info.source)
    t.notes += notes(modal_samples(a, [cfg], [m for m in metrics if cfg.samples(m)]))
    return t


def runs_line(cfg: Configuration, seconds: float) -> str:
    """Under stat's table: the measured runs (the count its title gives) and what else took
    the time, warm-up and failed runs, so the two counts agree; then the time it took."""
    measured = len(cfg.measured_runs())
    warm = sum(1 for r in cfg.runs if r.warmup)
    failed = len(cfg.runs) - measured - warm
    extra = ", ".join(f"{n} {what}" for n, what in ((warm, "warm-up"), (failed, "failed")) if n)
    return (f"{measured} runs" + (f" (and {extra})" if extra else "")
            + f" in {fmt_seconds(seconds)}")


def origin_line(rs: ResultSet) -> str:
    """Where a stored result comes from (results show): the tool and file an import was read
    from, or the machine perflab measured on (CPU, count, kernel, PMU); and the commit."""
    if rs.source != "perflab":  # an import: no machine of perflab's own (not "None xNone")
        where = rs.settings.file
        return (f"imported from {rs.source}{f' ({where})' if where else ''}, "
                f"commit {rs.commit or '-'}")
    fp = rs.fingerprint
    return (f"{fp.cpu_model or '-'} x{fp.cpu_count or '-'}, kernel {fp.kernel or '-'}, "
            f"PMU: {'yes' if fp.pmu else 'no'}, commit {rs.commit or '-'}")


def compare_tables(a: Analysis, metrics: Sequence[str], cell: str, width: int) -> list[Table]:
    """The compare tables for a terminal ``width`` columns wide: one table with every
    configuration side by side when each of its rows fits on one line, else one table per
    candidate against the baseline (as hyperfine sums up several commands: each against the
    reference), so a 3-way compare reads at 120 columns."""
    whole = compare_table(a, metrics, cell)
    base = a.rs.baseline_in(cell)
    others = [c.name for c in a.rs.configurations_in(cell) if c is not base]
    if len(others) < 2 or whole.natural_width() <= width:
        return [whole]
    return [compare_table(a, metrics, cell, [name]) for name in others]


def compare_table(a: Analysis, metrics: Sequence[str], cell: str,
                  candidates: Sequence[str] | None = None) -> Table:
    """Configurations as columns, metrics as rows, % change against the baseline with its CI;
    ``candidates`` names the configurations shown beside the baseline (all of them unless
    given), the title then names the pair."""
    rs = a.rs
    configs = rs.configurations_in(cell)
    base = rs.baseline_in(cell)
    assert base is not None
    by_key = {(c.candidate, c.metric): c for c in a.comparisons if c.cell == cell}
    others = [c for c in configs if c is not base
              and (candidates is None or c.name in candidates)]
    title = "" if cell == "{}" else f"cell {cell}"
    if candidates is not None:
        pair = f"{', '.join(c.name for c in others)} vs {base.name}"
        title = f"{title}: {pair}" if title else pair
    # The baseline's name above "(baseline)", each change without its absolute part (both
    # values stand beside it): a candidate's four columns fit 120 columns on one line a row
    t = Table.of(title,
                 [Column("metric", "left", wrap=False), Column(f"{base.name}\n(baseline)"),
                  *(col for c in others
                    for col in (Column(c.name), Column("change [CI]"),
                                Column("verdict", "left", role="verdict")))])
    for m, name, info, _ in _metric_rows(rs, base, metrics):
        comps = [by_key[(c.name, m)] for c in others if (c.name, m) in by_key]
        sb = a.summary(base, m)
        row: list[str | Cell] = [name, shown_value(sb, comps[0].base_center if comps else None,
                                                   info) + mark(a, base, m)]
        for c in others:
            cs = c.samples(m)
            comp = by_key.get((c.name, m))
            if not cs:
                row += ["-", "-", ""]
                continue
            sc = a.summary(c, m)
            if comp is None:  # not compared: other work declared (stats._comparable)
                row += [shown_value(sc, None, info) + mark(a, c, m), "-",
                        Cell("other work", "dim")]
                continue
            row += [shown_value(sc, comp.cand_center, info) + mark(a, c, m),
                    fmt_change(comp, info.unit, absolute=False),
                    Cell(comp.label, verdict_style(comp))]
        t.add_row(*row)
    t.notes += notes(modal_samples(a, [base, *others], [m for m in metrics if base.samples(m)]))
    one_line = f"{base.name} (baseline)"
    if len(one_line) <= max((len(r[1].text) for r in t.rows), default=0):
        t.columns[1] = Column(one_line)  # as narrow as its values on one line
    return t


def shown_value(s: Summary, value: float | None, info: MetricInfo) -> str:
    """A configuration's value beside a change, with its spread (the CV): ``value`` is the
    comparison's (Comparison.base_center or cand_center, whose ratio is the change); without
    a comparison, the median."""
    v = s.median if value is None or math.isnan(value) else value
    return fmt_value(v, info.unit) + (
        "" if info.deterministic else fmt_cv(v, s.cv, s.stdev, info.unit))


def correction_line(a: Analysis, primary: str | None = None) -> str:
    """How the verdicts were reached, in one line: estimator, band, families, level."""
    comps, plan = a.comparisons, a.plan
    est = parse_estimator(plan.estimator)
    paired = any(c.paired for c in comps)
    what = ("per-round ratios" if paired else "ratio of the runs (not interleaved)")
    n_primary = sum(c.p_value is not None and in_family(c.metric, primary) for c in comps)
    levels = [c.ci_level for c in comps if c.p_value is not None and in_family(c.metric, primary)]
    level = f"{fmt_sig(100 * min(levels), 4)}%" if levels else "95%"
    looks = (f", alpha spent over {plan.looks} looks (judged at {fmt_sig(plan.level, 2)})"
             if plan.level is not None else
             f", alpha split over {plan.looks} looks" if plan.looks > 1 else "")
    exact = primary is not None and n_primary == 0 and any(
        in_family(c.metric, primary) and c.deterministic for c in comps)
    # The primary metric's verdicts are the guarded ones; a result with ten metrics has a
    # false slower/faster on some secondary one in about a third of A/A compares.
    others = (f"other metrics: exploratory (their claims so marked), "
              f"{CORRECTION_NAMES[plan.secondary]} "
              f"{'over all of them, one family' if plan.pool_exploratory else 'per metric'}")
    # A harness run: the primary family is every benchmark's metric of it
    benches = len({c.metric for c in comps if in_family(c.metric, primary) and c.metric != primary})
    named = f"{primary} of {benches} benchmarks" if benches else primary
    fam = (f"{primary}: exact counts, compared without statistics; {others}" if exact else
           f"{named} (guarded): {CORRECTION_NAMES[plan.correction]} over {n_primary} "
           f"comparison{'s' if n_primary != 1 else ''}{looks}, CI at up to {level}; {others}"
           if primary else f"{CORRECTION_NAMES[plan.correction]} per metric{looks}")
    bands = bands_text(comps)
    return (f"verdicts: {est.label} of {what}, one CI decides against the metric's band"
            f"{f' ({bands})' if bands else ''}; {fam}{serial_note(comps)}; "
            f"{values_legend(est)}")


def verdicts_heading(a: Analysis) -> str:
    """How a report's verdicts were reached, for its heading (HTML, Markdown): the bands that
    decided, by kind, and the families."""
    bands = bands_text(a.comparisons)
    families = (
        f", one family for the primary across the run ({a.plan.correction}), one for all the "
        f"others ({a.plan.secondary}, exploratory: their claims so marked); "
        if a.plan.pool_exploratory else
        f", one family per metric across the run ({a.plan.correction} for the primary, "
        f"{a.plan.secondary} for the others, exploratory: their claims so marked); ")
    return ((f"verdicts against the bands {bands}" if bands else "no verdicts") + families
            + values_legend(parse_estimator(a.plan.estimator)))


KIND_WORDS = {"time": "time", "memory": "memory", "count": "counts", "other": "other"}


def bands_text(comps: Sequence[Comparison]) -> str:
    """The bands these comparisons were judged against, by kind (stats.bands_used): "time
    ±1%, memory ±0.2%, counts ±1% or ±0.5, instructions_per_op ±1%" ("" for none)."""
    return ", ".join(
        f"{KIND_WORDS.get(b.name, b.name)} {fmt_band(b.band.rel, b.band.absolute, b.unit)}"
        for b in bands_used(comps))


def values_legend(est: Estimator) -> str:
    """What the values beside a change are (stats.Comparison.base_center, cand_center)."""
    return (f"values beside a change: the baseline's {est.label}, a candidate's that × its "
            "change")


# The widening worth a word: the interval 1.25x as wide (lag-1 correlation about 0.2 and up).
SERIAL_WORTH_SAYING = 1.25


def serial_note(comps: Sequence[Comparison]) -> str:
    """"; CIs widened for runs correlated in time: task_clock x1.7 (lag-1 0.48)": the metrics
    whose interval stats.serial_correlation widened noticeably, the most widened of each."""
    most: dict[str, tuple[float, float]] = {}
    for c in comps:
        if c.loc is not None and c.loc.widened >= SERIAL_WORTH_SAYING:
            most[c.metric] = max(most.get(c.metric, (0.0, 0.0)), (c.loc.widened, c.loc.serial))
    pooled = "".join(f"; {n}" for n in pooled_serial_notes(comps))
    if not most:
        return pooled
    return "; CIs widened for runs correlated in time: " + ", ".join(
        f"{m} ×{fmt_sig(w, 2)} (lag-1 {fmt_fixed(r, 2)})" for m, (w, r) in most.items()) + pooled

