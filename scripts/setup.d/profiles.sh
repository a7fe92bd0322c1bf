#!/usr/bin/env bash
# Installs the flame graph generator perflab's profiles use: the `inferno` crate's binaries
# (inferno-flamegraph, inferno-diff-folded), built from crates.io into a project-local directory
# (.perflab/tools, ignored by git).  Idempotent: it does nothing when the pinned version is there.
# Without cargo it names what to do and goes on (profiles still work; only SVGs are missing).
set -euo pipefail
VERSION="0.12.8"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${PERFLAB_TOOLS_DIR:-$here/.perflab/tools}"
stamp="$root/.inferno-$VERSION"
if [ -e "$stamp" ] && [ -x "$root/bin/inferno-flamegraph" ] && [ -x "$root/bin/inferno-diff-folded" ]; then
  exit 0
fi
cargo="$(command -v cargo || true)"
[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"
if [ -z "$cargo" ]; then
  echo "perflab: cargo not found, so no flame graphs -- install Rust (rustup or apt-get install cargo) and rerun make setup" >&2
  exit 0
fi
echo "perflab: building inferno $VERSION into $root (a few minutes, once)"
mkdir -p "$root"
# --locked: the crate's own lockfile, so a new dependency release cannot break the build.
nice "$cargo" install --quiet --locked --root "$root" --version "$VERSION" inferno \
  --bin inferno-flamegraph --bin inferno-diff-folded --bin inferno-collapse-perf
touch "$stamp"
