#!/usr/bin/env bash
# Builds the flame graph generator perflab's profiles use: the `inferno` crate's binaries
# (inferno-flamegraph, inferno-diff-folded, inferno-collapse-perf), from crates.io into perflab's
# cache ($PERFLAB_TOOLS_DIR, else $PERFLAB_CACHE/tools, else ~/.cache/perflab/tools), so every
# checkout on the machine shares one build.  `make flamegraphs` runs it (and `make test`, whose
# profile tests draw SVGs); `make setup` does not: it takes a minute or more, once.
# Idempotent: it does nothing when the pinned version is there.  Without cargo it names what to
# do and goes on (profiles still work; only SVGs are missing).
set -euo pipefail
VERSION="0.12.8"
cache="${PERFLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perflab}"
root="${PERFLAB_TOOLS_DIR:-$cache/tools}"
stamp="$root/.inferno-$VERSION"
if [ -e "$stamp" ] && [ -x "$root/bin/inferno-flamegraph" ] && [ -x "$root/bin/inferno-diff-folded" ]; then
  exit 0
fi
cargo="$(command -v cargo || true)"
[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"
if [ -z "$cargo" ]; then
  echo "perflab: cargo not found, so no flame graphs -- install Rust (rustup or apt-get install cargo) and rerun make flamegraphs" >&2
  exit 0
fi
echo "perflab: building inferno $VERSION into $root (a minute or more, once per machine)"
mkdir -p "$root"
# --locked: the crate's own lockfile, so a new dependency release cannot break the build.
# Not --quiet: cargo's own progress (a bar on a terminal, a "Compiling" line per crate
# otherwise) is the progress shown.
nice "$cargo" install --locked --root "$root" --version "$VERSION" inferno \
  --bin inferno-flamegraph --bin inferno-diff-folded --bin inferno-collapse-perf
touch "$stamp"
echo "perflab: inferno $VERSION is in $root/bin (perflab looks there: no PATH change needed)"
