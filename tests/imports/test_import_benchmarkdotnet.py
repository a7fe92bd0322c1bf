"""BenchmarkDotNet full JSON imports: the five machines' schema-built files
(tests/fixtures/imports/README.md), and bad files refused in one line naming the field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import invoke
from import_helpers import refused, stores_nothing
from perflab.imports import detect_format, import_file
from perflab.storage import Store

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "imports" / "benchmarkdotnet"
FILES = sorted(FIX.glob("*/*/*-report-full.json"))


def test_the_fixtures_are_five_machines_base_and_diff() -> None:
    assert len(FILES) == 10
    assert {f.parts[-2] for f in FILES} == {"base", "diff"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parts[-3]}-{p.parts[-2]}")
def test_a_full_json_report(path: Path) -> None:
    raw = json.loads(path.read_text())
    host = raw["HostEnvironmentInfo"]
    assert detect_format(path) == "benchmarkdotnet"
    rs = import_file(path, None)
    assert rs.source == "benchmarkdotnet" and rs.settings.interleaved is False
    assert [c.name for c in rs.configurations] == [b["FullName"] for b in raw["Benchmarks"]]
    for cfg, b in zip(rs.configurations, raw["Benchmarks"], strict=True):
        result = [m for m in b["Measurements"]
                  if m["IterationMode"] == "Workload" and m["IterationStage"] == "Result"]
        assert len(result) < len(b["Measurements"])  # pilot, warm-up, overhead... left out
        assert cfg.samples("ns_per_op") == pytest.approx(
            [m["Nanoseconds"] / m["Operations"] for m in result])
        assert cfg.samples("ns_per_op") == pytest.approx(b["Statistics"]["OriginalValues"])
        mem = b["Memory"]
        assert set(cfg.samples("bytes_per_op")) == {mem["BytesAllocatedPerOperation"]}
        assert cfg.samples("gen0_per_1k_op")[0] == pytest.approx(
            mem["Gen0Collections"] * 1000 / mem["TotalOperations"])
        assert cfg.params.get("job") == "DefaultJob"
    assert rs.configurations[1].params == {"Size": "256", "job": "DefaultJob"}
    m = rs.metrics
    assert (m["ns_per_op"].unit, m["ns_per_op"].direction) == ("ns", "lower")
    assert (m["bytes_per_op"].unit, m["bytes_per_op"].direction) == ("B", "lower")
    assert m["bytes_per_op"].deterministic and not m["ns_per_op"].deterministic
    fp = rs.fingerprint
    assert (fp.os, fp.cpu_model, fp.cpu_count) == (
        host["OsVersion"], host["ProcessorName"], host["LogicalCoreCount"])
    assert fp.arch == {"X64": "x86_64", "Arm64": "aarch64"}[host["Architecture"]]
    assert fp.runtimes == {c.name: host["RuntimeVersion"] for c in rs.configurations}


def test_sample_counts_and_the_bimodal_benchmark() -> None:
    rs = import_file(FIX / "debian-arm64" / "base" / "Perflab.Fixture.StringOps-report-full.json",
                     None)
    counts = {c.name.rsplit(".", 1)[1]: len(c.measured_runs()) for c in rs.configurations}
    assert counts == {"Concat(Size: 16)": 15, "Concat(Size: 256)": 15, "Hash": 15,
                      "Sort(Size: 1000)": 40}


@pytest.mark.system  # perflab import asks git for the commit
def test_five_machines_are_five_fingerprints_stored(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    res = invoke("import", *map(str, FILES), "--db", str(db))
    assert res.exit_code == 0, res.output
    store = Store(db)
    stored = [store.load(rid) for rid in store.result_ids("import")]
    assert len(stored) == 10
    machines = {(rs.fingerprint.os, rs.fingerprint.arch, rs.fingerprint.cpu_model)
                for rs in stored}
    assert len(machines) == 5
    runtimes = {next(iter(rs.fingerprint.runtimes.values())) for rs in stored
                if rs.fingerprint.runtimes}
    assert {r.split(" (")[0] for r in runtimes} == {".NET 8.0.10", ".NET 9.0.0"}


def _edited(tmp_path: Path, edit: Callable[[Any], Any]) -> Path:
    raw = json.loads(FILES[0].read_text())
    edit(raw)
    out = tmp_path / "Bad-report-full.json"
    out.write_text(json.dumps(raw))
    return out


def _result(b: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in b["Measurements"] if m["IterationStage"] == "Result")


@pytest.mark.parametrize(("edit", "field"), [
    (lambda r: r.pop("HostEnvironmentInfo"), "HostEnvironmentInfo is missing"),
    (lambda r: r["Benchmarks"][1].pop("FullName"), "Benchmarks[1].FullName is missing"),
    (lambda r: r["Benchmarks"][2].pop("Measurements"), "Benchmarks[2].Measurements is missing"),
    (lambda r: _result(r["Benchmarks"][0]).update(Nanoseconds="12"),
     "Nanoseconds is the text '12', not a number"),
    (lambda r: _result(r["Benchmarks"][3]).pop("Operations"), "Operations is missing"),
    (lambda r: r["Benchmarks"][0]["Memory"].update(BytesAllocatedPerOperation=[1]),
     "Benchmarks[0].Memory.BytesAllocatedPerOperation is a list, not a number"),
    (lambda r: r["Benchmarks"][1].update(Measurements=[m for m in r["Benchmarks"][1][
        "Measurements"] if m["IterationStage"] != "Result"]),
     "Benchmarks[1] has no Workload Result measurements"),
])
def test_a_bad_field_is_named_and_nothing_is_stored(
        tmp_path: Path, edit: Callable[[Any], Any], field: str) -> None:
    bad = _edited(tmp_path, edit)
    refused(bad, None if "HostEnvironmentInfo" not in field else "benchmarkdotnet", field)
    stores_nothing(tmp_path / "r.sqlite", str(FILES[1]), str(bad), "--format", "benchmarkdotnet")
