"""`perflab profile`: record, show, list and diff profiles (an adapter over perflab.profiles)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from perflab import session
from perflab.cli import options as o
from perflab.console import stderr_console, stdout_console, warning
from perflab.errors import PerflabError
from perflab.reports.profiles import profiles_table, symbols_table

if TYPE_CHECKING:  # SQLAlchemy, loaded by the verbs that open a store (not by --help)
    from perflab.storage import Store

console = stdout_console()
err_console = stderr_console()

HELP = """Profile a command or a workload with perf record; show, list and diff stored profiles.

\b
  perflab profile -- ./prog --size 10            record, argv (short for: profile record ...)
  perflab profile './prog --size 10'             record, one quoted string (hyperfine's way)
  perflab profile --workload NAME [--param k=v ...]
  perflab profile show ID                        top symbols of a stored profile
  perflab profile list                           stored profiles
  perflab profile diff A B                       per-symbol share deltas + differential flame graph
  perflab profile import FILE                    store `perf script` output recorded elsewhere
"""


def _warn(lines: list[str]) -> None:
    for w in lines:
        err_console.print(warning(w), highlight=False, soft_wrap=True)


def show(profile_id: int, store: Store, top: int, sort: str, svg: Path | None) -> None:
    from perflab.profiles.api import top_symbols
    from perflab.profiles.store import load_profile

    rec = load_profile(store, profile_id)
    s = rec.summary
    stats = top_symbols(profile_id, store, limit=top, sort=sort)
    scope = "timed region" if s.get("region") else "whole process"
    title = (f"profile {rec.id} {rec.name}: {s.get('samples', 0)} samples of {rec.sampler} "
             f"({scope}, call graph {rec.call_graph})")
    symbols_table(stats, title).print(console)
    _warn(list(s.get("warnings", [])))
    if rec.svg_path.is_file():
        if svg:
            shutil.copyfile(rec.svg_path, svg)
            console.print(f"flame graph: {svg}")
        else:
            console.print(f"flame graph: {rec.svg_path}")
    console.print(f"perf.data:   {rec.perf_data}  (perf report -i {rec.perf_data})")


def list_cmd(store: Store, limit: int) -> None:
    from perflab.profiles.store import list_profiles

    rows = list_profiles(store, limit)
    if not rows:
        console.print(f"no profiles in {store.location} -- record one: perflab profile COMMAND")
        return
    profiles_table(store.location, rows).print(console)


def diff_cmd(a: int, b: int, store: Store, top: int, svg: Path | None) -> None:
    from perflab.profiles.api import diff_profiles
    from perflab.reports.profiles import diff_note, diff_table

    d = diff_profiles(a, b, store)
    diff_table(d, top).print(console)
    console.print(diff_note(d))
    _warn(d.warnings)
    if d.svg is not None:
        if svg:
            shutil.copyfile(d.svg, svg)
        console.print(f"differential flame graph: {svg or d.svg}")


def record_argv(command: list[str], workload: str | None, param: list[str] | None,
                name: str) -> tuple[list[str], str]:
    """What `profile record` runs, and its name: the COMMAND, or the workload's argv from
    workloads.resolve (the one spec -> argv for every verb)."""
    if workload:
        if command:
            raise PerflabError("give either a COMMAND or --workload, not both",
                               "drop the command, or drop --workload")
        from perflab.workloads import parse_assignments, resolve

        return resolve(workload, parse_assignments(param)).argv, name or workload
    if param:
        raise PerflabError("--param needs --workload", "add --workload NAME")
    if not command:
        raise PerflabError("nothing to profile", "give a COMMAND or --workload NAME")
    from perflab.cmdline import forgiving_argv

    args, note = forgiving_argv(command)
    if note:
        err_console.print(note, highlight=False, soft_wrap=True, markup=False)
    return args, name


class _DefaultRecord(TyperGroup):
    """`perflab profile COMMAND...` means `perflab profile record COMMAND...`: anything that is
    not a verb of this group (or a plea for help) goes to `record`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["record", *args]
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    group = typer.Typer(cls=_DefaultRecord, help=HELP, no_args_is_help=True,
                        subcommand_metavar="[record|show|list|diff|import] ARGS...")
    app.add_typer(group, name="profile")

    @group.command(
        "record", help="Profile COMMAND (or --workload NAME) with perf record and store it."
        "\n\n\b\nThe command, either way:\n  perflab profile record -- ./prog --size 10    argv"
        "\n  perflab profile record './prog --size 10'    one quoted string",
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
    def record(
        command: Annotated[list[str] | None, typer.Argument(metavar="COMMAND...")] = None,
        workload: o.OneWorkload = None,
        param: o.WorkloadParam = None,
        call_graph: o.CallGraph = "fp",
        event: Annotated[str | None, typer.Option(
            "--event", "-e", help="perf event (default: cycles with a PMU, else cpu-clock).")]
        = None,
        frequency: Annotated[int | None, typer.Option(
            "--frequency", "-F", help="Samples per second (default 4999; 999 with dwarf).")]
        = None,
        duration: Annotated[float | None, typer.Option(
            "--duration", help="Stop the command after this many seconds.")] = None,
        no_region: Annotated[bool, typer.Option(
            "--no-region", help="Profile the whole process, not the timed region.")] = False,
        name: o.ProfileName = "",
        top: o.Top = 20,
        sort: o.Sort = "self",
        svg: o.Svg = None,
        db: o.Db = None,
    ) -> None:
        from perflab.profiles.record import record_profile

        args, name = record_argv(list(command or []), workload, param, name)
        store = session.open_store(db)
        pid = record_profile(args, name=name, store=store, call_graph=call_graph,
                             region=not no_region, duration=duration, event=event,
                             frequency=frequency)
        show(pid, store, top, sort, svg)
        console.print(f"stored as profile {pid}")

    @group.command("show", help="Top symbols of a stored profile, and its files.")
    def show_cmd(
        profile_id: Annotated[int, typer.Argument(metavar="ID")],
        top: o.Top = 20, sort: o.Sort = "self", svg: o.Svg = None, db: o.Db = None,
    ) -> None:
        show(profile_id, session.open_store(db), top, sort, svg)

    @group.command("list", help="The stored profiles, newest first.")
    def list_verb(limit: o.Limit = 50, db: o.Db = None) -> None:
        list_cmd(session.open_store(db), limit)

    @group.command("diff", help="Per-symbol share in A and B, the delta (sorted by its size), "
                                "and a differential flame graph.")
    def diff_verb(
        a: Annotated[int, typer.Argument(metavar="A")],
        b: Annotated[int, typer.Argument(metavar="B")],
        top: o.Top = 20, svg: o.Svg = None, db: o.Db = None,
    ) -> None:
        diff_cmd(a, b, session.open_store(db), top, svg)

    @group.command("import", help="Store `perf script` output recorded elsewhere.")
    def import_verb(
        path: Annotated[Path, typer.Argument(metavar="FILE")],
        name: o.ProfileName = "",
        call_graph: Annotated[str, typer.Option(
            "--call-graph", "-g", help="How it was recorded: fp, dwarf or none.")] = "fp",
        top: o.Top = 20,
        db: o.Db = None,
    ) -> None:
        from perflab.profiles.record import import_perf_script

        store = session.open_store(db)
        pid = import_perf_script(path, store=store, name=name, call_graph=call_graph)
        show(pid, store, top, "self", None)
        console.print(f"stored as profile {pid}")
