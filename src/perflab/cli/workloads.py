"""`perflab workloads list | build | show`: an adapter over perflab.workloads."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console
from perflab.errors import PerflabError
from perflab.format import fmt_fixed
from perflab.workloads.registry import discover, get, parse_assignments
from perflab.workloads.tables import listing, listing_json, listing_table, params_table

group = typer.Typer(help="List, build and inspect the benchmark workloads.",
                    no_args_is_help=True)
console = stdout_console()
err = stderr_console()


@group.command("list")
def list_cmd(as_json: o.AsJson = False) -> None:
    """Every workload: runtime, parameters (defaults), built or not and why not."""
    d = discover()
    listed = listing(d)
    if as_json:
        typer.echo(json.dumps(listing_json(d, listed), indent=2))
    elif d.root.is_dir():  # no directory: the error below says where workloads come from
        listing_table(d, listed).print(console)
    _exit_on_errors(d.errors)


def _exit_on_errors(errors: list[PerflabError]) -> None:
    """Each error of discovery (no workloads directory, a malformed manifest) as its one line,
    then exit 2, as every usage error does."""
    for e in errors:
        err.print(f"[bold red]perflab:[/] {escape(e.line())}", highlight=False, soft_wrap=True)
    if errors:
        raise typer.Exit(errors[0].exit_code)


@group.command("build")
def build_cmd(
    names: list[str] = typer.Argument(None, help="Workloads to build (default: all)."),
    force: bool = typer.Option(False, "--force", help="Rebuild even the up-to-date ones."),
) -> None:
    """Build all workloads or the named ones; a missing runtime is skipped with one line, and
    a workload built from its sources as they are now is left alone (unless --force).

    Exit status 0 when every available workload built, 1 when one failed to build, 2 when
    a manifest is malformed or there is no workloads directory."""
    d = discover()
    if not d.root.is_dir():
        _exit_on_errors(d.errors)
    for e in d.errors:
        err.print(f"[bold red]perflab:[/] {escape(e.line())}", highlight=False, soft_wrap=True)
    if names:
        targets = [get(n) for n in names]  # unknown name: PerflabError, nothing built
    else:
        targets = sorted(d.workloads.values(), key=lambda w: w.name)
    failed: list[str] = []
    built: list[str] = []
    fresh: list[str] = []
    skipped: list[str] = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("building", total=len(targets))
        for wl in targets:
            progress.update(task, description=f"building {wl.name}")
            ok, why = wl.available()
            if not ok:
                progress.console.print(f"skipped {wl.name}: {why}", highlight=False,
                                       markup=False)
                skipped.append(wl.name)
            elif not force and wl.is_built():
                # The source hash matches the stamp beside the outputs, or there is nothing to
                # build: nothing to do (javac and mcs have no incremental build of their own).
                fresh.append(wl.name)
                progress.console.print(f"up to date {wl.name}", highlight=False, markup=False)
            else:
                try:
                    r = wl.build()
                    built.append(wl.name)
                    progress.console.print(f"built {wl.name} ({fmt_fixed(r.seconds, 1)} s)",
                                           highlight=False, markup=False)
                except PerflabError as e:
                    failed.append(wl.name)
                    progress.console.print(f"[bold red]failed[/] {escape(e.line())}",
                                           highlight=False, soft_wrap=True)
            progress.advance(task)
    err.print(f"{len(built)} built, {len(fresh)} up to date, "
              f"{len(skipped)} skipped (runtime missing), "
              f"{len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""),
              highlight=False, markup=False)
    if d.errors:
        raise typer.Exit(d.errors[0].exit_code)
    if failed:
        raise typer.Exit(1)


@group.command("show")
def show_cmd(
    name: str = typer.Argument(..., help="Workload name, e.g. eh/cpp."),
    param: o.WorkloadParam = None,
) -> None:
    """A workload's manifest, parameters and the exact command perflab would run."""
    wl = get(name)
    ok, why = wl.available()
    argv: list[str] | None = None
    problem = ""
    try:
        argv = wl.resolve(parse_assignments(param)).argv
    except PerflabError as e:
        if param:  # a bad --param is the user's mistake: one line, nothing else
            raise
        problem = e.line()
    console.print(f"[bold]{escape(wl.name)}[/] - {escape(wl.description)}", highlight=False)
    console.print(escape(f"directory: {wl.dir}\nprimary metric: {wl.primary}\n"
                  f"region symbol: {wl.region_symbol or '-'}\n"
                  f"requires: {', '.join(wl.requires) or '-'} "
                  f"({'available' if ok else why})\nbuilt: {'yes' if wl.is_built() else 'no'}"),
                  highlight=False)
    params_table(wl).print(console)
    if argv is not None:
        console.print("command: " + " ".join(argv), highlight=False, soft_wrap=True,
                      markup=False)
    else:
        console.print(f"command: not runnable yet: {problem}", highlight=False, soft_wrap=True,
                      markup=False)


def register(app: typer.Typer) -> None:
    """Add `perflab workloads list|build|show` to the perflab command line."""
    app.add_typer(group, name="workloads")
