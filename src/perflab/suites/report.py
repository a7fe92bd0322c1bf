"""Everything ``perflab report RUN_ID`` produces from a stored run: terminal tables, plots,
an HTML page, Markdown, CSV and JSON, in one directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from perflab.format import md_text, seconds_per, status_phrase
from perflab.model import ResultSet
from perflab.reports import matrix
from perflab.reports.analysis import Analysis
from perflab.reports.html import render_html
from perflab.reports.plots import PlotFile, all_plots, study_axes
from perflab.reports.terminal import verdict_style, verdicts_heading
from perflab.reports.warnings import Warning_, suite_warnings
from perflab.stats import Comparison, Plan, axis_comparisons, parse_estimator
from perflab.validate import output_dir


@dataclass
class Report:
    analysis: Analysis  # the one every table, plot and export of the report is drawn from
    metrics: list[str]
    out_dir: Path
    html: Path | None = None
    single_file: Path | None = None
    markdown: str = ""
    files: list[Path] = field(default_factory=list)
    plots: list[PlotFile] = field(default_factory=list)


def report_metrics(rs: ResultSet, requested: list[str] | None = None) -> list[str]:
    """The metrics to report: asked for, else the suite's, else the primary and wall time."""
    wanted = list(requested or rs.settings.suite.metrics or [])
    primary = decided_on(rs)
    if not wanted:
        wanted = [m for m in (primary, "wall_time") if m]
    elif primary and not requested and primary not in wanted:
        wanted.insert(0, primary)  # the metric the verdicts were decided on is always shown
    present = set()
    for c in rs.configurations:
        for r in c.measured_runs():
            present.update(r.values)
    out = [m for m in dict.fromkeys(wanted) if m in present]
    if not out and present:
        out = ["wall_time"] if "wall_time" in present else [sorted(present)[0]]
    return out


def decided_on(rs: ResultSet) -> str | None:
    """The primary metric the stored verdicts were decided on (its own Holm family)."""
    return rs.settings.primary_metric or rs.settings.suite.primary


def build_report(rs: ResultSet, out_dir: Path, *, metrics: list[str] | None = None,
                 console: Console | None = None, plots: bool = True,
                 single_file: bool = False) -> Report:
    """Analyse a stored result (FDR control across the whole run) and write every output.

    ``single_file`` also writes ``perflab-run-ID.html``: one file, plots inlined."""
    view = matrix.suite_view(rs)
    info = view.settings.suite
    plan = Plan.of(view)  # the threshold, correction and estimator stored with the run
    mets = report_metrics(view, metrics)
    a = Analysis.judge(view, mets, plan)
    out = output_dir(out_dir, "--out")
    rep = Report(analysis=a, metrics=mets, out_dir=out)

    # The family titles name the correction each metric was judged with: the stored primary's
    # (Holm by default), BH for the others, even when --metric leaves the primary out.
    primary = decided_on(view) or (mets[0] if mets else "wall_time")
    shown = primary if primary in mets else (mets[0] if mets else primary)
    tables = _metric_tables(a, mets, primary)
    axis_tables, styles_of = _axis_tables(a, mets)
    tables += axis_tables
    warns = suite_warnings(a, shown)
    if console is not None:
        _print_tables(console, tables, styles_of, a.comparisons_of(shown), mets, shown, warns)
    _write_files(rep, tables)
    if plots:
        rcfg = info.report or {}
        plot_metrics = [m for m in rcfg.get("metrics", []) if m in mets] or mets[:1]
        rep.plots = all_plots(a, plot_metrics, out / "img", rcfg)
    title = (info.report or {}).get("title") or f"perflab: {view.label or 'result'}"
    page = {"title": title, "tables": tables, "plots": rep.plots, "warnings": warns,
            "suite_text": info.text or "", "out_dir": out, "exports": rep.files}
    rep.html = render_html(a, **page)
    if single_file:
        rep.single_file = render_html(a, **page,
                                      single_file=out / f"perflab-run-{rs.id}.html")
    return rep


Tables = list[tuple[str, list[dict[str, str]]]]


def _metric_tables(a: Analysis, mets: list[str], primary: str) -> Tables:
    """What each configuration ran; per metric, the medians and the comparisons."""
    view, comps, plan = a.rs, a.comparisons, a.plan
    est_label = parse_estimator(plan.estimator).label
    base = view.settings.suite.baseline or ""
    tables: Tables = [("configurations: what each one ran", matrix.configuration_rows(view))]
    for m in mets:
        unit = matrix.unit_of(view, m)
        # A time's cells carry their own unit (fmt_value: "6.283 ms"): "(s)" over them misled.
        u = f" ({unit})" if unit and seconds_per(unit) is None else ""
        tables.append((f"{m}{u}: median [95% CI] per configuration",
                       matrix.medians_rows(a, m)))
        if any(c.metric == m for c in comps):
            tables.append((f"{m}: each configuration (diff) against the baseline {base} (base); "
                           f"ratio = {est_label} of the per-round ratios; base = the "
                           f"baseline's {est_label}, diff = base × ratio; p and CI "
                           f"adjusted ({_family(m, primary, plan)}) across the "
                           f"{sum(c.metric == m for c in comps)} comparisons of {m}",
                           matrix.comparison_rows(a, m)))
    return tables


def _axis_tables(a: Analysis, mets: list[str]) -> tuple[Tables, dict[str, list[str]]]:
    """What the study's plots divide (its [report] kinds, its thread scaling), with verdicts:
    paired by round where the cells were measured in the same rounds (suites.execute).  The
    tables, and each one's verdict styles by title."""
    view, plan = a.rs, a.plan
    tables: Tables = []
    styles_of: dict[str, list[str]] = {}
    for m in mets:
        for param, a, b in study_axes(view, view.settings.suite.report or {}):
            ac = axis_comparisons(view, m, param, a, b, plan=plan)
            if ac:
                title = (f"{m}: {param}={a} over {param}={b} per configuration "
                         f"({matrix.interval_words(ac)}; {len(ac)} comparisons, one family)")
                tables.append((title, matrix.axis_rows(view, ac)))
                styles_of[title] = [verdict_style(c) for c in ac]
    return tables, styles_of


def _print_tables(console: Console, tables: Tables, styles_of: dict[str, list[str]],
                  comps: list[Comparison], mets: list[str], shown: str,
                  warns: list[Warning_]) -> None:
    """The terminal gets the primary metric (``comps``: its comparisons); every metric is in
    the HTML and Markdown."""
    styles = [verdict_style(c) for c in comps]  # comparison_rows'
    for title, rows in tables:
        if title.startswith(f"{shown}:") or title.startswith(f"{shown} ("):
            has_verdict = bool(rows) and "verdict" in rows[0]
            console.print(matrix.table(rows, title, verdict_styles=styles_of.get(
                title, styles) if has_verdict else None).to_rich(console))
    if len(mets) > 1:
        others = [m for m in mets if m != shown]
        console.print(f"(tables for {', '.join(others)} are in the HTML and Markdown)",
                      highlight=False)
    for w in warns[:30]:
        console.print(f"[yellow]{w.kind}[/]: {w.text}", highlight=False)
    if len(warns) > 30:
        console.print(f"... and {len(warns) - 30} more warnings in the HTML report")


def _write_files(rep: Report, tables: Tables) -> None:
    """tables.md, results.csv, comparisons.csv and result.json in ``rep.out_dir``."""
    from perflab.reports.export.json_schema import result_to_json

    a, mets, out = rep.analysis, rep.metrics, rep.out_dir
    view = a.rs
    # GitHub-ready Markdown: the regression (dotnet ResultsComparer) tables per metric, then
    # Ingo Molnar's A/B/C table of every metric per cell.
    counter_tables = [
        (f"every metric, {matrix.cell_label(cell, view)}: configurations as columns, % delta "
         "against the baseline", matrix.counter_rows(a, cell))
        for cell in view.cells()]
    md = out / "tables.md"
    # How the verdicts were reached, as the HTML page says it (the bands that decided).
    judged = md_text(verdicts_heading(a))
    state = f", {status_phrase(view.status)}" if status_phrase(view.status) else ""
    rep.markdown = (f"# {md_text(view.label or 'perflab')} (result {view.id}{state})\n\n"
                    f"{judged}\n\n"
                    + "\n".join(matrix.table(rows, title).to_markdown()
                                 for title, rows in tables + counter_tables))
    md.write_text(rep.markdown, encoding="utf-8")
    csv_path = out / "results.csv"
    csv_path.write_text(matrix.to_csv(matrix.raw_rows(a, mets)), encoding="utf-8")
    cmp_csv = out / "comparisons.csv"
    cmp_rows: list[dict[str, Any]] = []
    for m in mets:
        cmp_rows += [{"metric": m, **r} for r in matrix.comparison_csv_rows(a, m)]
    cmp_csv.write_text(matrix.to_csv(cmp_rows), encoding="utf-8")
    rep.files += [md, csv_path, cmp_csv]
    js = out / "result.json"
    js.write_text(json.dumps(result_to_json(a), indent=1, default=str),
                  encoding="utf-8")
    rep.files.append(js)


def _family(metric: str, primary: str, plan: Plan) -> str:
    if metric == primary:
        return plan.correction
    return (f"{plan.secondary}, one family with every other secondary metric's"
            if plan.pool_exploratory else f"{plan.secondary}, a secondary metric")
