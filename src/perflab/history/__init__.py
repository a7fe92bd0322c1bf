"""perflab.history: results across commits, change points, noise-aware bisect, imports.

Verbs: history, detect, bisect, dashboard, import.  ``git_state`` (perflab.history.git) gives
the commit a measurement is recorded against.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer
from rich.table import Table

from perflab.console import stdout_console
from perflab.errors import PerflabError
from perflab.history.git import git_state, short

__all__ = ["git_state", "register"]

console = stdout_console()

DB_HELP = ("Result database: a SQLite file or a postgresql:// URL "
           "(default: $PERFLAB_DB or the user's).")


def _store(db: str | None):  # -> Store; imported late so `perflab --help` stays quick
    from perflab.storage import Store

    return Store(db)


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def history_cmd(
    benchmark: str = typer.Argument(..., help="Benchmark name (a glob such as 'eh/*' works)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Only cells with k=v (repeat)."),
    metric: str = typer.Option(None, "--metric", "-m",
                               help="Metric (default: the result's primary metric)."),
    config: str = typer.Option(None, "--config", help="Configuration name."),
    machine: int = typer.Option(None, "--machine", help="Machine id (see 'perflab results')."),
    repo: Path = typer.Option(None, "--repo",
                              help="Order points by this repository's commit graph."),
    plot: Path = typer.Option(None, "--plot", help="Write the plot here (PNG)."),
    settings: Path = typer.Option(None, "--detect-config",
                                  help="Detect settings TOML (default .perflab/detect.toml)."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """The series of BENCHMARK in commit order: a table and a plot with change points."""
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.plot import plot_series
    from perflab.history.series import known_benchmarks, load_series, parse_params

    store = _store(db)
    wanted = parse_params(param)
    found = load_series(store, benchmark, wanted, None, config, machine, repo)
    if not found:
        names = known_benchmarks(store)
        hint = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "") if names else "none yet"
        raise PerflabError(f"no stored results for benchmark '{benchmark}'"
                           + (f" with {param}" if param else ""),
                           f"stored benchmarks: {hint}")
    if metric:
        series = [s for s in found if s.key.metric == metric]
        if not series:
            have = sorted({s.key.metric for s in found})
            raise PerflabError(f"benchmark '{benchmark}' has no metric '{metric}'",
                               f"choose one of {', '.join(have)}")
    else:
        series = [s for s in found if s.key.metric == _primary(store, found)]
    sets = load_settings(settings)
    items = [(s, detect_series(s, sets)) for s in series]
    for s, cps in items:
        t = Table(title=s.key.label(), title_justify="left")
        for col in ("commit", "result", "kind", "runs", f"median ({s.unit})", "95% CI", "change"):
            t.add_column(col, justify="right" if col != "kind" else "left")
        at = {cp.index: cp for cp in cps}
        for i, p in enumerate(s.points):
            cp = at.get(i)
            mark = ""
            if cp is not None:
                style = "dim" if cp.ignored else ("red" if cp.regression else "green")
                mark = f"[{style}]{cp.change_pct:+.1f}% p={cp.p_value:.2g}[/]"
            t.add_row(short(p.commit) + ("*" if p.dirty else ""), str(p.result_id), p.kind,
                      str(p.n), _fmt(p.median), f"[{_fmt(p.ci_low)}, {_fmt(p.ci_high)}]", mark)
        console.print(t)
        for n in s.notes:
            console.print(f"[dim]{n}[/]")
    if plot is not None:
        plot_series(items, plot)
        console.print(f"plot: {plot}")


def _primary(store, found) -> str:  # type: ignore[no-untyped-def]
    """The metric a history shows by default: the primary metric the latest result used."""
    metrics = {s.key.metric for s in found}
    latest = max(found, key=lambda s: s.points[-1].created_at)
    try:
        primary = store.load(latest.points[-1].result_id).settings.get("primary_metric")
    except PerflabError:
        primary = None
    for m in (primary, "wall_time", "ns_per_op", "instructions"):
        if m in metrics:
            return str(m)
    return sorted(metrics)[0]


def detect_cmd(
    benchmark: str = typer.Option(None, "--benchmark", "-b", help="Only these (glob)."),
    metric: str = typer.Option(None, "--metric", "-m", help="Only this metric."),
    settings: Path = typer.Option(None, "--config", "-c",
                                  help="Settings TOML (default .perflab/detect.toml)."),
    repo: Path = typer.Option(None, "--repo", help="Order by this repository's commit graph."),
    fail_on_regression: bool = typer.Option(False, "--fail-on-regression",
                                            help="Exit with status 1 if a regression is found."),
    show_ignored: bool = typer.Option(False, "--show-ignored", help="List ignored ones too."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Change points in every stored series (E-divisive means + t-test, Apache Otava)."""
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.series import load_series

    sets = load_settings(settings)
    store = _store(db)
    series = load_series(store, benchmark, None, metric, None, None, repo)
    cps = [cp for s in series for cp in detect_series(s, sets)]
    shown = [cp for cp in cps if show_ignored or not cp.ignored]
    regressions = [cp for cp in cps if cp.regression and not cp.ignored]
    if as_json:
        doc = {"series": len(series), "change_points": [c.to_dict() for c in shown]}
        typer.echo(json.dumps(doc, indent=2))
    else:
        t = Table(title=f"change points in {len(series)} series", title_justify="left")
        for col in ("benchmark", "params", "config", "machine", "metric", "commits", "change",
                    "before (mean ± sd)", "after (mean ± sd)", "p", ""):
            t.add_column(col)
        for cp in shown:
            what = (f"[dim]ignored: {cp.ignored}[/]" if cp.ignored
                    else "[red]regression[/]" if cp.regression else "[green]improvement[/]")
            t.add_row(cp.key.benchmark, cp.key.params_text(), cp.key.config,
                      str(cp.key.machine_id), cp.key.metric,
                      f"{short(cp.commit_before)}..{short(cp.commit_after)}",
                      f"{cp.change_pct:+.2f}%", f"{_fmt(cp.mean_before)} ± {_fmt(cp.std_before)}",
                      f"{_fmt(cp.mean_after)} ± {_fmt(cp.std_after)}", f"{cp.p_value:.2g}", what)
        console.print(t)
        ignored = sum(1 for c in cps if c.ignored)
        console.print(f"{len(regressions)} regression(s), "
                      f"{sum(1 for c in cps if not c.regression and not c.ignored)} "
                      f"improvement(s), {ignored} ignored"
                      + (f" (settings: {sets.source})" if sets.source else ""))
    if fail_on_regression and regressions:
        raise typer.Exit(1)


def dashboard_cmd(
    out: Path = typer.Option(Path("perflab-dashboard"), "--out", "-o", help="Output directory."),
    benchmark: str = typer.Option(None, "--benchmark", "-b", help="Only these (glob)."),
    settings: Path = typer.Option(None, "--config", "-c", help="Detect settings TOML."),
    repo: Path = typer.Option(None, "--repo", help="Order by this repository's commit graph."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """A static HTML dashboard (one page per series, change points marked); no server needed."""
    from perflab.history.dashboard import write_dashboard
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.series import load_series

    sets = load_settings(settings)
    store = _store(db)
    series = load_series(store, benchmark, None, None, None, None, repo)
    if not series:
        raise PerflabError("no stored results to show" + (f" for '{benchmark}'" if benchmark
                                                           else ""),
                           "measure something first (perflab stat / compare / import)")
    index = write_dashboard([(s, detect_series(s, sets)) for s in series], out, store.location)
    console.print(f"dashboard: {index} ({len(series)} series)")


def import_cmd(
    files: list[Path] = typer.Argument(..., help="Files written by the tool."),
    fmt: str = typer.Option(..., "--format", "-f", help="hyperfine | pyperf | perf-stat"),
    benchmark: str = typer.Option(None, "--benchmark", "-b",
                                  help="Benchmark name to store them under (default: the "
                                       "command / pyperf name / file name)."),
    commit: str = typer.Option(None, "--commit", help="Commit measured (default: the working "
                                                      "directory's, if a git work tree)."),
    repo: Path = typer.Option(None, "--repo", help="Repository the measured code came from."),
    here: bool = typer.Option(False, "--this-machine",
                              help="Record this machine's fingerprint (the files were measured "
                                   "here)."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Store hyperfine --export-json, pyperf JSON or perf stat -j results (kind "import")."""
    from perflab.history.imports import import_file

    # Parse everything before storing anything: one bad file stores nothing.
    parsed = [import_file(Path(f), fmt, benchmark) for f in files]
    c, dirty, r = git_state(repo, commit)
    fp: dict = {}
    if here:
        from perflab.fingerprint import machine_fingerprint

        fp = machine_fingerprint()
    store = _store(db)
    for f, rs in zip(files, parsed, strict=True):
        rs.commit, rs.dirty, rs.repo = c, dirty, r
        rs.fingerprint = {**rs.fingerprint, **fp}
        rs.status = "complete"
        rid = store.save(rs)
        n = sum(len(cfg.measured_runs()) for cfg in rs.configurations)
        console.print(f"{f}: result {rid}, {len(rs.configurations)} configuration(s), {n} runs, "
                      f"metrics {', '.join(sorted(rs.metrics))}")
        for note in rs.notes:
            console.print(f"  [dim]{note}[/]")


def register(app: typer.Typer) -> None:
    """Add this stage's verbs to the perflab command line."""
    from perflab.history.bisect import bisect_cmd

    app.command("history")(history_cmd)
    app.command("detect")(detect_cmd)
    app.command("bisect")(bisect_cmd)
    app.command("dashboard")(dashboard_cmd)
    app.command("import")(import_cmd)
