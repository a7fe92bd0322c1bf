"""Suites: a TOML file describes a whole study (benchmarks x parameter matrix x configurations);
``perflab run`` measures it cell by cell and ``perflab report`` turns a stored run into tables,
plots and an HTML page.  See docs/suites.md."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from perflab.console import stdout_console
from perflab.errors import PerflabError


def _store(db: Path | None):  # noqa: ANN202 - Store imported lazily to keep the CLI fast
    from perflab.storage import Store

    return Store(db)


def run_cmd(
    suite_file: Path = typer.Argument(..., help="The suite TOML file (see suites/)."),
    db: Path | None = typer.Option(None, "--db", help="Result database (default: PERFLAB_DB or "
                                   "the user data directory)."),
    resume: int | None = typer.Option(None, "--resume", metavar="RUN_ID",
                                      help="Continue an interrupted run; finished cells are "
                                      "not measured again."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and its estimated "
                                 "time; measure nothing."),
    out: Path | None = typer.Option(None, "--out", help="Report directory (default: "
                                    "<data dir>/reports/run-<id>)."),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write the report at the "
                                   "end."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Run a suite: plan the matrix, measure cell by cell (configurations interleaved within a
    cell), save every run as it completes, then report."""
    from perflab.suites.execute import describe_plan, history_per_run, run_plan
    from perflab.suites.plan import format_seconds, make_plan
    from perflab.suites.spec import load_suite

    console = stdout_console()
    err = Console(stderr=True)
    suite = load_suite(suite_file)
    plan = make_plan(suite, build=not dry_run)
    if dry_run:
        from perflab.storage import default_db_path

        # Estimates use earlier runs when a database exists; a dry run creates none.
        path = db or default_db_path()
        per_run = history_per_run(_store(path), plan) if Path(path).exists() else {}
        for line in describe_plan(plan, per_run):
            console.print(line, highlight=False, soft_wrap=True)
        return
    for msg in plan.skipped:
        err.print(f"[yellow]perflab:[/] {msg}", highlight=False, soft_wrap=True)
    store = _store(db)
    history = history_per_run(store, plan)
    est = plan.estimate_seconds(history)
    err.print(f"{suite.name}: {len(plan.cells)} cells, {plan.n_configs} configuration series, "
              f"estimated {format_seconds(est)}", highlight=False)
    outcome = run_plan(plan, store, resume=resume, console=err, progress=not no_progress,
                       estimates=history)
    rs = outcome.rs
    if outcome.interrupted or rs.status != "complete":
        err.print(f"run {rs.id} stopped ({rs.status}) after {len(rs.cells())} of "
                  f"{len(plan.cells)} cells; every finished run is saved. Continue with: "
                  f"perflab run {suite_file} --resume {rs.id}"
                  + (f" --db {db}" if db else ""), highlight=False, soft_wrap=True)
    if not no_report and rs.cells():
        _report(rs.id, db, out, console, store=store)
    if outcome.interrupted:
        raise typer.Exit(130)


def report_cmd(
    run_id: int = typer.Argument(..., help="The result id (perflab results list)."),
    db: Path | None = typer.Option(None, "--db", help="Result database."),
    out: Path | None = typer.Option(None, "--out", help="Report directory."),
    metric: list[str] | None = typer.Option(None, "--metric", "-m",
                                            help="Metric to report (repeatable)."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Tables and exports only."),
) -> None:
    """Report a stored run: terminal tables (verdicts with false discoveries controlled across
    the run), plots, a self-contained HTML page, Markdown and CSV."""
    _report(run_id, db, out, stdout_console(), metrics=metric or None, plots=not no_plots)


def _report(run_id: int | None, db: Path | None, out: Path | None, console: Console, *,
            store: object | None = None, metrics: list[str] | None = None,
            plots: bool = True) -> None:
    from perflab.suites.report import build_report

    if run_id is None:
        raise PerflabError("no run to report", "pass a result id")
    st = store if store is not None else _store(db)
    rs = st.load(run_id)  # type: ignore[attr-defined]
    if not rs.configurations:
        raise PerflabError(f"result {run_id} has no measured configurations",
                           "run the suite again, or --resume it")
    rep = build_report(rs, out, metrics=metrics, console=console, plots=plots)
    console.print(f"report: {rep.html}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``report`` to the perflab command line."""
    app.command("run")(run_cmd)
    app.command("report")(report_cmd)
