#!/bin/sh
# Launcher of memory/csharp: run.sh CORECLR_DIR [--name=value ...].  On Mono it turns
# --mode=jit|jit-noaot|jit-noopt|interpreter into Mono's flags (given before the program, through
# PERFLAB_MONO_FLAGS); on CoreCLR it asks the runtime for its perf map (COMPlus_PerfMapEnabled=1,
# unless set already), from which the program counts the methods jitted by tier and the stubs,
# and which it removes when this launcher asked for it.  Then the C# launcher
# (workloads/common/csharp/run.sh) runs memory.exe on the runtime --runtime names, every flag
# passed on.
dir=$(cd "$(dirname "$0")" && pwd)
coreclr=$1
shift
mode=jit
runtime=mono
for a in "$@"; do
  case "$a" in
    --mode=*) mode=${a#--mode=} ;;
    --runtime=*) runtime=${a#--runtime=} ;;
  esac
done
case "$mode" in
  jit) flags="" ;;
  jit-noaot) flags="-O=-aot" ;;
  jit-noopt) flags="-O=-all" ;;
  interpreter) flags="--interpreter" ;;
  *) echo "memory/csharp: --mode=$mode is unknown; choose one of jit, jit-noaot, jit-noopt, interpreter" >&2; exit 2 ;;
esac
export PERFLAB_MONO_FLAGS="$flags"
if [ "$runtime" = coreclr ] && [ -z "${COMPlus_PerfMapEnabled:-}" ]; then
  export COMPlus_PerfMapEnabled=1 PERFLAB_REMOVE_PERF_MAP=1
fi
exec sh "$dir/../../common/csharp/run.sh" "$coreclr" "$dir/build/memory.exe" "$@"
