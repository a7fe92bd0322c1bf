"""The side-by-side table as GitHub Markdown, the kind the seeds pasted into their issues."""

from __future__ import annotations

from collections.abc import Sequence

from perflab.format import fmt_change, fmt_value, md_text
from perflab.model import ResultSet
from perflab.reports.terminal import metrics_to_show
from perflab.reports.warnings import result_warnings
from perflab.stats import Comparison, Plan, summarize


def result_to_markdown(rs: ResultSet, comparisons: Sequence[Comparison],
                       metrics: Sequence[str] | None = None) -> str:
    """The side-by-side table (one per cell) as GitHub Markdown."""
    shown = metrics_to_show(rs, metrics)
    by_key = {(c.cell, c.candidate, c.metric): c for c in comparisons}
    lines: list[str] = []
    for cell in rs.cells():
        configs = rs.configurations_in(cell)
        base = rs.baseline_in(cell)
        if base is None:
            continue
        others = [c for c in configs if c is not base]
        if cell != "{}":
            lines.append(f"**cell {md_text(cell)}**\n")
        head = ["metric", f"{md_text(base.name)} (baseline)"]
        for c in others:
            head += [md_text(c.name), "change [CI]", "verdict"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for m in shown:
            info = rs.metrics[m]
            bs = base.samples(m)
            if not bs:
                continue
            row = [md_text(m), fmt_value(summarize(bs).median, info.unit)]
            for c in others:
                comp = by_key.get((cell, c.name, m))
                cs = c.samples(m)
                if not cs or comp is None:
                    row += ["-", "-", "-"]
                    continue
                row += [fmt_value(summarize(cs).median, info.unit),
                        fmt_change(comp, info.unit), comp.label]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    for w in result_warnings(rs):
        lines.append(f"- warning: {md_text(w)}")
    for n in rs.notes:
        lines.append(f"- note: {md_text(n)}")
    return "\n".join(lines) + "\n"


def render(rs: ResultSet, comps: Sequence[Comparison], plan: Plan) -> str:
    return result_to_markdown(rs, comps)
