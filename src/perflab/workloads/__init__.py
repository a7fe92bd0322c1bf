"""The workload registry: every ``workloads/<family>/<runtime>/workload.toml``.

Python API (for the measurement, suite and profile stages)::

    from perflab import workloads

    wl = workloads.get("eh/cpp")                 # PerflabError if unknown or malformed
    ok, why = wl.available()                     # required executables on PATH?
    wl.is_built()                                # outputs exist, built from these sources
    wl.build()                                   # BuildResult; PerflabError + log path on failure
    r = workloads.resolve("eh/cpp", {"depth": "10"})  # THE spec -> runnable step: r.argv,
                                                 # r.params (typed, defaults filled), r.primary,
                                                 # r.region_symbol; PerflabError if a value is
                                                 # bad, the runtime is missing or the workload
                                                 # is not built (root=: another workloads dir)
    argv, typed = wl.command({"depth": "10"})   # (r.argv, r.params) of wl.resolve(...)
    wl.primary                                   # primary metric: a key of the workload's JSON
    wl.region_symbol                             # callgrind --toggle-collect pattern, or None
    wl.params["depth"].values                    # the sweep a study uses
    workloads.all_workloads(); workloads.names(); workloads.discover()  # .workloads, .errors
    workloads.parse_assignments(["depth=10"])    # --param NAME=VALUE options -> dict

The root is $PERFLAB_WORKLOADS_DIR, else the source tree's ``workloads/``.  Documented in
docs/workloads.md and docs/workload-manifest.md.
"""

from __future__ import annotations

from perflab.workloads.manifest import MANIFEST, Manifest, Param, load_manifest
from perflab.workloads.registry import (
    ROOT_ENV,
    Availability,
    BuildResult,
    Discovery,
    Resolved,
    Workload,
    all_workloads,
    discover,
    get,
    names,
    parse_assignments,
    resolve,
    workloads_root,
)

__all__ = [
    "MANIFEST", "ROOT_ENV", "Availability", "BuildResult", "Discovery", "Manifest", "Param",
    "Resolved", "Workload", "all_workloads", "discover", "get", "load_manifest", "names",
    "parse_assignments", "resolve", "workloads_root",
]

