#!/bin/sh
# Launcher of memory/java: turns --jit=tiered|c1|interpreter into the JVM's flags (they must be
# given before the class name), then execs the JVM with every flag passed on to Memory.
# Native Memory Tracking (summary) is on in every mode, so the modes pay the same small overhead.
dir=$(cd "$(dirname "$0")" && pwd)
jit=tiered
for a in "$@"; do
  case "$a" in
    --jit=*) jit=${a#--jit=} ;;
  esac
done
case "$jit" in
  tiered) flags="" ;;
  c1) flags="-XX:TieredStopAtLevel=1" ;;
  interpreter) flags="-Xint" ;;
  *) echo "memory/java: --jit=$jit is unknown; choose one of tiered, c1, interpreter" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
# dontinline: every generated method stays a method of its own (compiled, counted) in every mode.
exec java -XX:NativeMemoryTracking=summary -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Methods::m* $flags -cp "$dir/build/classes" Memory "$@"
