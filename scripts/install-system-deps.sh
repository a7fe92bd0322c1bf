#!/usr/bin/env bash
# Installs the system tools perflab uses, from Debian's packages.  As root it runs apt-get; as
# anyone else it names the packages to install and goes on (perflab degrades: no perf means
# no perf_event counters via perf tools, no valgrind means no instruction counts).
set -euo pipefail
packages=(linux-perf valgrind hyperfine strace chromium g++ libbenchmark-dev)
missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have perf || missing+=(linux-perf)
have valgrind || missing+=(valgrind)
have hyperfine || missing+=(hyperfine)
have strace || missing+=(strace)
have chromium || missing+=(chromium)
have g++ || missing+=(g++)
# Google Benchmark (its header and library): the gbench import tests build a real benchmark.
[ -e /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && have apt-get; then
  echo "perflab: installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "perflab: missing system packages: ${missing[*]} -- run: sudo apt-get install ${missing[*]} (${packages[*]} are used)" >&2
fi
