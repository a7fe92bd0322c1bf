#!/usr/bin/env python3
"""How noisy a stored suite result is, in the figures issue #9 judges the study by: per metric,
the share of configuration series with CV <= 5% and with the median's 95% CI within +-5%, the
median CV and the median CI half-width; with ``--tables``, the medians per cell as Markdown
tables (CV in brackets where above 5%), the layout of the README's study section.

    python scripts/study_noise.py RESULT_ID [--db PATH] [--metric M ...] [--tables M] [--x depth]

The figures are the report's own: one Summary per (cell, configuration) from
reports.analysis.Analysis.summaries (stats.summarize: CV = stdev / mean, the median's CI from order
statistics), Summary.rel_halfwidth for the CI's half-width relative to the median, and the
report's noise line (reports.warnings.NOISY_CV).  A resumed suite's superseded configurations
are left out as in its report (reports.matrix.suite_view).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_number
from perflab.model import ResultSet
from perflab.reports.analysis import Analysis
from perflab.reports.matrix import config_names, suite_view
from perflab.reports.warnings import NOISY_CV
from perflab.storage import Store


def noise_line(rs: ResultSet, metric: str) -> str:
    sums = [s for s in Analysis.of(rs).summaries(metric).values() if s.n > 1]
    if not sums:
        return f"{metric}: no series with more than one run"
    cvs = [s.cv for s in sums]
    hws = [s.rel_halfwidth for s in sums]
    n = len(sums)
    runs = sorted({s.n for s in sums})
    quiet = sum(cv <= NOISY_CV for cv in cvs)
    narrow = sum(hw <= NOISY_CV for hw in hws)
    return (f"{metric}: {n} series ({'/'.join(map(str, runs))} runs each); "
            f"CV <= {NOISY_CV:.0%}: {quiet} ({quiet / n:.0%}), median CV "
            f"{statistics.median(cvs):.1%}; median's 95% CI within +-{NOISY_CV:.0%}: "
            f"{narrow} ({narrow / n:.0%}), median half-width {statistics.median(hws):.1%}")


def _cell(cell: str) -> dict[str, Any]:
    try:
        got = json.loads(cell)
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def tables(rs: ResultSet, metric: str, x: str) -> str:
    """One Markdown table per combination of the other matrix parameters: a row per
    configuration, a column per value of ``x``; the median, "(CV)" where the CV is above 5%."""
    sums = Analysis.of(rs).summaries(metric)
    groups: dict[tuple[tuple[str, Any], ...], dict[Any, str]] = {}
    for cell in rs.cells():
        params = _cell(cell)
        if x not in params:
            raise PerflabError(f"cell {cell} has no parameter {x!r}",
                               "pass --x with one of the suite's matrix parameters")
        key = tuple((k, v) for k, v in params.items() if k != x)
        groups.setdefault(key, {})[params[x]] = cell
    out = []
    for key, cells in groups.items():
        xs = list(cells)
        out.append("**" + ", ".join(f"{k}={v}" for k, v in key) + "**\n")
        out.append(f"| configuration | {' | '.join(f'{x} {v}' for v in xs)} |")
        out.append("|---|" + "---:|" * len(xs))
        for name in config_names(rs):
            row = []
            for v in xs:
                s = sums.get((cells[v], name))
                if s is None:
                    row.append("-")
                    continue
                text = fmt_number(s.median)
                row.append(text + (f" ({s.cv:.0%})" if s.cv > NOISY_CV else ""))
            if any(r != "-" for r in row):
                out.append(f"| {name} | {' | '.join(row)} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result_id", type=int)
    ap.add_argument("--db", help="result database (default: $PERFLAB_DB or perflab's default)")
    ap.add_argument("--metric", action="append",
                    help="metric to judge (repeatable; default: cpu_ns_per_op and ns_per_op)")
    ap.add_argument("--tables", metavar="METRIC", help="also print that metric's medians")
    ap.add_argument("--x", default="depth", help="the tables' column parameter (default depth)")
    args = ap.parse_args()
    try:
        rs = suite_view(Store(args.db).load(args.result_id))
        for m in args.metric or ["cpu_ns_per_op", "ns_per_op"]:
            print(noise_line(rs, m))
        if args.tables:
            print()
            print(tables(rs, args.tables, args.x))
    except PerflabError as e:
        print(f"error: {e.line()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
