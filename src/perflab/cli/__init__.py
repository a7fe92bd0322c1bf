"""The perflab command line: every verb, as a thin typer adapter, one module per stage.

This file is the table of contents (VERBS) and the entry point; each module's ``register(app)``
adds its verbs: measure.py (stat, compare, results) · suites.py (run, report) · history.py
(history, detect, bisect, dashboard, import) · profile.py (profile ...) · workloads.py
(workloads ...) · fleet.py (fleet init|submit|status, worker).  Options more than one verb takes
are declared once in options.py; what verbs share beyond parsing (opening the store, resolving
workloads, building options, result sets, --from-db merges, exports) is perflab.session.  No
module outside this package imports typer.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any

from perflab import _interrupted_at_start

if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    # Ctrl-C while typer loads: one line, no traceback (see perflab/__init__.py).
    signal.signal(signal.SIGINT, _interrupted_at_start)

import typer  # noqa: E402
from typer.core import TyperCommand, TyperGroup  # noqa: E402

try:  # typer >= 0.22 carries its own copy of click
    from typer import _click as click  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older typer depends on click
    import click  # type: ignore[no-redef]

from perflab import __version__  # noqa: E402
from perflab.errors import PerflabError, printable  # noqa: E402

# verb -> (the cli module whose register(app) adds it, its one-line help).  The module is
# imported only when its verb runs (or its own --help is asked for), so `perflab --help` and
# `perflab --version` never load numpy, scipy, matplotlib or SQLAlchemy: the CLI starts in
# a fraction of the time.  tests/core/test_cli_startup.py checks this table against the verbs the
# modules really register, so the two cannot drift apart.
VERBS: dict[str, tuple[str, str]] = {
    "stat": ("perflab.cli.measure", "Run a command (or a workload) repeatedly and report every "
             "metric, like perf stat -r."),
    "compare": ("perflab.cli.measure", "Compare commands or workloads side by side: % change with "
                "CI and a verdict per metric."),
    "run": ("perflab.cli.suites", "Run a suite: plan the matrix, measure cell by cell "
            "(configurations interleaved within a cell), save every run as it completes, then "
            "report."),
    "report": ("perflab.cli.suites", "Report a stored run: terminal tables (verdicts with false "
               "discoveries controlled across the run), plots, a self-contained HTML page, "
               "Markdown and CSV."),
    "history": ("perflab.cli.history", "The series of BENCHMARK in commit order: a table and a "
                "plot with change points."),
    "detect": ("perflab.cli.history", "Change points in every stored series (a change-point search "
               "+ t-test, as Apache Otava)."),
    "bisect": ("perflab.cli.history", "Find the commit that made a benchmark slower: git bisect "
               "with A/B verdicts."),
    "dashboard": ("perflab.cli.history", "A static HTML dashboard (one page per series, change "
                  "points marked); no server needed."),
    "import": ("perflab.cli.history", "Store the results other tools wrote (kind \"import\"): "
               "docs/imports.md lists them."),
    "prune": ("perflab.cli.history", "Remove old result sets, keeping each series' newest "
              "points: a dry run unless --yes."),
    "results": ("perflab.cli.measure", "Stored results: list and show."),
    "workloads": ("perflab.cli.workloads", "List, build and inspect the benchmark workloads."),
    "profile": ("perflab.cli.profile", "Profile a command or a workload with perf record; show, "
                "list and diff stored profiles."),
    "fleet": ("perflab.cli.fleet", "A benchmark fleet: one PostgreSQL store and job queue, "
              "many benchmark hosts (see docs/fleet.md)."),
    "worker": ("perflab.cli.fleet", "Serve this machine's queue: run the jobs addressed to it "
               "one at a time, writing every run to the fleet's store as it finishes."),
}

_loaded: dict[str, TyperGroup] = {}


def stage_group(module: str) -> TyperGroup:
    """The click group holding every verb that ``module.register(app)`` adds (built once)."""
    if module not in _loaded:
        sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                          context_settings={"help_option_names": ["-h", "--help"]})
        sub.callback()(lambda: None)  # always a group, even for a stage with one verb
        importlib.import_module(module).register(sub)
        if signal.getsignal(signal.SIGINT) is _interrupted_at_start:
            # Loaded: from here Ctrl-C is the verb's to handle (a measurement keeps its runs).
            signal.signal(signal.SIGINT, signal.default_int_handler)
        group = typer.main.get_command(sub)
        assert isinstance(group, TyperGroup)
        _plain_flags(group)
        _loaded[module] = group
    return _loaded[module]


def _plain(params: list[click.Parameter]) -> list[click.Parameter]:
    """No value placeholder beside a flag in the help: typer 0.29 prints a flag's type as
    one ("--shell <bool>", even "--help <bool>"), which reads as if the flag took a value.
    A flag's empty metavar is printed instead."""
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""
    return params


def _plain_flags(cmd: click.Command) -> None:
    """_plain on the options of ``cmd`` (its help option too) and of its subcommands."""
    ctx = click.Context(cmd, help_option_names=["-h", "--help"])
    _plain(cmd.get_params(ctx))
    for sub in getattr(cmd, "commands", {}).values():
        _plain_flags(sub)


def _summary(name: str, help_text: str) -> TyperCommand:
    """What the top-level help lists for a verb whose stage is not loaded."""
    return TyperCommand(name, help=help_text)


class _CtrlC(BaseException):
    """Ctrl-C inside a verb, carried to ``main``'s one line.  typer (0.29) turns a
    KeyboardInterrupt into a silent Exit(130) that ``main`` could not tell from a verb's own
    exit code, so the verb ended with no word; this is no Exception, so nothing in typer or
    click catches it on the way."""


class LazyGroup(TyperGroup):
    """perflab's top level: verbs listed from VERBS, each stage imported when its verb runs."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise _CtrlC() from e

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # typo suggestions ("Did you mean 'stat'?") come from self.commands
        for verb, (_, help_text) in VERBS.items():
            self.commands.setdefault(verb, _summary(verb, help_text))

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _plain(super().get_params(ctx))  # with typer's completion options, added late

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in VERBS:
            return None
        module, help_text = VERBS[cmd_name]
        if ctx.meta.get("perflab.resolving"):
            return stage_group(module).get_command(ctx, cmd_name)
        return _summary(cmd_name, help_text)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        ctx.meta["perflab.resolving"] = True
        try:
            return super().resolve_command(ctx, args)
        finally:
            ctx.meta["perflab.resolving"] = False


app = typer.Typer(
    name="perflab",
    cls=LazyGroup,
    help="Measure hot paths of runtimes, kernels and libraries; compare, sweep, track, explain.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"perflab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    pass


def main(argv: list[str] | None = None) -> None:
    """Entry point: a PerflabError (or a usage error) becomes one line naming the problem and
    the fix; Ctrl-C outside a measurement is one line too, never a traceback."""
    from rich.markup import escape

    from perflab.console import stderr_console
    from perflab.validate import reject_surrogates

    err = stderr_console()

    def say(text: str) -> None:
        err.print(f"[bold red]perflab:[/] {escape(printable(text))}", highlight=False,
                  soft_wrap=True)

    try:
        args = sys.argv[1:] if argv is None else argv
        reject_surrogates(args)
        code = app(args=args, prog_name="perflab", standalone_mode=False)
    except typer.Abort:
        say("aborted -- nothing more was run")
        sys.exit(1)
    except typer.TyperException as e:
        # A usage error (unknown option, -r 0, a float where an int goes): one line, like
        # every other refusal, instead of click's boxed panel.
        if not e.format_message():  # no arguments: the help was printed
            sys.exit(e.exit_code)
        where = e.ctx.command_path if getattr(e, "ctx", None) else "perflab"
        say(f"{e.format_message()} -- see {where} --help")
        sys.exit(e.exit_code)
    except PerflabError as e:
        say(e.line())
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, _CtrlC):
        # Verbs that measure handle Ctrl-C themselves (keeping every finished run); this is
        # Ctrl-C anywhere else (loading, planning, reporting).
        say("interrupted -- every run finished so far is stored; run the command again to "
            "continue")
        sys.exit(130)
    if isinstance(code, int) and code:
        sys.exit(code)


__all__: list[Any] = ["app", "main", "VERBS", "stage_group"]
