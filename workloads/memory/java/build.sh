#!/bin/sh
# Build memory/java: generate Methods.java (4000 methods) with Gen, then compile the workload.
set -e
mkdir -p build/gen build/src build/classes
javac -nowarn -d build/gen Gen.java
java -cp build/gen Gen 4000 build/src
javac -nowarn -d build/classes -sourcepath ../../common/java Memory.java build/src/Methods.java \
  ../../common/java/perflab/Region.java ../../common/java/perflab/Workload.java
