"""The workload registry: every ``workloads/<family>/<runtime>/workload.toml``.

Python API (for the measurement, suite and profile stages)::

    from perflab import workloads

    wl = workloads.get("eh/cpp")                 # PerflabError if unknown or malformed
    ok, why = wl.available()                     # required executables on PATH?
    wl.is_built()                                # outputs exist, built from these sources
    wl.build()                                   # BuildResult; PerflabError + log path on failure
    argv, typed = wl.command({"depth": "10"})   # defaults filled, values checked; PerflabError
                                                 # if a value is bad, the runtime is missing or
                                                 # the workload is not built
    wl.primary                                   # primary metric: a key of the workload's JSON
    wl.region_symbol                             # callgrind --toggle-collect pattern, or None
    wl.params["depth"].values                    # the sweep a study uses
    workloads.all_workloads(); workloads.names(); workloads.discover()  # .workloads, .errors
    workloads.parse_assignments(["depth=10"])    # --param NAME=VALUE options -> dict

The root is $PERFLAB_WORKLOADS_DIR, else the source tree's ``workloads/``.  Documented in
docs/workloads.md and docs/workload-manifest.md.
"""

from __future__ import annotations

import typer

from perflab.workloads.manifest import MANIFEST, Manifest, Param, load_manifest
from perflab.workloads.registry import (
    ROOT_ENV,
    Availability,
    BuildResult,
    Discovery,
    Workload,
    all_workloads,
    discover,
    get,
    names,
    parse_assignments,
    workloads_root,
)

__all__ = [
    "MANIFEST", "ROOT_ENV", "Availability", "BuildResult", "Discovery", "Manifest", "Param",
    "Workload", "all_workloads", "discover", "get", "load_manifest", "names",
    "parse_assignments", "register", "workloads_root",
]


def register(app: typer.Typer) -> None:
    """Add `perflab workloads list|build|show` to the perflab command line."""
    from perflab.workloads.cli import group

    app.add_typer(group, name="workloads")
