#!/usr/bin/env bash
# Installs Mono (C# compiler `mcs` and the `mono` runtime) from Debian's packages, for the
# C# workloads (workloads/*/csharp).  As root it runs apt-get; otherwise, or where apt-get or the
# packages are missing, it prints one line and goes on: the C# workloads are then skipped.
# Packages: mono-mcs (the compiler), mono-runtime (the JIT runtime), libmono-system-core4.0-cil
# (System.Core: LINQ, Tasks helpers) -- all pulled in by mono-mcs; nothing from mono-devel is needed.
set -euo pipefail
have() { command -v "$1" >/dev/null 2>&1; }
if have mcs && have mono; then
  exit 0
fi
pkgs=(mono-mcs mono-runtime)
if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
  echo "perflab: C# workloads skipped: mono not found -- run: sudo apt-get install ${pkgs[*]}" >&2
  exit 0
fi
echo "perflab: installing ${pkgs[*]} from Debian's packages (C# workloads)"
export DEBIAN_FRONTEND=noninteractive
for attempt in 1 2 3 4 5 6; do
  # Another apt may hold the lock (setup running in parallel): wait and retry.
  if apt-get update -qq >/dev/null 2>&1 \
      && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
    exit 0
  fi
  sleep 10
done
echo "perflab: C# workloads skipped: apt-get install ${pkgs[*]} failed -- run it by hand to see why" >&2
exit 0
