#!/bin/sh
# Build memory/java: generate Methods.java (4000 methods) with gen_methods.py, a link to the family's
# ../gen_methods.py (so this workload's source hash covers it), then compile.
set -e
mkdir -p build/src build/classes
python3 gen_methods.py java 4000 build/src/Methods.java
javac -nowarn -d build/classes -sourcepath ../../common/java Memory.java build/src/Methods.java \
  ../../common/java/perflab/Region.java ../../common/java/perflab/Workload.java
