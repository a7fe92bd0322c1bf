#!/bin/sh
# Build memory/csharp: generate Methods.cs (4000 methods) with gen_methods.py, a link to the family's
# ../gen_methods.py (so this workload's source hash covers it), then compile; the runtimeconfig
# beside memory.exe lets CoreCLR run the same assembly.
set -e
mkdir -p build
python3 gen_methods.py csharp 4000 build/Methods.cs
mcs -nologo -optimize+ -r:System.dll -out:build/memory.exe Memory.cs build/Methods.cs \
  ../../common/csharp/Perflab.cs
cp ../../common/csharp/netcoreapp3.1.runtimeconfig.json build/memory.runtimeconfig.json
