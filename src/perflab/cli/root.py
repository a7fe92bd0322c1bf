"""The typer application behind ``perflab``: the top-level group that lists the verbs of
perflab.cli.verbs.VERBS and imports a verb's stage only when that verb runs, and the one place that
turns errors into one line (``run``).  perflab.cli.main imports this module for every command
but ``--version``; no module outside perflab.cli imports typer."""

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
from perflab.cli.verbs import VERBS  # noqa: E402
from perflab.errors import PerflabError, printable  # noqa: E402

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
    """No value placeholder beside a flag in the help: typer 0.29 and later print a flag's
    type as one ("--shell <bool>", even "--help <bool>"), which reads as if the flag took a
    value; pyproject.toml pins typer below 0.29, and in an environment that still has a later
    one a flag's empty metavar is printed instead (with 0.28 this changes nothing)."""
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
    """Ctrl-C inside a verb, carried to ``main``'s one line.  typer turns a
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


def run(args: list[str]) -> None:
    """The command line's work: a PerflabError (or a usage error) becomes one line naming the
    problem and the fix; Ctrl-C outside a measurement is one line too, never a traceback."""
    from rich.markup import escape

    from perflab.console import stderr_console
    from perflab.validate import reject_surrogates

    err = stderr_console()

    def say(text: str) -> None:
        err.print(f"[bold red]perflab:[/] {escape(printable(text))}", highlight=False,
                  soft_wrap=True)

    try:
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


__all__: list[Any] = ["app", "run", "stage_group", "LazyGroup"]
