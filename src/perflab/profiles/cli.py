"""`perflab profile`: record, show, list and diff profiles."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perflab.errors import PerflabError
from perflab.profiles.analysis import SymbolStat
from perflab.storage import Store

console = Console()
err_console = Console(stderr=True)

HELP = """Profile a command or a workload with perf record; show, list and diff stored profiles.

\b
  perflab profile [OPTIONS] COMMAND...          record a profile of COMMAND
  perflab profile [OPTIONS] --workload NAME [--param k=v ...]
  perflab profile show ID                        top symbols of a stored profile
  perflab profile list                           stored profiles
  perflab profile diff A B                       per-symbol share deltas + differential flame graph
  perflab profile import FILE                    store `perf script` output recorded elsewhere
"""


def _store(db: Path | None) -> Store:
    return Store(db) if db else Store()


def _module(module: str) -> str:
    # escape: "[kernel.kallsyms]" would otherwise be read as rich markup and vanish.
    return escape(module if module.startswith("[") else Path(module).name)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def symbols_table(stats: list[SymbolStat], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("Self", justify="right")
    t.add_column("Total", justify="right")
    t.add_column("Symbol", overflow="fold")
    t.add_column("Module", overflow="fold")
    for s in stats:
        t.add_row(_pct(s.self_share), _pct(s.total_share), escape(s.symbol), _module(s.module))
    return t


def _warn(lines: list[str]) -> None:
    for w in lines:
        err_console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)


def show(profile_id: int, store: Store, top: int, sort: str, svg: Path | None) -> None:
    from perflab.profiles.api import top_symbols
    from perflab.profiles.record import load_profile

    rec = load_profile(store, profile_id)
    s = rec.summary
    stats = top_symbols(profile_id, store, limit=top, sort=sort)
    scope = "timed region" if s.get("region") else "whole process"
    title = (f"profile {rec.id} {escape(rec.name)}: {s.get('samples', 0)} samples of {rec.sampler} "
             f"({scope}, call graph {rec.call_graph})")
    console.print(symbols_table(stats, title))
    _warn(list(s.get("warnings", [])))
    if rec.svg_path.is_file():
        if svg:
            shutil.copyfile(rec.svg_path, svg)
            console.print(f"flame graph: {svg}")
        else:
            console.print(f"flame graph: {rec.svg_path}")
    console.print(f"perf.data:   {rec.perf_data}  (perf report -i {rec.perf_data})")


def list_cmd(store: Store, limit: int) -> None:
    from perflab.profiles.record import list_profiles

    rows = list_profiles(store, limit)
    if not rows:
        console.print(f"no profiles in {store.location} -- record one: perflab profile COMMAND")
        return
    t = Table(title=f"profiles in {escape(store.location)}", title_justify="left")
    t.add_column("id", justify="right", no_wrap=True)
    t.add_column("when", no_wrap=True)
    t.add_column("name", overflow="fold")
    t.add_column("event", no_wrap=True)
    t.add_column("graph", no_wrap=True)
    t.add_column("samples", justify="right", no_wrap=True)
    t.add_column("top symbol", overflow="fold")
    for r in rows:
        t.add_row(str(r["id"]), time.strftime("%m-%d %H:%M", time.localtime(r["created_at"])),
                  escape(r["name"] or ""), escape(r["sampler"] or ""), r["call_graph"] or "",
                  str(r["samples"]), escape(r["top"]))
    console.print(t)


def diff_cmd(a: int, b: int, store: Store, top: int, svg: Path | None) -> None:
    from perflab.profiles.api import diff_profiles

    d = diff_profiles(a, b, store)
    t = Table(title=f"profile {b} ({escape(d.b.name)}) vs {a} ({escape(d.a.name)}): "
              "self share per symbol",
              title_justify="left")
    for col, just in (("A", "right"), ("B", "right"), ("Delta", "right"),
                      ("Total A", "right"), ("Total B", "right"), ("Symbol", "left"),
                      ("Module", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in d.rows[:top]:
        color = "red" if r.delta > 0 else "green" if r.delta < 0 else ""
        delta = f"{r.delta * 100:+.1f} pt"
        t.add_row(_pct(r.a_share), _pct(r.b_share), f"[{color}]{delta}[/]" if color else delta,
                  _pct(r.a_total), _pct(r.b_total), escape(r.symbol), _module(r.module))
    console.print(t)
    _warn(d.warnings)
    if d.svg is not None:
        if svg:
            shutil.copyfile(d.svg, svg)
        console.print(f"differential flame graph: {svg or d.svg}")


def _ints(args: list[str], n: int, usage: str) -> list[int]:
    if len(args) != n:
        raise PerflabError(f"expected {usage}", f"usage: perflab profile {usage}")
    try:
        return [int(x) for x in args]
    except ValueError as e:
        raise PerflabError(f"profile ids are numbers, not {args}",
                           "list them with 'perflab profile list'") from e


def register(app: typer.Typer) -> None:
    @app.command(
        "profile", help=HELP, no_args_is_help=True,
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
    def profile(
        args: list[str] = typer.Argument(None, metavar="COMMAND... | show ID | list | diff A B"),
        workload: str | None = typer.Option(None, "--workload", "-w",
                                            help="Profile this workload (see workloads list)."),
        param: list[str] = typer.Option(None, "--param", "-p",
                                        help="Workload parameter k=v (repeatable)."),
        call_graph: str = typer.Option("fp", "--call-graph", "-g",
                                       help="fp (frame pointers), dwarf, or none."),
        event: str | None = typer.Option(None, "--event", "-e",
                                         help="perf event (default: cycles with a PMU, "
                                              "else cpu-clock)."),
        frequency: int | None = typer.Option(None, "--frequency", "-F",
                                             help="Samples per second (default 4999; "
                                                  "999 with dwarf)."),
        duration: float | None = typer.Option(None, "--duration",
                                              help="Stop after this many seconds."),
        no_region: bool = typer.Option(False, "--no-region",
                                       help="Profile the whole process, not the timed region."),
        name: str = typer.Option("", "--name", help="A name for the profile."),
        top: int = typer.Option(20, "--top", "-n", help="Rows to show."),
        sort: str = typer.Option("self", "--sort", help="self or total."),
        svg: Path | None = typer.Option(None, "--svg", help="Also copy the flame graph here."),
        db: Path | None = typer.Option(None, "--db", help="Result database (default: "
                                                          "$PERFLAB_DB or the user data dir)."),
    ) -> None:
        args = list(args or [])
        if args and args[0] == "diff":
            a, b = _ints(args[1:], 2, "diff A B")
            diff_cmd(a, b, _store(db), top, svg)
            return
        if args and args[0] == "show":
            (pid,) = _ints(args[1:], 1, "show ID")
            show(pid, _store(db), top, sort, svg)
            return
        if args and args[0] == "import":
            if len(args) != 2:
                raise PerflabError("expected import FILE", "usage: perflab profile import FILE")
            from perflab.profiles.record import import_perf_script

            store = _store(db)
            pid = import_perf_script(Path(args[1]), store=store, name=name,
                                     call_graph=call_graph)
            show(pid, store, top, sort, svg)
            console.print(f"stored as profile {pid}")
            return
        if args and args[0] == "list":
            list_cmd(_store(db), top if top != 20 else 50)
            return
        from perflab.profiles.record import record_profile

        if workload:
            if args:
                raise PerflabError("give either a COMMAND or --workload, not both",
                                   "drop the command, or drop --workload")
            from perflab.workloads.registry import get, parse_assignments

            command, _typed = get(workload).command(parse_assignments(param))
            name = name or workload
        else:
            if param:
                raise PerflabError("--param needs --workload", "add --workload NAME")
            if not args:
                raise PerflabError("nothing to profile", "give a COMMAND or --workload NAME")
            command = args
        store = _store(db)
        pid = record_profile(command, name=name, store=store, call_graph=call_graph,
                             region=not no_region, duration=duration, event=event,
                             frequency=frequency)
        show(pid, store, top, sort, svg)
        console.print(f"stored as profile {pid}")
