#!/bin/sh
# Launcher of memory/csharp: turns --mode=jit|jit-noaot|jit-noopt|interpreter into Mono's flags (they must
# be given before the program), then execs mono with every flag passed on to memory.exe.
dir=$(cd "$(dirname "$0")" && pwd)
mode=jit
for a in "$@"; do
  case "$a" in
    --mode=*) mode=${a#--mode=} ;;
  esac
done
case "$mode" in
  jit) flags="" ;;
  jit-noaot) flags="-O=-aot" ;;
  jit-noopt) flags="-O=-all" ;;
  interpreter) flags="--interpreter" ;;
  *) echo "memory/csharp: --mode=$mode is unknown; choose one of jit, jit-noaot, jit-noopt, interpreter" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
exec mono $flags "$dir/build/memory.exe" "$@"
