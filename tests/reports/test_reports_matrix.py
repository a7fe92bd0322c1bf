"""Report tables from a stored run with known samples: medians, CIs, ratios, verdicts (with the
correction across the whole run), Markdown and CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from perflab.format import fmt_interval, fmt_seconds, fmt_value
from perflab.metrics import BUILTIN_METRICS, MetricInfo
from perflab.model import Configuration, ResultSet, Run
from perflab.reports import matrix
from perflab.reports.analysis import Analysis
from perflab.reports.warnings import suite_warnings
from perflab.stats import compare_result
from perflab.storage import Store

pytestmark = pytest.mark.unit

SUITE_TEXT = '[suite]\nname = "known"\nbaseline = "base"\n# the suite text itself\n'

# candidate -> factor on the baseline's times; "noisy" gets a wide spread (inconclusive).
FACTORS = {"base": 1.0, "slow": 2.0, "same": 1.0, "noisy": 1.03}


def expected_base(depth: int, threads: int, kind: str) -> float:
    return 1000.0 * (1 + depth / 10) * (1.5 if threads == 2 else 1.0) * (
        3.0 if kind == "hardware" else 1.0)


def make_result(n: int = 20, seed: int = 7) -> ResultSet:
    """A suite-like result: depth x threads x kind, four configurations, known medians."""
    rng = np.random.default_rng(seed)
    rs = ResultSet(kind="suite", label="known", created_at=1_700_000_000.0, status="complete",
                   fingerprint={"hostname": "testhost", "cpu_model": "Test CPU", "cpu_count": 2,
                                "kernel": "6.0-test"},
                   metrics={"ns_per_op": MetricInfo("ns_per_op", "ns", "workload"),
                            "wall_time": BUILTIN_METRICS["wall_time"]},
                   settings={"interleaved": True, "suite": {
                       "name": "known", "text": SUITE_TEXT, "baseline": "base",
                       "threshold": 0.05, "correction": "holm",
                       "metrics": ["ns_per_op", "wall_time"], "primary": "ns_per_op",
                       "report": {"x": "depth", "metrics": ["ns_per_op"],
                                  "kinds": {"param": "kind", "a": "hardware", "b": "software"}},
                       "skipped": ["skipped configuration 'ghost': not registered"],
                       "done": [], "superseded": []}})
    seq = 0
    for depth in (0, 10, 100):
        for threads in (1, 2):
            for kind in ("software", "hardware"):
                params = {"depth": depth, "threads": threads, "kind": kind}
                base = expected_base(depth, threads, kind)
                for name, f in FACTORS.items():
                    cfg = Configuration(name=name, command=["true"], benchmark="b/known",
                                        params=params, is_baseline=(name == "base"))
                    spread = 0.25 if name == "noisy" else 0.003
                    for _ in range(n):
                        v = base * f * (1 + rng.uniform(-spread, spread))
                        cfg.runs.append(Run(seq=seq, values={"ns_per_op": v,
                                                             "wall_time": v * 1e-6}))
                        seq += 1
                    rs.configurations.append(cfg)
    return rs


def stored(tmp_path: Path) -> ResultSet:
    store = Store(tmp_path / "known.sqlite")
    rid = store.save(make_result())
    return store.load(rid)


def test_medians_and_comparisons(tmp_path: Path) -> None:
    rs = stored(tmp_path)
    assert len(rs.cells()) == 12
    rows = matrix.medians_rows(Analysis.of(rs), "ns_per_op")
    assert len(rows) == 12 and list(rows[0]) == ["cell", "base", "slow", "same", "noisy"]
    first = rows[0]
    assert first["cell"] == "depth=0 threads=1 kind=software"
    # 1000 ns +-0.3%: the median prints as about 1000 with a CI around it, unit once.
    assert first["base"].startswith(("999 ", "1,000 ", "1,001 ")) and first["base"].endswith(" ns")
    assert "[" in first["base"]
    big = rows[-1]  # depth=100 threads=2 hardware: 1000 * 11 * 1.5 * 3 = 49,500 ns = 49.5 us
    assert big["base"].startswith("49.") and big["base"].endswith(" µs")

    comps = compare_result(rs, ["ns_per_op"], threshold=0.05, correction="holm")
    assert len(comps) == 12 * 3
    by = {(json.loads(c.cell)["depth"], json.loads(c.cell)["threads"],
           json.loads(c.cell)["kind"], c.candidate): c for c in comps}
    for key, c in by.items():
        name = key[3]
        if name == "slow":
            assert abs(c.ratio - 2.0) < 0.02 and c.verdict == "slower", c
        elif name == "same":
            assert abs(c.ratio - 1.0) < 0.01 and c.verdict == "equivalent", c
    assert any(c.verdict == "inconclusive" for c in comps if c.candidate == "noisy")
    crow = matrix.comparison_rows(Analysis.of(rs, comps), "ns_per_op")
    assert list(crow[0]) == ["cell", "configuration", "base", "diff", "delta", "ratio", "change",
                             "p", "verdict"]
    slow = next(r for r in crow if r["configuration"] == "slow")
    assert slow["ratio"].startswith(("1.99", "2.00", "2.01"))
    assert slow["verdict"] == "slower (regression)"
    assert slow["change"].startswith("+")
    # The absolute change in the metric's unit: (ratio - 1) x the baseline's centre (the
    # estimator's: the 20% trimmed mean), here about one baseline's worth (ratio 2).
    sc = [c for c in comps if c.metric == "ns_per_op"][crow.index(slow)]
    assert sc.candidate == "slow"
    base = Analysis.of(rs).summaries("ns_per_op")[(sc.cell, sc.baseline)].median
    assert abs(sc.base_center / base - 1) < 0.01
    assert slow["delta"] == "+" + matrix.fmt_value((sc.ratio - 1) * sc.base_center, "ns")


def test_markdown_and_csv(tmp_path: Path) -> None:
    rs = stored(tmp_path)
    comps = compare_result(rs, ["ns_per_op", "wall_time"], threshold=0.05)
    rows = matrix.comparison_rows(Analysis.of(rs, comps), "ns_per_op")
    md = matrix.table(rows, "ns_per_op").to_markdown()
    lines = [x for x in md.splitlines() if x.startswith("|")]
    assert len(lines) == 2 + 36
    assert lines[0].startswith("| cell | configuration | base | diff | delta | ratio")
    assert "slower" in md and "equivalent" in md

    raw = matrix.raw_rows(Analysis.of(rs, comps), ["ns_per_op", "wall_time"])
    parsed = list(csv.DictReader(io.StringIO(matrix.to_csv(raw))))
    assert len(parsed) == 2 * 12 * 4
    row = next(r for r in parsed if r["metric"] == "ns_per_op" and r["configuration"] == "slow"
               and r["depth"] == "10" and r["threads"] == "1" and r["kind"] == "software")
    assert abs(float(row["median"]) - 2 * expected_base(10, 1, "software")) < 0.01 * 4000
    assert row["verdict"] == "slower" and abs(float(row["ratio"]) - 2.0) < 0.02
    base = next(r for r in parsed if r["configuration"] == "base")
    assert base["baseline"] == "True" and base["verdict"] == ""


def test_csv_keeps_a_parameter_named_like_a_column() -> None:
    """A matrix parameter `n` (or `median`) is not overwritten by a column of perflab's."""
    rs = ResultSet(kind="suite", metrics={"wall_time": BUILTIN_METRICS["wall_time"]})
    for n in (10, 20):
        c = Configuration(name="A", command=["x"], params={"n": n, "median": "p"},
                          cell=json.dumps({"median": "p", "n": n}, sort_keys=True),
                          is_baseline=True)
        c.runs = [Run(seq=i, values={"wall_time": 0.001 * n}) for i in range(3)]
        rs.configurations.append(c)
    parsed = list(csv.DictReader(io.StringIO(matrix.to_csv(
        matrix.raw_rows(Analysis.of(rs), ["wall_time"])))))
    assert [r["n"] for r in parsed] == ["10", "20"]  # the parameter, not the run count
    assert [r["param.median"] for r in parsed] == ["p", "p"]  # named like a column of ours
    assert [r["runs"] for r in parsed] == ["3", "3"]


def test_warnings_name_noise_inconclusive_and_skips(tmp_path: Path) -> None:
    rs = stored(tmp_path)
    comps = compare_result(rs, ["ns_per_op"], threshold=0.05)
    warns = suite_warnings(Analysis.of(rs, comps), "ns_per_op")
    kinds = {w.kind for w in warns}
    assert {"noisy", "inconclusive", "skipped"} <= kinds
    noisy = [w.text for w in warns if w.kind == "noisy"]
    assert noisy and all("/ noisy:" in t for t in noisy)  # only the noisy configuration
    inc = [w.text for w in warns if w.kind == "inconclusive"]
    assert any("runs per configuration would decide it" in t for t in inc)


def test_suite_view_drops_superseded(tmp_path: Path) -> None:
    rs = stored(tmp_path)
    drop = [c.id for c in rs.configurations[:4]]
    rs.settings.suite.superseded = drop
    view = matrix.suite_view(rs)
    assert len(view.configurations) == len(rs.configurations) - 4
    assert all(c.id not in drop for c in view.configurations)


def test_value_formatting() -> None:
    # one formatter (perflab/format.py) for every table: compare, stat, report, history, HTML
    assert matrix.fmt_value is fmt_value
    assert fmt_value(0.0123, "s") == "12.3 ms"
    assert fmt_value(2.5e-6, "s") == "2,500 ns"  # below 10 µs: ns, as per-op costs are read
    assert fmt_value(123456.0, "KiB") == "120.6 MiB"
    assert fmt_value(19500.0, "ns") == "19.5 µs"
    assert fmt_value(32012.0, "ns") == fmt_value(32.012e-6, "s") == "32.01 µs"
    assert fmt_value(14122994.0, "count") == "14,122,994"
    assert fmt_interval(14122994.0, 14122994.0, 14122994.0, "count", exact=True) == \
        "14,122,994 (exact)"
    assert fmt_interval(4.3e-3, 4.2e-3, 4.4e-3, "s") == "4.3 [4.2, 4.4] ms"
    assert fmt_seconds(87.6) == "87.6 s"
    assert matrix.fmt_value(float("nan"), "ns") == "-"


def test_report_and_results_show_judge_with_the_stored_plan(tmp_path: Path) -> None:
    """Issue 9 defect 5: `results show` used a ±1% band while `report` used the suite's.  Both
    now read judging.Plan.of(rs): the suite's threshold (±5% here) and correction."""
    from perflab.judging import Plan
    from perflab.reports.report import build_report

    rs = make_result()
    plan = Plan.of(rs)
    assert (plan.threshold, plan.correction) == (0.05, "holm")
    shown = compare_result(rs, ["ns_per_op"], plan=plan)  # what `results show` computes
    rep = build_report(rs, tmp_path / "r", metrics=["ns_per_op"], plots=False)
    reported = [c for c in rep.analysis.comparisons if c.metric == "ns_per_op"]
    key = [(c.cell, c.candidate, c.verdict, c.threshold) for c in shown]
    assert key == [(c.cell, c.candidate, c.verdict, c.threshold) for c in reported]
    assert {c.threshold for c in reported} == {0.05}


def test_report_families_follow_the_stored_primary_and_name_differing_results(
        tmp_path: Path) -> None:
    # The verdicts were decided on wall_time (stored primary) while the suite lists ns_per_op
    # first: wall_time is the Holm family and is always reported, ns_per_op is secondary (BH).
    from perflab.reports.report import build_report

    rs = make_result()
    rs.settings.primary_metric = "wall_time"
    rs.settings.suite.metrics = ["ns_per_op"]
    rs.metrics["checksum"] = MetricInfo("checksum", "", "workload", direction="none")
    for cfg in rs.configurations:
        for r in cfg.runs:
            r.values["checksum"] = 7.0
    odd = next(c for c in rs.configurations if c.name == "slow")
    for r in odd.runs:
        r.values["checksum"] = 8.0  # computed something else in every cell
    con = Console(record=True, width=250, color_system=None)
    rep = build_report(rs, tmp_path / "r", console=con, plots=False)
    assert rep.metrics[0] == "wall_time" and "ns_per_op" in rep.metrics
    md = rep.markdown
    assert "wall_time: each configuration" in md and "adjusted (holm)" in md
    # Time cells carry their unit ("1.2 ms"): no "(s)" over them (issue 25).
    assert "wall_time: median [95% CI] per configuration" in md and "wall_time (s)" not in md
    assert "adjusted (bh, a secondary metric) across the" in md.split("ns_per_op: each")[1]
    out = con.export_text()
    assert out.startswith("wall_time: ratio to")  # the terminal shows the deciding metric
    assert re.search(r"^different results: \d+ cells", out, re.M)  # counted; each in the HTML


def test_suite_terminal_table_colours_verdicts_by_the_terminal_rule(tmp_path: Path) -> None:
    """The suite's terminal matrix colours each verdict as stat and compare do
    (terminal.verdict_style: red for a regression, green for an improvement), and marks it."""
    from perflab.reports.study import ratio_matrix

    rs = make_result()
    for cfg in rs.configurations:
        if cfg.name == "same":  # twice as fast: an improvement beside slow's regression
            for r in cfg.runs:
                r.values = {k: v / 2 for k, v in r.values.items()}
    t = ratio_matrix(Analysis.judge(rs, ["ns_per_op"]), "ns_per_op")
    assert t is not None and [c.header for c in t.columns][3:] == ["slow", "same", "noisy"]
    words = {"▲": "bold red", "▼": "bold green", "=": "cyan", "?": "yellow"}
    cells = [c for row in t.rows for c in row[3:]]
    assert len(cells) == 36
    for c in cells:
        assert c.style == words[c.text[-1]], c
    assert {"bold red", "bold green"} <= {c.style for c in cells}


def test_p_reads_as_a_bound_never_as_zero() -> None:
    from perflab.format import fmt_p

    assert fmt_p(0.0) == "<1e-16" and fmt_p(3e-20) == "<1e-16"
    # Never rounded up onto the 0.05 line it is judged by (0.0499999 read "0.05").
    assert fmt_p(0.0499999) == "0.0499999" and fmt_p(0.04996) == "0.04996"
    assert fmt_p(0.0123456) == "0.0123" and fmt_p(1.0) == "1"


def test_reports_name_each_command_and_the_busy_machine() -> None:
    """A report of `compare ./spin 2000000 ./spin 6000000` named neither command (grep found
    nothing in the HTML, Markdown or CSV), and the busy-machine warning was terminal-only."""
    from perflab.reports.matrix import configuration_rows, raw_rows
    from perflab.reports.warnings import suite_warnings

    rs = ResultSet(kind="compare", fingerprint={"cpu_count": 2},
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]})
    for name, n in (("A", 2_000_000), ("B", 6_000_000)):
        cfg = Configuration(name=name, command=["./spin", str(n)], is_baseline=name == "A",
                            cell="{}")
        cfg.runs = [Run(seq=i, values={"wall_time": 0.01 * n / 1e6}, load1=6.5)
                    for i in range(6)]
        rs.configurations.append(cfg)
    rows = configuration_rows(rs)
    assert [r["command"] for r in rows] == ["./spin 2000000", "./spin 6000000"]
    assert rows[0]["configuration"] == "A (baseline)"
    assert {r["command"] for r in raw_rows(Analysis.of(rs), ["wall_time"])} == {
        "./spin 2000000", "./spin 6000000"}
    warns = suite_warnings(Analysis.of(rs), "wall_time")
    assert any(w.kind == "machine" and "load average up to 6.50 on 2 CPUs" in w.text
               for w in warns)
