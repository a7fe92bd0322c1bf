"""The perflab command line: it only wires the stages together.

Each stage registers its own verbs (``register(app)``) so this file stays a table of contents:
measure (stat, compare, results) · workloads · suites (run, report) · history (history, detect,
bisect, dashboard, import) · profiles (profile).
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from perflab import __version__
from perflab.errors import PerflabError

app = typer.Typer(
    name="perflab",
    help="Measure hot paths of runtimes, kernels and libraries; compare, sweep, track, explain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

err_console = Console(stderr=True)


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


def _register_all() -> None:
    from perflab import commands, history, profiles, suites, workloads

    for module in (commands, workloads, suites, history, profiles):
        module.register(app)


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Entry point: a PerflabError becomes one line naming the problem and the fix."""
    try:
        app(args=argv)
    except PerflabError as e:
        err_console.print(f"[bold red]perflab:[/] {escape(e.line())}", highlight=False,
                          soft_wrap=True)
        sys.exit(e.exit_code)
