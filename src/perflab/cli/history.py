"""Verbs of the history stage: history, detect, bisect, dashboard, import (perflab.history)."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from perflab import session
from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console
from perflab.errors import PerflabError
from perflab.format import fmt_change_pct, fmt_signed, fmt_value
from perflab.history import git

if TYPE_CHECKING:  # SQLAlchemy, numpy: loaded by the verbs that need them (not by --help)
    from collections.abc import Callable

    from rich.progress import TaskID

    from perflab.history.bisect import BisectOutcome
    from perflab.history.detect import ChangePoint
    from perflab.history.series import Series
    from perflab.model import ResultSet
    from perflab.storage import Store

console = stdout_console()
err_console = stderr_console()


def history_cmd(
    benchmark: str = typer.Argument(..., help="Benchmark name (a glob such as 'eh/*' works)."),
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="Only cells with k=v (repeat).")] = None,
    metric: Annotated[str | None, typer.Option(
        "--metric", "-m", help="Metric (default: the result's primary metric).")] = None,
    config: Annotated[str | None, typer.Option("--config", help="Configuration name.")] = None,
    machine: o.Machine = None,
    since: o.Since = None,
    repo: o.OrderRepo = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the plot here (PNG).")]
    = None,
    settings: Annotated[Path | None, typer.Option(
        "--detect-config", help="Detect settings TOML (default .perflab/detect.toml).")] = None,
    db: o.Db = None,
) -> None:
    """The series of BENCHMARK in commit order: a table and a plot with change points."""
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.plot import plot_series
    from perflab.history.series import SeriesFilter, history_series, parse_params, parse_since
    from perflab.history.tables import series_table

    after = parse_since(since)
    store = session.open_store(db, read_only=True)
    which = SeriesFilter(benchmark, parse_params(param), metric=metric, config=config,
                         machine=machine, since=after)
    series = history_series(store, which, repo, since_text=since, param_text=param)
    sets = load_settings(settings)
    items = [(s, detect_series(s, sets)) for s in series]
    for s, cps in items:
        series_table(s, cps).print(console)
        for n in s.notes:
            console.print(f"[dim]{n}[/]")
    if plot is not None:
        plot_series(items, plot)
        console.print(f"plot: {plot}")


# detect's own options (only detect takes them: they stay with the verb, cli/options.py).
DetectMetric = Annotated[str | None, typer.Option("--metric", "-m", help="Only this metric.")]
ShowIgnored = Annotated[bool, typer.Option("--show-ignored", help="List ignored ones too.")]
AllMetrics = Annotated[bool, typer.Option(
    "--all-metrics", help="Every stored metric, not only the deciding ones.")]
ReportDir = Annotated[Path | None, typer.Option(
    "--report", help="Write one Markdown file (with its history plot) per regression not "
    "ignored into this directory.")]
Webhook = Annotated[str | None, typer.Option(
    "--webhook", help="POST each regression as JSON to this URL (chat or issue bots).")]


def detect_cmd(
    benchmark: o.BenchmarkGlob = None, metric: DetectMetric = None, machine: o.Machine = None,
    since: o.Since = None, settings: o.DetectConfig = None, repo: o.OrderRepo = None,
    fail_on_regression: o.FailOnRegression = False, show_ignored: ShowIgnored = False,
    as_json: o.AsJson = False, all_metrics: AllMetrics = False, report: ReportDir = None,
    webhook: Webhook = None, db: o.Db = None,
) -> None:
    """Change points in every stored series (a change-point search + t-test, as Apache Otava)."""
    from perflab.history.detect import find_changes, load_settings
    from perflab.history.filing import check_webhook
    from perflab.history.series import SeriesFilter, parse_since
    from perflab.history.tables import change_points_table
    from perflab.validate import output_dir

    after = parse_since(since)
    # Where the findings go is checked before any work: a bad path or URL is one line at once.
    if report is not None:
        output_dir(report, "--report")
    if webhook:
        check_webhook(webhook)
    if fail_on_regression:
        session.check_can_regress(metric)
    sets = load_settings(settings)
    store = session.open_store(db, read_only=True)
    which = SeriesFilter(benchmark, metric=metric, machine=machine, since=after)
    findings = find_changes(store, which, repo, sets, every_metric=all_metrics)
    series, cps = findings.series, findings.change_points()
    shown = [cp for cp in cps if show_ignored or not cp.ignored]
    regressions = [cp for cp in cps if cp.regression and not cp.ignored]
    if as_json:
        doc = {"series": len(series), "change_points": [c.to_dict() for c in shown]}
        typer.echo(json.dumps(doc, indent=2))
    else:
        change_points_table(series, shown, store.machine_names()).print(console)
        ignored = sum(1 for c in cps if c.ignored)
        better = sum(1 for c in cps if not c.regression and not c.ignored
                     and c.direction != "none")
        console.print(f"{len(regressions)} regression(s), {better} "
                      f"improvement(s), {ignored} ignored"
                      + (f" (settings: {sets.source})" if sets.source else ""))
    if report is not None or webhook:
        _file_regressions(store, findings.found + findings.unchanged, report, webhook, repo)
    if fail_on_regression and regressions:
        raise typer.Exit(1)


def _file_regressions(store: Store, found: list[tuple[Series, ChangePoint]], report: Path | None,
                      webhook: str | None, repo: Path | None) -> None:
    """--report and --webhook: one Markdown report per regression not ignored, posted too."""
    import tempfile

    from perflab.history.filing import post, write_reports

    out_dir = report or Path(tempfile.mkdtemp(prefix="perflab-regressions-"))
    filed = write_reports(store, found, out_dir, repo)
    for md, _ in filed:
        err_console.print(f"regression report: {md}", highlight=False, soft_wrap=True)
    if not filed:
        # Say so: an empty directory and a silent webhook read like a failure to deliver.
        err_console.print("no regression to file: "
                          + ", ".join(([f"nothing written in {report}"] if report else [])
                                      + (["nothing posted to the webhook"] if webhook
                                         else [])),
                          highlight=False, soft_wrap=True)
    for _, doc in filed if webhook else []:
        post(webhook, doc)
    if webhook and filed:
        err_console.print(f"posted {len(filed)} regression(s) to the webhook",
                          highlight=False)


def dashboard_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory.")]
    = Path("perflab-dashboard"),
    benchmark: o.BenchmarkGlob = None,
    settings: o.DetectConfig = None,
    repo: o.OrderRepo = None,
    db: o.Db = None,
) -> None:
    """A static HTML dashboard (one page per series, change points marked); no server needed."""
    from perflab.history.dashboard import write_dashboard
    from perflab.history.detect import detect_series, load_settings
    from perflab.history.series import SeriesFilter, load_series

    sets = load_settings(settings)
    store = session.open_store(db, read_only=True)
    series = load_series(store, SeriesFilter(benchmark), repo)
    if not series:
        raise PerflabError("no stored results to show" + (f" for '{benchmark}'" if benchmark
                                                           else ""),
                           "measure something first (perflab stat / compare / import)")
    index = write_dashboard([(s, detect_series(s, sets)) for s in series], out, store.location)
    console.print(f"dashboard: {index} ({len(series)} series)")


def import_cmd(
    files: Annotated[list[Path], typer.Argument(
        help="Files written by the tool, or a directory (criterion's target/criterion).")],
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help="The tool that wrote the files, one of the formats in "
        "docs/imports.md (default: told from each file's content).")] = None,
    benchmark: Annotated[str | None, typer.Option(
        "--benchmark", "-b", help="Benchmark name to store them under (default: the command / "
        "pyperf name / file name).")] = None,
    commit: o.CommitOpt = None,
    repo: o.RepoOpt = None,
    here: Annotated[bool, typer.Option(
        "--this-machine", help="Record this machine's fingerprint (the files were measured "
        "here).")] = False,
    db: o.Db = None,
) -> None:
    """Store the results other tools wrote (kind "import"): docs/imports.md lists them."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # The bar shows once the files are read, one task per file while it is stored.
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=stderr_console(), transient=True)
    tasks: dict[Path, TaskID] = {}

    def storing(f: Path, total: int) -> Callable[[int], None]:
        bar.start()
        task = tasks[f] = bar.add_task(f"storing {f.name}", total=total)
        return lambda n: bar.advance(task, n)

    def stored(f: Path, rs: ResultSet) -> None:
        bar.remove_task(tasks.pop(f))
        n = sum(cfg.measured_count() for cfg in rs.configurations)
        console.print(f"{f}: result {rs.id}, {len(rs.configurations)} configuration(s), "
                      f"{n} runs, metrics {', '.join(sorted(rs.metrics))}",
                      highlight=False, soft_wrap=True)
        for note in rs.notes:
            console.print(f"  [dim]{escape(note)}[/]", highlight=False)

    req = session.ImportRequest(files, fmt, benchmark, commit=commit, repo=repo, here=here)
    try:
        session.store_imports(req, db, session.ImportWatch(storing, stored))
    finally:
        bar.stop()


# bisect's own options (only bisect takes them: they stay with the verb, cli/options.py).
Good = Annotated[str, typer.Option("--good", help="A commit without the regression.")]
Bad = Annotated[str, typer.Option("--bad", help="A later commit with it.")]
Build = Annotated[str, typer.Option(
    "--build", help="Shell command building the checked-out commit, run in the repository.")]
BisectCommand = Annotated[list[str] | None, typer.Argument(
    help="After --: the command to measure; its relative paths are resolved in the tree.")]
RepoWorkload = Annotated[str | None, typer.Option(
    "--workload", "-w", help="Measure workloads/NAME of the repository instead.")]
BisectMetric = Annotated[str | None, typer.Option(
    "--metric", "-m", help="Default: CPU time (task_clock) when the warm-up shows CPU-bound "
    "work, else wall_time, as compare chooses; or instructions (valgrind, exact), or a "
    "workload metric.")]
BisectRepo = Annotated[Path, typer.Option("--repo", help="The repository (default: here).")]
Artifact = Annotated[list[str] | None, typer.Option(
    "--artifact", help="Build output to keep from the good commit (repeat; default: a copy "
    "of the whole tree).")]
StepRuns = Annotated[int, typer.Option("--runs", help="Runs per side per round.")]
MaxRounds = Annotated[int | None, typer.Option(
    "--max-rounds", help="A step's run budget: rounds of --runs each, looked at after each "
    "round, before an undecided step is skipped (default: 8).")]
StepThreshold = Annotated[float | None, typer.Option(
    "--threshold", help="Relative change that counts (0.01 = 1%; default: midway to the "
    "good->bad change, at least 1%).")]
RunTimeout = Annotated[float | None, typer.Option("--timeout", help="Seconds per run.")]
BuildTimeout = Annotated[float, typer.Option("--build-timeout", help="Seconds per build.")]
CheckRange = Annotated[bool, typer.Option(
    "--check/--no-check", help="First confirm that bad is slower than good.")]


def bisect_cmd(
    good: Good, bad: Bad, build: Build, command: BisectCommand = None,
    workload: RepoWorkload = None, param: o.WorkloadParam = None, metric: BisectMetric = None,
    repo: BisectRepo = Path("."), artifact: Artifact = None, runs: StepRuns = 10,
    max_rounds: MaxRounds = None, threshold: StepThreshold = None, timeout: RunTimeout = None,
    build_timeout: BuildTimeout = 900.0, check: CheckRange = True, db: o.Db = None,
) -> None:
    """Find the commit that made a benchmark slower: git bisect with A/B verdicts.

    \b
    The command, either way (built by --build at each commit):
      perflab bisect --good v1 --bad v2 --build make -- ./prog -n 9   argv
      perflab bisect --good v1 --bad v2 --build make './prog -n 9'    quoted
      perflab bisect --good v1 --bad v2 --build make -w eh/cpp        workload
    """
    from perflab.cmdline import forgiving_argv
    from perflab.history.bisect import BisectSpec, run_bisect
    from perflab.history.series import parse_params

    if workload and command:
        raise PerflabError("give either --workload or a command after --, not both",
                           "drop one of them")
    if command:
        command, note = forgiving_argv(list(command), built_in=git.toplevel(repo) or repo)
        if note:
            err_console.print(note, highlight=False, soft_wrap=True, markup=False)
    from perflab.validate import fraction, positive

    if threshold is not None:
        fraction(threshold, "--threshold", "0.05")
    positive(timeout, "--timeout", "30")
    positive(build_timeout, "--build-timeout", "900")
    spec = BisectSpec(repo=repo, good=good, bad=bad, build=build, command=list(command or []),
                      workload=workload, params=parse_params(param), metric=metric,
                      artifacts=list(artifact or []), runs=runs, threshold=threshold,
                      timeout=timeout, build_timeout=build_timeout, check=check)
    if max_rounds is not None:
        spec.max_rounds = max_rounds
    store = session.open_store(db)
    try:
        res = run_bisect(spec, store)
    except KeyboardInterrupt:
        err_console.print("bisect interrupted: the runs measured so far are stored (perflab "
                          "results list); git's bisect state is reset. Run the same command "
                          "again to bisect anew.", highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None
    _print_bisect(res, git.toplevel(repo) or repo)


def _print_bisect(res: BisectOutcome, top: Path) -> None:
    """The first bad commit (or the candidates) and its size, and where the steps are stored."""
    out = stdout_console()
    if res.first_bad:
        out.print(f"first bad commit: [bold]{res.first_bad}[/] {git.subject(top, res.first_bad)!r}")
        s = res.size
        if s is not None and not math.isnan(s.change_pct):
            u = res.unit
            out.print(f"{res.metric}: {fmt_value(s.base_value, u)} -> "
                      f"{fmt_value(s.cand_value, u)} ({fmt_change_pct(s.change_pct)}, "
                      f"{fmt_signed(s.cand_value - s.base_value, u, like=s.base_value)})")
    else:
        out.print("the first bad commit could not be isolated (skipped steps); it is one of: "
                  + ", ".join(git.short(c) for c in res.candidates))
    out.print(f"{len(res.steps)} step(s) stored as result {res.result_id}; replay: "
              f"{shlex.join(['perflab', 'results', 'show', str(res.result_id)])}")


def prune_cmd(
    older_than: Annotated[float, typer.Option(
        "--older-than", help="Remove result sets older than DAYS (fractions work: 0.5), and "
        "the fleet's jobs finished before then (queued and running ones stay).")],
    keep: Annotated[int, typer.Option(
        "--keep", help="Newest points of each series kept however old (what detect compares "
        "the next result with).")] = 50,
    yes: Annotated[bool, typer.Option(
        "--yes", help="Remove them (without it: say what would go and remove nothing).")]
    = False,
    db: o.Db = None,
) -> None:
    """Remove old result sets, keeping each series' newest points: a dry run unless --yes."""
    import time

    from perflab.prune import Retention, plan_prune, prune

    rule = Retention(older_than, keep)  # checked before the store is opened
    store = session.open_store(db)
    plan = plan_prune(store, rule)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(plan.before))
    if plan.empty:
        console.print(f"nothing to remove: no result set created before {when} is outside the "
                      f"newest {keep} points of its series", highlight=False, soft_wrap=True)
        return
    what = (f"{len(plan.result_ids)} result set(s) ({plan.runs} measured runs) created before "
            f"{when}"
            + (f" and {len(plan.jobs)} fleet job(s) finished before then" if plan.jobs else "")
            + (f"; {plan.kept} older one(s) kept as the newest {keep} points of their series"
               if plan.kept else ""))
    if not yes:
        console.print(f"would remove {what}; run again with --yes to remove them",
                      highlight=False, soft_wrap=True)
        return
    prune(store, plan)
    console.print(f"removed {what}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add this stage's verbs to the perflab command line."""
    app.command("history")(history_cmd)
    app.command("detect")(detect_cmd)
    app.command("bisect")(bisect_cmd)
    app.command("dashboard")(dashboard_cmd)
    app.command("import")(import_cmd)
    app.command("prune")(prune_cmd)
