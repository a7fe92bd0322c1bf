#!/bin/sh
# Launcher of the C# workloads: run.sh CORECLR_DIR PROGRAM.exe [--name=value ...]
# The one assembly mcs built runs on either runtime: --runtime=mono (default) execs
# `mono [$PERFLAB_MONO_FLAGS] PROGRAM.exe`, --runtime=coreclr execs CORECLR_DIR/dotnet PROGRAM.exe
# (PROGRAM.runtimeconfig.json beside it names the framework, netcoreapp3.1).  CoreCLR's knobs
# become its COMPlus_ variables ("default" sets nothing):
#   --tiered_compilation=on|off      COMPlus_TieredCompilation
#   --quick_jit_for_loops=on|off     COMPlus_TC_QuickJitForLoops
#   --ready_to_run=on|off            COMPlus_ReadyToRun
#   --gc_server=on|off               COMPlus_gcServer
# --runtime and the knobs are taken off the command line; every other flag goes to the program.
# perflab refuses a knob on Mono and runtime=coreclr without CoreCLR before it gets here.
set -e
coreclr=$1
prog=$2
shift 2
runtime=mono
knob() {  # knob VAR VALUE
  case "$2" in
    default) ;;
    on) export "$1=1" ;;
    off) export "$1=0" ;;
    *) echo "$(basename "$prog" .exe): --$3=$2 is unknown; choose one of default, on, off" >&2; exit 2 ;;
  esac
}
n=$#
while [ "$n" -gt 0 ]; do
  a=$1
  shift
  n=$((n - 1))
  case "$a" in
    --runtime=*) runtime=${a#*=} ;;
    --tiered_compilation=*) knob COMPlus_TieredCompilation "${a#*=}" tiered_compilation ;;
    --quick_jit_for_loops=*) knob COMPlus_TC_QuickJitForLoops "${a#*=}" quick_jit_for_loops ;;
    --ready_to_run=*) knob COMPlus_ReadyToRun "${a#*=}" ready_to_run ;;
    --gc_server=*) knob COMPlus_gcServer "${a#*=}" gc_server ;;
    *) set -- "$@" "$a" ;;
  esac
done
case "$runtime" in
  mono)
    # shellcheck disable=SC2086
    exec mono ${PERFLAB_MONO_FLAGS:-} "$prog" "$@" ;;
  coreclr)
    if [ ! -x "$coreclr/dotnet" ]; then
      echo "$(basename "$prog" .exe): runtime=coreclr but CoreCLR is not installed -- run make setup (pip install 'perflab[coreclr]')" >&2
      exit 2
    fi
    export DOTNET_ROOT="$coreclr"
    # No ICU on the machines perflab targets: without this 3.1 aborts in CultureInfo.
    export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT="${DOTNET_SYSTEM_GLOBALIZATION_INVARIANT:-1}"
    export DOTNET_CLI_TELEMETRY_OPTOUT=1
    exec "$coreclr/dotnet" "$prog" "$@" ;;
  *) echo "$(basename "$prog" .exe): --runtime=$runtime is unknown; choose one of mono, coreclr" >&2; exit 2 ;;
esac
