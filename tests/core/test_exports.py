"""Exports in other tools' formats, read back by those tools (pyperf) or checked against what
the tool itself writes (hyperfine), and the exporter registry."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run_cli
from perflab.reports.export import EXPORTERS
from perflab.storage import Store

pytestmark = pytest.mark.system


@pytest.mark.unit
def test_every_export_option_is_a_registry_entry() -> None:
    from perflab.cli import stage_group
    group = stage_group("perflab.cli.measure")
    verbs = [group.commands["stat"], group.commands["compare"],
             group.commands["results"].commands["show"]]  # type: ignore[attr-defined]
    for verb in verbs:
        options = {o for p in verb.params for o in p.opts if o.startswith("--export")}
        assert options == {e.option for e in EXPORTERS.values()}, verb.name


def test_pyperf_compare_to_reads_perflab_exports(spin: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyperf")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    # An old and a new build of one program: the same name in two directories (pyperf
    # compares benchmarks of the same name), the new one doing 3x the work.
    for out, n in ((a, "200000"), (b, "600000")):
        build = tmp_path / out.stem
        build.mkdir()
        (build / "prog").write_text(f"#!/bin/sh\nexec {spin} {n}\n")
        (build / "prog").chmod(0o755)
        monkeypatch.chdir(build)
        code, _, err = run_cli(["stat", "-r", "6", "--metric", "task_clock", "--export-pyperf",
                                str(out), "--", "./prog"], capsys)
        assert code == 0, err
    doc = json.loads(a.read_text())
    (bench,) = doc["benchmarks"]
    assert bench["metadata"]["unit"] == "second" and len(bench["runs"]) == 6
    assert bench["metadata"]["perflab_metric"] == "task_clock"
    rs = Store().load(1)
    want = rs.configurations[0].samples("task_clock")  # s, as pyperf
    assert [r["values"][0] for r in bench["runs"]] == pytest.approx(want)
    proc = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", str(a), str(b)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "slower" in proc.stdout  # 3x the work: pyperf sees it in perflab's samples
    # And `perflab import` reads the export back as the metric it holds, not wall_time.
    from perflab.imports import import_file
    back = import_file(a, None)
    assert set(back.metrics) == {"task_clock"} and back.metrics["task_clock"].unit == "s"
    assert back.configurations[0].samples("task_clock") == pytest.approx(want, rel=1e-12)


@pytest.mark.skipif(shutil.which("hyperfine") is None, reason="needs hyperfine")
def test_hyperfine_export_has_hyperfines_own_layout(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    theirs, ours = tmp_path / "hf.json", tmp_path / "ours.json"
    subprocess.run(["hyperfine", "-N", "--runs", "3", "--style", "none", "--export-json",
                    str(theirs), "true"], check=True, capture_output=True)
    code, _, err = run_cli(["stat", "-r", "6", "--export-hyperfine", str(ours), "--", "true"],
                           capsys)
    assert code == 0, err
    (h,) = json.loads(theirs.read_text())["results"]
    (p,) = json.loads(ours.read_text())["results"]
    assert set(h) - {"parameters"} <= set(p)  # every key hyperfine writes
    rs = Store().load(1)
    assert p["times"] == rs.configurations[0].samples("wall_time")
    assert p["exit_codes"] == [0] * 6 and p["command"] == "true"
    # And perflab imports it back as hyperfine's (the same times).
    assert run_cli(["import", str(ours)], capsys)[0] == 0
    assert Store().load(2).configurations[0].samples("wall_time") == p["times"]


def _two_configs() -> tuple[object, list[object], object]:
    from perflab.judging import Plan
    from perflab.metrics import BUILTIN_METRICS
    from perflab.model import Configuration, ResultSet, Run
    from perflab.stats import compare_result

    rs = ResultSet(kind="compare", status="complete", settings={"interleaved": True,
                                                                "primary_metric": "wall_time"},
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]})
    for name, f in (("a|1", 1.0), ("b", 1.5)):
        cfg = Configuration(name=name, command=["x"], is_baseline=f == 1.0)
        cfg.runs = [Run(seq=i, values={"wall_time": f * (1 + 0.001 * i)}) for i in range(8)]
        rs.configurations.append(cfg)
    return rs, compare_result(rs, ["wall_time"]), Plan.of(rs)


@pytest.mark.unit
def test_each_format_is_a_module_with_render() -> None:
    # one module per format, each reached through its registry entry (no CLI in between)
    import csv
    import io

    from perflab.reports.analysis import Analysis

    rs, comps, plan = _two_configs()
    a = Analysis.of(rs, comps, plan)  # type: ignore[arg-type]
    out = {name: e.render(a) for name, e in EXPORTERS.items()}
    doc = json.loads(out["json"])
    assert doc["schema"] == "perflab-result/1"
    assert [c["name"] for c in doc["configurations"]] == ["a|1", "b"]
    assert doc["configurations"][1]["metrics"]["wall_time"]["samples"][0] == 1.5
    (cmp,) = doc["comparisons"]
    assert cmp["verdict"] == "slower" and cmp["ratio"] > 1.4
    rows = list(csv.DictReader(io.StringIO(out["csv"])))
    assert [r["configuration"] for r in rows] == ["a|1", "b"]
    assert rows[1]["verdict"] == "slower" and rows[0]["verdict"] == ""
    assert "a\\|1 (baseline)" in out["markdown"]  # a pipe cannot split the table
    assert [r["command"] for r in json.loads(out["hyperfine"])["results"]] == ["a|1", "b"]
    assert len(json.loads(out["pyperf"])["benchmarks"]) == 2


def test_an_export_to_dash_is_standard_output_alone(spin: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`--export-json -` wrote a file named '-' (issue 25); now stdout carries the JSON alone and
    the tables go to stderr, so `perflab compare ... --export-json - | jq` works."""
    import json

    from cli_helpers import run_cli

    code, out, err = run_cli(["compare", "-r", "6", "--export-json", "-", f"{spin} 1000",
                              f"{spin} 1001"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"].startswith("perflab-result/") and len(doc["configurations"]) == 2
    assert "verdicts:" in err and not Path("-").exists()
    code, out, err = run_cli(["compare", "-r", "6", "--export-json", "-", "--export-csv", "-",
                              f"{spin} 1000", f"{spin} 1001"], capsys)
    assert code != 0 and "both ask for standard output" in err
