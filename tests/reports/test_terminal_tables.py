"""reports/terminal.py directly: which metrics a table shows, and the stat and compare tables'
cells (rendered by rich, read back cell by cell)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from cli_helpers import verdicts_of
from perflab.format import fmt_value
from perflab.judging import Plan
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports.analysis import Analysis
from perflab.reports.terminal import (
    compare_table,
    compare_tables,
    correction_line,
    metrics_to_show,
    origin_line,
    runs_line,
    stat_table,
)
from perflab.reports.warnings import result_warnings
from perflab.stats import compare_result
from perflab.table import fit

pytestmark = pytest.mark.unit

BASE = [10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 9.9]


def _cfg(name: str, scale: float, baseline: bool = False) -> Configuration:
    cfg = Configuration(name=name, command=[name], is_baseline=baseline)
    for i, x in enumerate(BASE):
        cfg.runs.append(Run(seq=i, values={"task_clock": x * scale, "wall_time": x * scale / 1e3,
                                           "ops": 1000.0, "checksum": 7.0,
                                           "ns_per_op": 10.0 + i}))
    return cfg


def _rs(*configs: Configuration) -> ResultSet:
    rs = ResultSet(kind="compare", configurations=list(configs),
                   settings={"primary_metric": "wall_time", "interleaved": True})
    for m in ("task_clock", "wall_time"):
        rs.metrics[m] = BUILTIN_METRICS[m]
    for m in ("ops", "checksum", "ns_per_op"):
        rs.metrics[m] = MetricInfo(m, "", "workload JSON")
    return rs


def _render(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_primary_first_then_perf_order_then_varying_workload_keys() -> None:
    rs = _rs(_cfg("a", 1.0, baseline=True))
    # ops and checksum never vary within a configuration: bookkeeping, left out.
    assert metrics_to_show(rs) == ["wall_time", "task_clock", "ns_per_op"]
    assert metrics_to_show(rs, ["ops", "nope", "task_clock"]) == ["ops", "task_clock"]


def test_a_requested_family_shows_every_benchmark_of_it() -> None:
    """compare --harness gobench --metric cpu_ns_per_op: each benchmark's metric of the family
    (collectors/harness.py names them "BENCHMARK METRIC")."""
    rs = _rs(_cfg("a", 1.0, baseline=True))
    for name in ("Sum-2 cpu_ns_per_op", "Hash-2 cpu_ns_per_op", "Sum-2 ns_per_op"):
        rs.metrics[name] = MetricInfo(name, "ns", "go test -bench")
    assert metrics_to_show(rs, ["cpu_ns_per_op"]) == ["Sum-2 cpu_ns_per_op",
                                                      "Hash-2 cpu_ns_per_op"]
    assert metrics_to_show(rs, ["ns_per_op", "Sum-2 ns_per_op"]) == ["ns_per_op",
                                                                     "Sum-2 ns_per_op"]


def test_stat_table_cells() -> None:
    rs = _rs(_cfg("a", 1.0, baseline=True))
    cfg = rs.configurations[0]
    text = _render(stat_table(Analysis.of(rs), cfg, ["task_clock"]))
    assert "a: 8 runs" in text
    row = next(line for line in text.splitlines() if line.startswith("│ task_clock"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    unit = rs.metrics["task_clock"].unit
    assert cells[1] == fmt_value(10.0, unit)  # the median of BASE
    assert cells[4] == fmt_value(9.8, unit) and cells[5] == fmt_value(10.2, unit)


def test_compare_table_verdicts_and_stacked_form() -> None:
    rs = _rs(_cfg("a", 1.0, baseline=True), _cfg("b", 1.5), _cfg("c", 1.0))
    comps = compare_result(rs, ["wall_time", "task_clock"])
    table = compare_table(Analysis.of(rs, comps), ["wall_time", "task_clock"], rs.cells()[0])
    text = _render(table)
    assert "(baseline)" in text  # under the baseline's name
    verdicts = verdicts_of(text)
    assert verdicts["wall_time"] == "equivalent"  # the last configuration's cell: c
    by = {(c.candidate, c.metric): c.verdict for c in comps}
    assert by[("b", "wall_time")] == "slower" and by[("c", "wall_time")] == "equivalent"
    # At 40 columns the same cells are stacked one per line, none cut to "…".
    narrow = Console(width=40, record=True, file=io.StringIO())
    narrow.print(fit(table, narrow))
    stacked = narrow.export_text()
    assert "…" not in stacked
    assert "  verdict: slower" in stacked and "  verdict: equivalent" in stacked


def test_a_three_way_compare_is_one_block_per_candidate_where_it_would_wrap() -> None:
    names = ("eh/cpp depth=10", "eh/rust depth=10", "eh/go depth=10")
    rs = _rs(_cfg(names[0], 1.0, baseline=True), _cfg(names[1], 1.5), _cfg(names[2], 0.5))
    a = Analysis.of(rs, compare_result(rs, ["wall_time", "task_clock"]))
    metrics = ["wall_time", "task_clock"]
    wide = compare_tables(a, metrics, "{}", 250)
    assert len(wide) == 1 and wide[0].natural_width() <= 250  # side by side where it fits
    blocks = compare_tables(a, metrics, "{}", 120)
    assert [t.title for t in blocks] == [f"{names[1]} vs {names[0]}", f"{names[2]} vs {names[0]}"]
    for table, verdict in zip(blocks, ("slower", "faster"), strict=True):
        text = _render(table, 120)
        assert max(map(len, text.splitlines())) <= 120
        rows = [line for line in text.splitlines() if line.startswith("│")]
        # one line a row: every row starts with its metric, each change with its CI
        assert [r.split("│")[1].strip() for r in rows] == metrics, text
        assert all(verdict in r and "% [" in r for r in rows), text
        assert "(baseline)" in text


def test_a_table_that_would_break_its_words_at_80_columns_is_stacked() -> None:
    """A suite's comparison table in an 80-column terminal squeezed every column to about 4
    characters ("slowe / r / (regr / essio / n)", issue 25): stacked instead; a table that
    fits stays a table."""
    from rich.table import Table

    table = Table(title="ns_per_op: each configuration against the baseline")
    for col in ("cell", "configuration", "base", "diff", "ratio", "change", "p", "verdict"):
        table.add_column(col)
    table.add_row("depth=100 threads=2 kind=hardware", "cpp-coroutines-async",
                  "1,234,567 ns [1,200,000, 1,300,000]", "2,345,678 ns [2,300,000, 2,400,000]",
                  "1.90 [1.85, 1.95]", "+90.0%", "<1e-16", "slower (regression)")
    eighty = Console(width=80, record=True, file=io.StringIO())
    eighty.print(fit(table, eighty))
    text = eighty.export_text()
    assert "  verdict: slower (regression)" in text
    assert "  configuration: cpp-coroutines-async" in text
    wide = Console(width=240, record=True, file=io.StringIO())
    assert fit(table, wide) is table


def test_correction_line_names_estimator_band_and_family() -> None:
    rs = _rs(_cfg("a", 1.0, baseline=True), _cfg("b", 1.5))
    comps = compare_result(rs, ["wall_time"])
    line = correction_line(Analysis.of(rs, comps, Plan(looks=3)), "wall_time")
    assert line.startswith("verdicts: ")
    assert "per-round ratios" in line
    assert "over 1 comparison, alpha split over 3 looks" in line


def test_outlier_warning_names_the_estimator_the_verdicts_use() -> None:
    def rs_with(estimator: str | None) -> ResultSet:
        settings = {"primary_metric": "wall_time"}
        rs = ResultSet(kind="stat", metrics={"wall_time": BUILTIN_METRICS["wall_time"]},
                       settings={**settings, **({"comparison": {"estimator": estimator}}
                                                if estimator else {})})
        cfg = Configuration(name="A", command=["x"])
        cfg.runs = [Run(seq=i, values={"wall_time": v})
                    for i, v in enumerate([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 5.0])]
        rs.configurations.append(cfg)
        return rs

    (w,) = [w for w in result_warnings(Analysis.of(rs_with(None))) if "outlier" in w]
    assert "1 statistical outlier(s)" in w and "20% trimmed mean the verdicts use is robust" in w
    (w,) = [w for w in result_warnings(Analysis.of(rs_with("mean"))) if "outlier" in w]
    assert "the mean the verdicts use is not robust" in w


def test_too_few_runs_names_each_configuration_with_its_count() -> None:
    rs = ResultSet(kind="compare", metrics={"wall_time": BUILTIN_METRICS["wall_time"]},
                   settings={"primary_metric": "wall_time"})
    base = Configuration(name="base", command=["x"], is_baseline=True)
    base.runs = [Run(seq=i, values={"wall_time": 1.0 + i / 100}) for i in range(4)]
    cand = Configuration(name="cand", command=["y"])  # every run failed: none measured
    cand.runs = [Run(seq=10 + i, values={}, status="failed") for i in range(4)]
    rs.configurations += [base, cand]
    (w,) = [w for w in result_warnings(Analysis.of(rs)) if "too few runs" in w]
    assert w.startswith("too few runs for a verdict (base 4, cand 0)"), w
    assert "0 run(s) per configuration" not in w


def test_the_runs_line_counts_warm_up_and_failed_runs_apart_from_the_measured() -> None:
    runs = ([Run(0, {"wall_time": 1.0}, warmup=True)]
            + [Run(i, {"wall_time": 1.0}) for i in range(1, 5)]
            + [Run(5, {}, status="failed", exit_code=1), Run(6, {}, status="timeout")])
    cfg = Configuration("a", ["a"], runs=runs)
    assert runs_line(cfg, 2.5).startswith("4 runs (and 1 warm-up, 2 failed) in ")
    assert runs_line(Configuration("b", ["b"], runs=runs[1:5]), 1.0).startswith("4 runs in ")


def test_the_origin_line_names_the_import_or_the_machine() -> None:
    imported = ResultSet(kind="import", commit="abc123")
    imported.settings.import_format = "pyperf"
    imported.settings.file = "bench.json"
    assert origin_line(imported) == "imported from pyperf (bench.json), commit abc123"
    measured = ResultSet(kind="stat")
    measured.fingerprint.cpu_model, measured.fingerprint.cpu_count = "Some CPU", 4
    line = origin_line(measured)
    assert line.startswith("Some CPU x4, kernel ") and line.endswith(", commit -")
    assert "None" not in line
