"""The perflab command line: every verb, as a thin typer adapter, one module per stage.

verbs.py is the table of contents (VERBS); this file is the entry point (``main``); root.py is
the typer application that lists VERBS and loads a verb's stage when it runs; each stage module's
``register(app)`` adds its verbs: measure.py (stat, compare, results) · suites.py (run, report)
· history.py (history, detect, bisect, dashboard, import) · profile.py (profile ...) ·
workloads.py (workloads ...) · fleet.py (fleet init|submit|status, worker).  Options more than
one verb takes are declared once in options.py; what verbs share beyond parsing (opening the
store, resolving workloads, building options, result sets, --from-db merges, exports) is
perflab.session.  No module outside this package imports typer.

This module imports nothing beyond the standard library at its top: ``perflab --version`` is
answered here without typer, click, rich or pydantic (they cost 6-10 times Python's own
start-up in CPU time); everything else goes to root.py.  ``app``, ``stage_group`` and
``LazyGroup`` are root.py's, reachable from here too.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

from perflab.cli.verbs import VERBS

GC_YOUNG = 100_000


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``--version`` alone is answered at once; anything else is root.py's run
    (a PerflabError or a usage error becomes one line naming the problem and the fix; Ctrl-C
    outside a measurement is one line too, never a traceback).  ``--fleet-job FILE`` first:
    a fleet worker's job, whose context (perflab.jobcontext) the verb runs in."""
    args = sys.argv[1:] if argv is None else argv
    # The cyclic collector's first generation collected every 100,000 new objects, not 700:
    # loading typer, SQLAlchemy and numpy creates hundreds of thousands of objects that live
    # as long as the process, and collecting them over and over cost 12-15% of the CPU of
    # `results list` and `stat -r 1` (docs/benchmarks.md).  Cycles are still collected.
    gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
    if args == ["--version"]:
        from perflab import __version__

        print(f"perflab {__version__}")
        return
    from perflab.cli import helpcache

    keep_as = helpcache.print_kept(args) if helpcache.cacheable(args) else None
    from perflab import jobcontext

    job = None
    if args[:1] == [jobcontext.OPTION] and len(args) > 1:
        # A fleet worker's job: the one place its context is read (perflab.jobcontext).
        from perflab.errors import PerflabError

        try:
            job = jobcontext.JobContext.read(args[1])
        except PerflabError as e:
            print(f"perflab: {e.line()}", file=sys.stderr)
            sys.exit(e.exit_code)
        args = args[2:]
    from perflab.cli.root import run

    with jobcontext.running(job):
        if keep_as:  # a help typer prints now, kept for the next time (perflab.cli.helpcache)
            helpcache.run_and_keep(args, keep_as, run)
        else:
            run(args)


def __getattr__(name: str) -> Any:
    """``app``, ``stage_group``, ``LazyGroup``: root.py's, loaded when first asked for."""
    if name in ("app", "stage_group", "LazyGroup"):
        from perflab.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__: list[Any] = ["main", "VERBS", "app", "stage_group", "LazyGroup"]
