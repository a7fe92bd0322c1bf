"""perflab.history: results across commits, change points, noise-aware bisect, imports.

Verbs: history, detect, bisect, dashboard, import.  ``git_state`` (perflab.history.git) gives
the commit a measurement is recorded against.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perflab.console import stdout_console
from perflab.errors import PerflabError
from perflab.history.git import git_state, short

__all__ = ["git_state", "register"]

console = stdout_console()
err_console = Console(stderr=True)

DB_HELP = ("Result database: a SQLite file or a postgresql:// URL "
           "(default: $PERFLAB_DB or the user's).")


def _store(db: str | None):  # -> Store; imported late so `perflab --help` stays quick
    from perflab.storage import Store

    return Store(db)


def _fmt(x: float, unit: str = "") -> str:
    from perflab.reports.format import fmt_value

    return fmt_value(x, unit)


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
        for col in ("commit", "result", "kind", "runs", "median", "95% CI", "change"):
            t.add_column(col, justify="right" if col != "kind" else "left")
        at = {cp.index: cp for cp in cps}
        for i, p in enumerate(s.points):
            cp = at.get(i)
            mark = ""
            if cp is not None:
                style = "dim" if cp.ignored else ("red" if cp.regression else "green")
                mark = f"[{style}]{cp.change_pct:+.1f}% p={cp.p_value:.2g}[/]"
            t.add_row(short(p.commit) + ("*" if p.dirty else ""), str(p.result_id), p.kind,
                      str(p.n), _fmt(p.median, s.unit),
                      f"[{_fmt(p.ci_low, s.unit)}, {_fmt(p.ci_high, s.unit)}]", mark)
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


def _decision_series(store, series):  # type: ignore[no-untyped-def]
    """The series detect looks at by default: the metric that decided each result when it was
    measured (runner.choose_primary: CPU time for CPU-bound work) and the wall-clock metric
    it was chosen over, which keeps its own row."""
    from perflab.runner import CPU_COUNTERPART

    wall_of = {cpu: wall for wall, cpu in CPU_COUNTERPART.items()}
    wall_of["cpu_time"] = "wall_time"
    primary: dict[int, str | None] = {}
    keep = []
    for s in series:
        rid = s.points[-1].result_id
        if rid not in primary:
            try:
                primary[rid] = store.load(rid).settings.get("primary_metric")
            except PerflabError:
                primary[rid] = None
        p = primary[rid] or "wall_time"
        if s.key.metric in (p, wall_of.get(p, p)):
            keep.append(s)
    return keep


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
    all_metrics: bool = typer.Option(
        False, "--all-metrics", help="Every stored metric, not only the deciding ones."),
    report: Path = typer.Option(None, "--report", help="Write one Markdown file (with its "
                                "history plot) per regression not ignored into this directory."),
    webhook: str = typer.Option(None, "--webhook", help="POST each regression as JSON to this "
                                "URL (chat or issue bots)."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Change points in every stored series (a change-point search + t-test, as Apache Otava)."""
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.series import load_series

    if fail_on_regression and metric:
        from perflab.model import metric_direction

        if metric_direction(metric) == "none":
            raise PerflabError(f"--fail-on-regression: {metric} has no direction (neither lower "
                               "nor higher is better), so it cannot regress",
                               "use --metric with a time, memory or count metric")
    sets = load_settings(settings)
    store = _store(db)
    series = load_series(store, benchmark, None, metric, None, None, repo)
    if not metric and not all_metrics:
        series = _decision_series(store, series)
    found = [(s, cp) for s in series for cp in detect_series(s, sets)]
    cps = [cp for _, cp in found]
    unit = {s.key: s.unit for s in series}
    shown = [cp for cp in cps if show_ignored or not cp.ignored]
    regressions = [cp for cp in cps if cp.regression and not cp.ignored]
    if as_json:
        doc = {"series": len(series), "change_points": [c.to_dict() for c in shown]}
        typer.echo(json.dumps(doc, indent=2))
    else:
        names = store.machine_names()
        t = Table(title=f"change points in {len(series)} series", title_justify="left")
        for col in ("benchmark", "params", "config", "machine", "metric", "commits", "change",
                    "before (mean ± sd)", "after (mean ± sd)", "p", ""):
            t.add_column(col)
        for cp in shown:
            u = unit.get(cp.key, "")
            what = (f"[dim]ignored: {cp.ignored}[/]" if cp.ignored
                    else "[red]regression[/]" if cp.regression
                    else "[magenta]changed (no direction)[/]" if cp.direction == "none"
                    else "[green]improvement[/]")
            t.add_row(cp.key.benchmark, cp.key.params_text(), cp.key.config,
                      names.get(cp.key.machine_id or -1, str(cp.key.machine_id)), cp.key.metric,
                      f"{short(cp.commit_before)}..{short(cp.commit_after)}",
                      f"{cp.change_pct:+.2f}%",
                      f"{_fmt(cp.mean_before, u)} ± {_fmt(cp.std_before, u)}",
                      f"{_fmt(cp.mean_after, u)} ± {_fmt(cp.std_after, u)}",
                      f"{cp.p_value:.2g}", what)
        console.print(t)
        ignored = sum(1 for c in cps if c.ignored)
        better = sum(1 for c in cps if not c.regression and not c.ignored
                     and c.direction != "none")
        console.print(f"{len(regressions)} regression(s), {better} "
                      f"improvement(s), {ignored} ignored"
                      + (f" (settings: {sets.source})" if sets.source else ""))
    if report is not None or webhook:
        import tempfile

        from perflab.history.filing import post, write_reports

        out_dir = report or Path(tempfile.mkdtemp(prefix="perflab-regressions-"))
        filed = write_reports(store, found, out_dir, repo)
        for md, _ in filed:
            err_console.print(f"regression report: {md}", highlight=False, soft_wrap=True)
        for _, doc in filed if webhook else []:
            post(webhook, doc)
        if webhook:
            err_console.print(f"posted {len(filed)} regression(s) to the webhook",
                              highlight=False)
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
    fmt: str = typer.Option(None, "--format", "-f",
                            help="hyperfine | pyperf | perf-stat | perflab (default: told "
                                 "from each file's content)"),
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
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from perflab.history.imports import import_file

    err_console = Console(stderr=True)

    stored: list[str] = []
    current = ""
    try:
        # Parse everything before storing anything: one bad file stores nothing.
        parsed = []
        for f in files:
            current = str(f)
            parsed.append(import_file(Path(f), fmt, benchmark))
        c, dirty, r = git_state(repo, commit)
        fp: dict = {}
        if here:
            from perflab.fingerprint import machine_fingerprint

            fp = machine_fingerprint()
        store = _store(db)
        # One transaction per file (all of it or none of it), runs inserted in batches.
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), console=err_console, transient=True)
        with bar:
            for f, rs in zip(files, parsed, strict=True):
                current = str(f)
                rs.commit, rs.dirty, rs.repo = c, dirty, r
                rs.fingerprint = {**rs.fingerprint, **fp}
                rs.status = "complete"
                total = sum(len(cfg.runs) for cfg in rs.configurations)
                task = bar.add_task(f"storing {Path(f).name}", total=total)
                rid = store.save(rs, progress=lambda n, t=task: bar.advance(t, n))
                bar.remove_task(task)
                stored.append(f"{f} (result {rid})")
                n = sum(len(cfg.measured_runs()) for cfg in rs.configurations)
                console.print(f"{f}: result {rid}, {len(rs.configurations)} configuration(s), "
                              f"{n} runs, metrics {', '.join(sorted(rs.metrics))}",
                              highlight=False, soft_wrap=True)
                for note in rs.notes:
                    console.print(f"  [dim]{escape(note)}[/]", highlight=False)
    except KeyboardInterrupt:
        kept = f"; stored before it: {', '.join(stored)}" if stored else ""
        raise PerflabError(f"import interrupted: nothing of {current} was stored (each file is "
                           f"stored whole or not at all){kept}",
                           "run the import again for the files not stored",
                           exit_code=130) from None


def register(app: typer.Typer) -> None:
    """Add this stage's verbs to the perflab command line."""
    from perflab.history.bisect import bisect_cmd

    app.command("history")(history_cmd)
    app.command("detect")(detect_cmd)
    app.command("bisect")(bisect_cmd)
    app.command("dashboard")(dashboard_cmd)
    app.command("import")(import_cmd)
