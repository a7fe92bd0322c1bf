"""The table of contents of the command line: every verb, the cli module that adds it, its help.

It imports nothing: perflab.cli's entry point and root.py read it, and
``perflab --help`` lists it without loading a verb's stage.
"""

from __future__ import annotations

# verb -> (the cli module whose register(app) adds it, its one-line help).  The module is
# imported only when its verb runs (or its own --help is asked for), so `perflab --help` never
# loads numpy, scipy, matplotlib or SQLAlchemy, and `perflab --version` loads no typer either.
# tests/core/test_cli_startup.py checks this table against the verbs the modules really
# register, so the two cannot drift apart.
VERBS: dict[str, tuple[str, str]] = {
    "stat": ("perflab.cli.measure", "Run a command (or a workload) repeatedly and report every "
             "metric, like perf stat -r."),
    "compare": ("perflab.cli.measure", "Compare commands or workloads side by side: % change with "
                "CI and a verdict per metric."),
    "run": ("perflab.cli.suites", "Run a suite: plan the matrix, measure cell by cell "
            "(configurations interleaved within a cell), save every run as it completes, then "
            "report."),
    "report": ("perflab.cli.suites", "Report a stored run: terminal tables (verdicts with false "
               "discoveries controlled across the run), plots, a self-contained HTML page, "
               "Markdown and CSV."),
    "history": ("perflab.cli.history", "The series of BENCHMARK in commit order: a table and a "
                "plot with change points."),
    "detect": ("perflab.cli.history", "Change points in every stored series (a change-point search "
               "+ t-test, as Apache Otava)."),
    "bisect": ("perflab.cli.history", "Find the commit that made a benchmark slower: git bisect "
               "with A/B verdicts."),
    "dashboard": ("perflab.cli.history", "A static HTML dashboard (one page per series, change "
                  "points marked); no server needed."),
    "import": ("perflab.cli.history", "Store the results other tools wrote (kind \"import\"): "
               "docs/imports.md lists them."),
    "prune": ("perflab.cli.history", "Remove old result sets, keeping each series' newest "
              "points: a dry run unless --yes."),
    "results": ("perflab.cli.measure", "Stored results: list and show."),
    "workloads": ("perflab.cli.workloads", "List, build and inspect the benchmark workloads."),
    "profile": ("perflab.cli.profile", "Profile a command or a workload with perf record; show, "
                "list and diff stored profiles."),
    "fleet": ("perflab.cli.fleet", "A benchmark fleet: one PostgreSQL store and job queue, "
              "many benchmark hosts (see docs/fleet.md)."),
    "worker": ("perflab.cli.fleet", "Serve this machine's queue: run the jobs addressed to it "
               "one at a time, writing every run to the fleet's store as it finishes."),
}
