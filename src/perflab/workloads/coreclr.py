"""Where CoreCLR is: the .NET Core runtime the C# workloads run on with ``runtime=coreclr``.

perflab installs it as a Python package (the ``coreclr`` extra: ``dotnetcore2==3.1.23``, a wheel
holding ``dotnetcore2/bin/dotnet`` and the shared framework Microsoft.NETCore.App 3.1.23, no
SDK); Mono's ``mcs`` builds the assemblies and ``dotnet X.exe`` runs them beside
``X.runtimeconfig.json``.  The package is located without being imported (its ``__init__``
is not needed).  ``$PERFLAB_CORECLR_ROOT`` names another folder holding ``dotnet`` and
``shared/Microsoft.NETCore.App/<version>/`` (a .NET install of one's own).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

VERSION = "3.1.23"  # the pinned dotnetcore2 (pyproject.toml's coreclr extra)
PACKAGE = "dotnetcore2"
ROOT_ENV = "PERFLAB_CORECLR_ROOT"
FRAMEWORK = "Microsoft.NETCore.App"
INSTALL_HINT = (f"run `make setup`, or pip install 'perflab[coreclr]' ({PACKAGE}=={VERSION}) "
                f"into perflab's environment, or set {ROOT_ENV} to a .NET folder")


def _package_bin() -> Path | None:
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "bin"


def root() -> Path | None:
    """The folder holding ``dotnet`` and ``shared/Microsoft.NETCore.App/``, or None."""
    env = os.environ.get(ROOT_ENV)
    base = Path(env).expanduser() if env else _package_bin()
    if base is None:
        return None
    exe = base / "dotnet"
    if not (exe.is_file() and os.access(exe, os.X_OK)) or not versions(base):
        return None
    return base.resolve()


def versions(base: Path) -> list[str]:
    """The versions of Microsoft.NETCore.App under ``base`` (e.g. ["3.1.23"])."""
    shared = base / "shared" / FRAMEWORK
    try:
        return sorted(d.name for d in shared.iterdir() if d.is_dir())
    except OSError:
        return []
