"""Two results of many benchmarks each (two harness files, or two stored imports), judged
together: one table per metric, a row per benchmark present in both, sorted by change, and a
summary line (benchstat's and ResultsComparer's view, with one family per metric).

The comparisons come from the result's one Analysis (stats.compare_result: each metric one
family across every benchmark); this module only selects, sorts and lays them out.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from perflab.format import fmt_fixed, fmt_ratio, fmt_value
from perflab.model import Configuration, ResultSet
from perflab.reports.terminal import verdict_style
from perflab.stats import Comparison, geomean_ratio, modality
from perflab.table import Cell, Column, Table

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis

# The metric that is the Alloc Delta column of a time's table, where the source has it
# (go -benchmem B/op, BenchmarkDotNet's memory diagnoser, JMH's gc.alloc.rate.norm).
ALLOC_METRIC = "bytes_per_op"
# The words the summary counts, in its order: a metric's verdicts gathered by what they say.
SUMMARY_WORDS = ("slower", "faster", "larger", "smaller", "different", "equivalent",
                 "inconclusive")


def benchmark_of(cell: str) -> str:
    """The benchmark a cell of a merged result holds (session.merge_results names each cell
    after its configuration)."""
    try:
        return str(json.loads(cell).get("configuration", cell))
    except (ValueError, AttributeError):
        return cell


def is_many(rs: ResultSet) -> bool:
    """Two results of several benchmarks each, merged by benchmark: two or more cells."""
    cells = rs.cells()
    return len(cells) > 1 and all(len(rs.configurations_in(c)) <= 2 for c in cells)


def keep_matching(rs: ResultSet, pattern: str | None) -> list[str]:
    """Drop the benchmarks whose name ``pattern`` (a regular expression, searched) does not
    match, before anything is judged, so the families are the benchmarks kept; the names of
    the benchmarks present in one result only (not compared), in order."""
    if pattern:
        rx = re.compile(pattern)
        rs.configurations = [c for c in rs.configurations if rx.search(benchmark_of(c.cell))]
    return [benchmark_of(cell) for cell in rs.cells() if len(rs.configurations_in(cell)) < 2]


def modality_text(sides: Sequence[Configuration], metric: str,
                  names: Sequence[str] = ("base", "diff")) -> str:
    """"bimodal (diff)": the modality of each side's runs (the base's, the diff's),
    ResultsComparer's words; "" when none has more than one mode (or too few runs to tell)."""
    out = []
    for side, cfg in zip(names, sides, strict=False):
        mod = modality(cfg.samples(metric))
        if mod is not None and mod.label:
            out.append(f"{mod.label} ({side})")
    return ", ".join(out)


def alloc_text(c: Comparison | None) -> str:
    """The Alloc Delta column: bytes per op, base -> diff ("(=)" when unchanged)."""
    if c is None:
        return ""
    return (f"{fmt_value(c.base_center, c.unit)} -> {fmt_value(c.cand_center, c.unit)}"
            if c.cand_center != c.base_center else f"{fmt_value(c.base_center, c.unit)} (=)")


def _order(c: Comparison) -> float:
    change = c.ratio if not math.isnan(c.ratio) else 1.0
    return math.log(change) if change > 0 else -math.inf


def table(a: Analysis, metric: str, top: int | None = None) -> Table:
    """One metric's table: a row per benchmark, the largest increase first; ``top`` keeps the
    N largest changes either way (the summary still counts every benchmark)."""
    rs = a.rs
    comps = sorted(a.comparisons_of(metric), key=_order, reverse=True)
    if top is not None and len(comps) > top:
        kept = {id(c) for c in sorted(comps, key=lambda c: abs(_order(c)), reverse=True)[:top]}
        comps = [c for c in comps if id(c) in kept]
    alloc = {c.cell: c for c in a.comparisons_of(ALLOC_METRIC)} if metric != ALLOC_METRIC else {}
    info = rs.metrics.get(metric)
    unit = info.unit if info is not None else ""
    cols = [Column("benchmark", "left", fold=True), "base", "diff", "ratio [CI]",
            Column("verdict", "left", role="verdict")]
    if alloc:
        cols.append(Column("alloc/op", "right"))
    cols.append(Column("modality", "left"))
    n = len(a.comparisons_of(metric))
    t = Table.of(f"{metric}: {n} benchmark{'s' if n != 1 else ''}", cols)
    for c in comps:
        row: list[str | Cell] = [benchmark_of(c.cell), fmt_value(c.base_center, unit),
                                 fmt_value(c.cand_center, unit), fmt_ratio(c, "x"),
                                 Cell(c.label, verdict_style(c), c.verdict)]
        if alloc:
            row.append(alloc_text(alloc.get(c.cell)))
        row.append(modality_text(rs.configurations_in(c.cell), metric))
        t.add_row(*row)
    return t


def summary_line(a: Analysis, metric: str) -> str:
    """"ns_per_op over 30 benchmarks: 3 slower, 20 equivalent, 7 inconclusive; geometric mean
    of the ratios 1.012x [1.004, 1.020]"."""
    comps: Sequence[Comparison] = a.comparisons_of(metric)
    words = Counter(c.verdict for c in comps)
    counts = ", ".join(f"{words[w]} {w}" for w in SUMMARY_WORDS if words[w])
    gm = geomean_ratio(comps)
    mean = ("" if gm is None else
            f"; geometric mean of the ratios {fmt_fixed(gm.ratio, 3)}x "
            f"[{fmt_fixed(gm.ci_low, 3)}, {fmt_fixed(gm.ci_high, 3)}] (95%, over {gm.n})")
    n = len(comps)
    return (f"{metric} over {n} benchmark{'s' if n != 1 else ''}: {counts or 'none judged'}"
            f"{mean}")


def verdicts_line(a: Analysis) -> str:
    """How these verdicts were reached, in one line: unpaired runs, the estimator, the bands,
    and the family each metric's benchmarks form."""
    from perflab.judging import parse_estimator
    from perflab.reports.terminal import bands_text, serial_note, values_legend
    from perflab.stats import CORRECTION_NAMES

    est = parse_estimator(a.plan.estimator)
    paired = any(c.paired for c in a.comparisons)
    what = "per-round ratios" if paired else "ratio of the runs (not interleaved)"
    primary = a.rs.settings.primary_metric
    fams = []
    for m in dict.fromkeys(c.metric for c in a.comparisons):
        tested = sum(c.p_value is not None for c in a.comparisons_of(m))
        corr = a.plan.correction if m == primary or primary is None else a.plan.secondary
        fams.append(f"{m}: {CORRECTION_NAMES[corr]} over its {tested} benchmarks")
    bands = bands_text(a.comparisons)
    return (f"verdicts: {est.label} of {what}, one CI decides against the metric's band"
            f"{f' ({bands})' if bands else ''}; one family per metric across the benchmarks "
            f"({'; '.join(fams)}){serial_note(a.comparisons)}; {values_legend(est)}")
