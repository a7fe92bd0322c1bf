#!/usr/bin/env bash
# Installs CoreCLR (.NET Core 3.1.23, a runtime without SDK) for the C# workloads' runtime=coreclr:
# pyproject.toml's pinned `coreclr` extra (PyPI's dotnetcore2==3.1.23 wheel, x86_64 Linux) into
# perflab's virtualenv, where src/perflab/workloads/coreclr.py finds it.  Idempotent: nothing to
# do when it is there.  Where it cannot be installed (no virtualenv yet, another architecture, no
# registry) it prints one line and goes on, as mono.sh does: runtime=coreclr is then refused with
# one line naming the fix, and the tests that need it are skipped with one line.
set -euo pipefail
venv="${PERFLAB_VENV:-.venv}"
[ -x "$venv/bin/python" ] || exit 0
found='import sys; from perflab.workloads import coreclr; sys.exit(0 if coreclr.root() else 1)'
if "$venv/bin/python" -c "$found" 2>/dev/null; then
  exit 0
fi
echo "perflab: installing CoreCLR 3.1.23 (pip install -e '.[coreclr]': dotnetcore2, 31 MB) for runtime=coreclr"
if ! "$venv/bin/pip" install -q -e '.[coreclr]' >/dev/null 2>&1 || ! "$venv/bin/python" -c "$found"; then
  echo "perflab: runtime=coreclr unavailable: pip install -e '.[coreclr]' failed (dotnetcore2==3.1.23 is x86_64 Linux only) -- run it by hand to see why" >&2
fi
exit 0
