"""The side-by-side table as GitHub Markdown, the kind the seeds pasted into their issues."""

from __future__ import annotations

from collections.abc import Sequence

from perflab.format import fmt_change, fmt_value, md_text, status_phrase
from perflab.reports.analysis import Analysis
from perflab.reports.matrix import table
from perflab.reports.modes import mark, modal_samples
from perflab.reports.modes import notes as mode_notes
from perflab.reports.terminal import correction_line, metrics_to_show
from perflab.reports.warnings import result_warnings


def result_to_markdown(a: Analysis, metrics: Sequence[str] | None = None) -> str:
    """The side-by-side table (one per cell) as GitHub Markdown, through the one Markdown
    writer (table.Table.to_markdown)."""
    rs = a.rs
    shown = metrics_to_show(rs, metrics)
    by_key = {(c.cell, c.candidate, c.metric): c for c in a.comparisons}
    parts: list[str] = []
    for cell in rs.cells():
        base = rs.baseline_in(cell)
        if base is None:
            continue
        others = [c for c in rs.configurations_in(cell) if c is not base]
        rows: list[dict[str, str]] = []
        for m in shown:
            info = rs.metrics[m]
            bs = base.samples(m)
            if not bs:
                continue
            comps = [by_key[(cell, c.name, m)] for c in others if (cell, c.name, m) in by_key]
            # The values a change is made of (Comparison.base_center, cand_center); the
            # median where nothing was compared.
            row = {"metric": m, f"{base.name} (baseline)": fmt_value(
                comps[0].base_center if comps else a.summary(base, m).median, info.unit)
                + mark(a, base, m)}
            for c in others:
                comp = by_key.get((cell, c.name, m))
                cs = c.samples(m)
                have = bool(cs) and comp is not None
                row[c.name] = "-" if not cs else fmt_value(
                    comp.cand_center if comp is not None else a.summary(c, m).median,
                    info.unit) + mark(a, c, m)
                row[f"{c.name}: change [CI]"] = fmt_change(comp, info.unit) if have else "-"
                row[f"{c.name}: verdict"] = comp.label if comp is not None and have else "-"
            rows.append(row)
        t = table(rows, "" if cell == "{}" else f"cell {cell}")
        t.notes += mode_notes(modal_samples(a, [base, *others], shown))
        parts.append(t.to_markdown())
    if a.comparisons:
        parts.append(md_text(correction_line(a, rs.settings.primary_metric)) + "\n")
    notes = [f"- warning: {md_text(w)}" for w in result_warnings(a)]
    notes += [f"- note: {md_text(n)}" for n in rs.notes]
    phrase = status_phrase(rs.status)
    head = [f"result {rs.id}: **{phrase}**\n"] if phrase else []
    return "\n".join(head + parts + notes) + "\n"


def render(a: Analysis) -> str:
    return result_to_markdown(a)
