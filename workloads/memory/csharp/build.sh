#!/bin/sh
# Build memory/csharp: generate Methods.cs (4000 methods) with Gen, then compile the workload.
set -e
mkdir -p build
mcs -nologo -optimize+ -out:build/gen.exe Gen.cs
mono build/gen.exe 4000 build/Methods.cs
mcs -nologo -optimize+ -r:System.dll -out:build/memory.exe Memory.cs build/Methods.cs \
  ../../common/csharp/Perflab.cs
