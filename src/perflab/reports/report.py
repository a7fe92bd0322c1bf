"""Everything ``perflab report RUN_ID`` produces from a stored run: terminal tables, plots,
an HTML page, Markdown, CSV and JSON, in one directory."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from perflab.format import md_text, status_phrase
from perflab.judging import Plan, parse_estimator
from perflab.metrics import seconds_per
from perflab.model import ResultSet
from perflab.reports import matrix
from perflab.reports.analysis import Analysis
from perflab.reports.html import ReportPage, render_html
from perflab.reports.plots import PlotFile, all_plots, study_axes
from perflab.reports.study import LEGEND, axis_answers, ratio_matrix
from perflab.reports.terminal import verdicts_heading
from perflab.reports.warnings import (
    Warning_,
    kernel_heavy,
    suite_warnings,
    threads_over_cpus,
    warning_lines,
)
from perflab.stats import axis_comparisons, cpu_share_caveat
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
    tables = _metric_tables(a, mets, primary) + _axis_tables(a, mets)
    warns = suite_warnings(a, shown)
    _write_files(rep, tables)
    if console is not None:
        print_study(console, a, shown, warns, out / "tables.md", out / "index.html")
    if plots:
        rcfg = info.report or {}
        plot_metrics = [m for m in rcfg.get("metrics", []) if m in mets] or mets[:1]
        rep.plots = all_plots(a, plot_metrics, out / "img", rcfg)
    title = (info.report or {}).get("title") or f"perflab: {view.label or 'result'}"
    page = ReportPage(title, tables, rep.plots, warns, info.text or "", out, rep.files)
    rep.html = render_html(a, page)
    if single_file:
        rep.single_file = render_html(a, page, single_file=out / f"perflab-run-{rs.id}.html")
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


def _axis_tables(a: Analysis, mets: list[str]) -> Tables:
    """What the study's plots divide (its [report] kinds, its thread scaling), with verdicts:
    paired by round where the cells were measured in the same rounds (suites.execute)."""
    view, plan = a.rs, a.plan
    tables: Tables = []
    for m in mets:
        for param, numer, denom in study_axes(view, view.settings.suite.report or {}):
            ac = axis_comparisons(view, m, param, numer, denom, plan=plan)
            if ac:
                share = cpu_share_caveat(view, m, param, numer, denom)
                title = (f"{m}: {param}={numer} over {param}={denom} per configuration "
                         f"({matrix.interval_words(ac)}; {len(ac)} comparisons, one family)"
                         + (f"; {share}" if share else ""))
                tables.append((title, matrix.axis_rows(view, ac)))
    return tables


def print_study(console: Console, a: Analysis, shown: str, warns: list[Warning_],
                tables_md: Path, html: Path) -> None:
    """The study's answer in one screen: the decided metric's ratio matrix, the study's axes
    in words, the warnings one line per kind; every table of every metric is in
    ``tables_md`` and ``html``, and the last lines say so."""
    t = ratio_matrix(a, shown, console.width)
    if t is not None:
        console.print(t.to_rich(console))
        console.print(LEGEND, highlight=False, soft_wrap=False)
    for line in axis_answers(a, shown):
        console.print(line, highlight=False)
    for line in warning_lines(a, shown, warns, f"{html.name}#warnings"):
        console.print(f"[yellow]{escape(line.split(':', 1)[0])}[/]:"
                      f"{escape(line.split(':', 1)[1])}", highlight=False)
    console.print(f"tables: {tables_md} (every metric's medians, comparisons, axes and cells)",
                  highlight=False)


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
    judged = md_text(verdicts_heading(a)) + "".join(
        f"\n\nwarning: {md_text(w)}" for w in threads_over_cpus(view) + kernel_heavy(view))
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
