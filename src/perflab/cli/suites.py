"""Verbs of the suites stage: ``run`` (measure a suite file cell by cell) and ``report`` (tables,
plots and an HTML page of a stored run).  See docs/suites.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from perflab import session
from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console
from perflab.errors import PerflabError

if TYPE_CHECKING:
    from perflab.storage import Store

# Above these a suite runs only with --yes (or a "y" at a terminal): a typo in a matrix must not
# start days of measurement.
CONFIRM_SERIES = 2000
CONFIRM_SECONDS = 2 * 3600


def run_cmd(
    suite_file: Path = typer.Argument(..., help="The suite TOML file (see suites/)."),
    db: o.Db = None,
    resume: int | None = typer.Option(None, "--resume", metavar="RUN_ID",
                                      help="Continue an interrupted run; finished cells are "
                                      "not measured again."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and its estimated "
                                 "time; store nothing (the estimate launches each workload "
                                 "once, never a plain command)."),
    out: Path | None = typer.Option(None, "--out", help="Report directory (default: run-<id> "
                                    "in <data dir>/reports for the default database, in "
                                    "<stem>-reports beside another SQLite file)."),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write the report at the "
                                   "end."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Run a large suite (more than "
                             f"{CONFIRM_SERIES} configuration series or an estimate over "
                             f"{CONFIRM_SECONDS // 3600} h) without asking."),
) -> None:
    """Run a suite: plan the matrix, measure cell by cell (configurations interleaved within a
    cell), save every run as it completes, then report."""
    from perflab.format import fmt_duration, redact_url
    from perflab.suites.estimate import measure_speed
    from perflab.suites.execute import describe_plan, history_per_run, run_plan
    from perflab.suites.plan import make_plan
    from perflab.suites.spec import load_suite

    console = stdout_console()
    err = stderr_console()
    suite = load_suite(suite_file)
    plan = make_plan(suite, build=not dry_run)
    if dry_run:
        from perflab.storage import default_db_path

        # Estimates use earlier runs when a database exists; a dry run creates none.
        path = db or default_db_path()
        exists = "://" in str(path) or Path(path).exists()
        per_run = history_per_run(session.open_store(path), plan) if exists else {}
        speed = measure_speed(plan, runs=True)
        for line in describe_plan(plan, per_run, speed, report=not no_report):
            console.print(line, highlight=False, soft_wrap=True)
        return
    for msg in plan.skipped:
        err.print(f"[yellow]perflab:[/] {msg}", highlight=False, soft_wrap=True)
    if out is not None and not no_report:
        from perflab.validate import output_dir

        output_dir(out, "--out")  # a bad --out is one line before measuring, not after
    store = session.open_store(db)
    history = history_per_run(store, plan)
    speed = measure_speed(plan)
    report_s = 0.0 if no_report else plan.report_seconds(speed)
    est = plan.estimate_seconds(history, speed) + report_s
    summary = (f"{suite.name}: {len(plan.cells)} cells, {plan.n_configs} configuration series, "
               f"estimated {fmt_duration(est)}" + ("" if no_report else " with the report"))
    if resume is None and not yes and (plan.n_configs > CONFIRM_SERIES or est > CONFIRM_SECONDS):
        _confirm_large(summary, suite_file)
    err.print(summary, highlight=False)
    outcome = run_plan(plan, store, resume=resume, console=err, progress=not no_progress,
                       estimates=history, speed=speed, report_s=report_s)
    rs = outcome.rs
    if outcome.interrupted or rs.status != "complete":
        err.print(f"run {rs.id} stopped ({rs.status}) after {len(rs.cells())} of "
                  f"{len(plan.cells)} cells; every finished run is saved. Continue with: "
                  f"perflab run {suite_file} --resume {rs.id}"
                  + (f" --db {redact_url(str(db))}" if db else ""), highlight=False, soft_wrap=True)
    if not no_report and rs.cells():
        _report(rs.id, store, out)
    if outcome.interrupted:
        raise typer.Exit(130)
    if rs.status != "complete":
        failed = rs.settings.suite.failed or []
        # A cell's error is a whole "problem -- fix" line: only its problem goes here, so the
        # line has one fix, this one.
        first = f": {failed[0]['error'].split(' -- ')[0]}" if failed else ""
        raise PerflabError(f"run {rs.id} is {rs.status}: {len(failed)} cell(s) failed{first}",
                           f"fix the failing command, then: perflab run {suite_file} --resume "
                           f"{rs.id}" + (f" --db {redact_url(str(db))}" if db else ""), exit_code=1)


def _confirm_large(summary: str, suite_file: Path) -> None:
    import sys

    fix = (f"pass --yes to run it, or check the plan first: perflab run {suite_file} --dry-run")
    if not sys.stdin.isatty():
        raise PerflabError(f"{summary}: too large to start without confirmation", fix)
    if not typer.confirm(f"{summary}. Run it?", default=False, err=True):
        raise PerflabError(f"{summary}: not started", fix)


def report_cmd(
    run_ids: list[int] | None = typer.Argument(
        None, help="The result id (perflab results list); several ids from different machines "
        "give the per-machine comparison."),
    submission: str | None = typer.Option(None, "--submission", help="A fleet submission: "
                                          "its results on every machine, side by side."),
    db: o.Db = None,
    out: Path | None = typer.Option(None, "--out", help="Report directory."),
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="Metric to report (repeatable; several machines: side by "
        "side).")] = None,
    no_plots: bool = typer.Option(False, "--no-plots", help="Tables and exports only."),
    single_file: bool = typer.Option(
        False, "--single-file", help="Also write one HTML file with the plots inlined "
        "(perflab-run-ID.html): opens offline, can be attached to an issue."),
    markdown: bool = typer.Option(
        False, "--markdown", help="Print GitHub-ready Markdown instead of the terminal tables: "
        "base/diff/ratio/verdict per metric and the A/B/C table of every metric (several "
        "machines: one row per machine with its OS, architecture and CPU)."),
) -> None:
    """Report a stored run: terminal tables (verdicts with false discoveries controlled across
    the run), plots, a self-contained HTML page, Markdown and CSV.  Results of one study on
    several machines (several ids, or --submission): one block per benchmark, one row per
    machine, each machine judged on its own samples."""
    ids = list(run_ids or [])
    if submission or len(ids) > 1:
        _report_machines(ids, submission, db, out, metric or [], markdown=markdown,
                         single_file=single_file)
        return
    if not ids:
        raise PerflabError("no run to report", "pass a result id (perflab results list) or "
                           "--submission ID")
    _report(ids[0], session.open_store(db), out, metrics=metric or None, plots=not no_plots,
            single_file=single_file, markdown=markdown)


def _report_machines(ids: list[int], submission: str | None, db: str | None,
                     out: Path | None, metrics: list[str], *, markdown: bool,
                     single_file: bool) -> None:
    """The per-machine table of several results (or a submission's): terminal tables, or
    GitHub Markdown on stdout with --markdown; the HTML page either way.  It has no plots, so
    --no-plots changes nothing, and its page is already one self-contained file."""
    from perflab.fleet.permachine import of_stored, print_terminal, render_html, render_markdown

    store = session.open_store(db)
    pm = of_stored(store, ids, submission, metrics or None)
    # Named by the submission (one id per machine made a name too long for the file system
    # at 50 machines: "File name too long").
    name = (f"submission-{submission}" if submission
            else f"machines-{'-'.join(map(str, ids))}")
    page = render_html(pm, out or store.reports_dir() / name)
    if markdown:
        typer.echo(render_markdown(pm), nl=False)
    else:
        print_terminal(pm, stdout_console())
    said = stderr_console() if markdown else stdout_console()
    said.print(f"report: {page}", highlight=False, soft_wrap=True)
    if single_file:
        said.print(f"single file: {page} (the per-machine page is already self-contained)",
                   highlight=False, soft_wrap=True)


def _report(run_id: int | None, st: Store, out: Path | None, *,
            metrics: list[str] | None = None, plots: bool = True, single_file: bool = False,
            markdown: bool = False) -> None:
    """A stored run's report: terminal tables (GitHub Markdown on stdout with ``markdown``),
    the HTML page and the plots, written under ``out`` (default: the store's reports)."""
    from perflab.reports.report import build_report

    if run_id is None:
        raise PerflabError("no run to report", "pass a result id")
    console = stdout_console()
    rs = st.load(run_id)
    if not rs.configurations:
        raise PerflabError(f"result {run_id} has no measured configurations",
                           "run the suite again, or --resume it")
    rep = build_report(rs, out or st.reports_dir() / f"run-{run_id}",
                       metrics=metrics, console=None if markdown else console,
                       plots=plots, single_file=single_file)
    if markdown:
        typer.echo(rep.markdown)
        stderr_console().print(f"report: {rep.html}", highlight=False, soft_wrap=True)
    else:
        console.print(f"report: {rep.html}", highlight=False, soft_wrap=True)
    if rep.single_file is not None:
        (stderr_console() if markdown else console).print(
            f"single file: {rep.single_file}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``report`` to the perflab command line."""
    app.command("run")(run_cmd)
    app.command("report")(report_cmd)
