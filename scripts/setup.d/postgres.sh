#!/usr/bin/env bash
# Installs PostgreSQL's server (Debian's `postgresql` package) for the fleet's shared store and
# its tests, which start a throwaway server with initdb + pg_ctl.  As root it runs apt-get when
# the server programs are missing; otherwise it names the command and goes on.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "perflab: installing PostgreSQL (apt-get install postgresql) for the fleet store"
  export DEBIAN_FRONTEND=noninteractive
  for attempt in 1 2 3 4 5 6; do
    if apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; then exit 0; fi
    echo "perflab: apt-get failed (locked by another install?), retrying in 10 s" >&2
    sleep 10
  done
  echo "perflab: could not install postgresql -- run: apt-get install postgresql" >&2
  exit 1
fi
echo "perflab: PostgreSQL's server is not installed, so the fleet tests are skipped -- run: sudo apt-get install postgresql" >&2
