"""Suites: a TOML file describes a whole study (benchmarks x parameter matrix x configurations);
``perflab run`` (perflab.cli.suites) measures it cell by cell and ``perflab report`` turns a
stored run into tables, plots and an HTML page.  See docs/suites.md.

spec.py reads and checks the file, plan.py expands it into cells and commands, calibrate.py
picks iteration counts, execute.py measures the plan and report.py writes the report.
"""
