"""Google Benchmark JSON imports: real files of a real benchmark program (built here with
Debian's libbenchmark-dev), the recorded fixture, and bad files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_helpers import history_app
from import_helpers import refused
from perflab.errors import PerflabError
from perflab.imports import detect_format, import_file
from perflab.storage import Store

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "imports"
PROGRAMS = Path(__file__).parents[1] / "programs"
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@pytest.fixture(scope="module")
def gbench_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/programs/gbench_demo.cc built with g++ and -lbenchmark."""
    cxx = shutil.which("g++")
    if not cxx or not Path("/usr/include/benchmark/benchmark.h").exists():
        pytest.skip("no g++ or no libbenchmark-dev (scripts/install-system-deps.sh installs them)")
    out = tmp_path_factory.mktemp("gbench") / "gbench_demo"
    subprocess.run([cxx, "-O2", "-o", str(out), str(PROGRAMS / "gbench_demo.cc"), "-lbenchmark",
                    "-lpthread"], check=True)
    return out


def _run(program: Path, out: Path, *flags: str) -> Path:
    subprocess.run([str(program), "--benchmark_min_time=0.01", f"--benchmark_out={out}",
                    "--benchmark_out_format=json", *flags], check=True, capture_output=True)
    return out


def _expected(path: Path) -> dict[str, list[dict[str, float]]]:
    """Each benchmark's iteration rows as read by json, times in ns."""
    want: dict[str, list[dict[str, float]]] = {}
    for row in json.loads(path.read_text())["benchmarks"]:
        if row["run_type"] == "iteration":
            f = UNIT_NS[row["time_unit"]]
            want.setdefault(row["name"], []).append(
                {"ns_per_op": row["real_time"] * f, "cpu_ns_per_op": row["cpu_time"] * f})
    return want


def _check_samples(path: Path) -> None:
    rs = import_file(path, None)
    want = _expected(path)
    assert [c.name for c in rs.configurations] == list(want)
    for cfg in rs.configurations:
        for m in ("ns_per_op", "cpu_ns_per_op"):
            assert cfg.samples(m) == pytest.approx([r[m] for r in want[cfg.name]], rel=1e-12)


@pytest.mark.system
@pytest.mark.parametrize("repetitions", [None, 4])
def test_a_real_benchmark_file_imports_its_repetitions(gbench_demo: Path, tmp_path: Path,
                                                       repetitions: int | None) -> None:
    flags = [f"--benchmark_repetitions={repetitions}"] if repetitions else []
    f = _run(gbench_demo, tmp_path / "out.json", *flags)
    raw = json.loads(f.read_text())
    assert detect_format(f) == "gbench"
    _check_samples(f)
    rs = import_file(f, "gbench")
    # One configuration per benchmark, one run per repetition; aggregates are not runs.
    assert [len(c.runs) for c in rs.configurations] == [repetitions or 1] * 4
    aggregates = sum(r["run_type"] == "aggregate" for r in raw["benchmarks"])
    assert (aggregates > 0) == bool(repetitions)
    assert any(f"{aggregates} aggregate rows" in n for n in rs.notes) == bool(repetitions)
    assert any("one repetition per benchmark" in n for n in rs.notes) == (not repetitions)
    copy = next(c for c in rs.configurations if c.name == "BM_copy/4096")
    assert copy.samples("items") == [4096.0] * (repetitions or 1)
    assert rs.metrics["bytes_per_second"].direction == "higher"
    assert rs.metrics["ns_per_op"].direction == "lower"
    # BM_calls reports in ms: stored in ns like the others.
    calls = next(c for c in rs.configurations if c.name == "BM_calls")
    row = next(r for r in raw["benchmarks"] if r["name"] == "BM_calls")
    assert row["time_unit"] == "ms" and calls.samples("ns_per_op")[0] == row["real_time"] * 1e6
    # Stored through `perflab import`: the context is the stored fingerprint.
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", str(f), "--db", str(db)])
    assert res.exit_code == 0, res.output
    (rid,) = Store(db).result_ids("import")
    got = Store(db).load(rid)
    ctx = raw["context"]
    fp = got.fingerprint.to_json()
    assert (fp["hostname"], fp["cpu_count"], fp["cpu_mhz"]) == \
        (ctx["host_name"], ctx["num_cpus"], ctx["mhz_per_cpu"])
    assert fp["cpu_caches"] == ctx["caches"]
    assert fp["gbench_library_build_type"] == ctx["library_build_type"]
    assert got.settings.import_format == "gbench"
    assert sum(len(c.runs) for c in got.configurations) == 4 * (repetitions or 1)


def test_the_recorded_file() -> None:
    f = FIX / "gbench-repetitions.json"
    assert detect_format(f) == "gbench"
    _check_samples(f)
    rs = import_file(f, None)
    assert [len(c.runs) for c in rs.configurations] == [5, 5, 5, 5]
    assert rs.created_at > 0 and rs.fingerprint.hostname


def _file(tmp_path: Path, rows: list, context: object = None) -> Path:
    f = tmp_path / "g.json"
    f.write_text(json.dumps({"context": context or {"host_name": "h", "num_cpus": 2},
                             "benchmarks": rows}))
    return f


ROW = {"name": "BM_a", "run_name": "BM_a", "run_type": "iteration", "repetitions": 1,
       "iterations": 10, "real_time": 5.0, "cpu_time": 4.0, "time_unit": "us"}


@pytest.mark.parametrize(("rows", "context", "said"), [
    ([{k: v for k, v in ROW.items() if k != "real_time"}], None,
     "benchmarks[0] ('BM_a') has no 'real_time'"),
    ([{**ROW, "cpu_time": "4"}], None, "the cpu_time '4', not a time"),
    ([{**ROW, "time_unit": "min"}], None, "the time_unit 'min'"),
    ([{k: v for k, v in ROW.items() if k not in ("name", "run_name")}], None,
     "benchmarks[0] has no 'name'"),
    ([ROW, 7], None, "benchmarks[1] is not an object"),
    ([{**ROW, "run_type": "summary"}], None, "run_type 'summary'"),
    ([{**ROW, "items": [1]}], None, "the counter items [1], not a number"),
    ([{**ROW, "run_type": "aggregate", "aggregate_name": "mean"}], None,
     "1 aggregate rows only"),
    ([ROW], {"host_name": "h", "num_cpus": "2"}, "context.num_cpus is '2'"),
    ([ROW], [1], "'context' is not an object"),
])
def test_a_bad_file_gets_one_line_naming_the_field(tmp_path: Path, rows: list, context: object,
                                                   said: str) -> None:
    f = _file(tmp_path, rows, context)
    refused(f, "gbench", said)


def test_a_bad_file_stores_nothing(tmp_path: Path) -> None:
    good = _file(tmp_path, [ROW])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"context": {}, "benchmarks": {"BM_a": 1}}))
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", "-f", "gbench", str(good), str(bad),
                                         "--db", str(db)])
    assert isinstance(res.exception, PerflabError)
    assert "'benchmarks' is not a list" in res.exception.problem
    assert not db.exists() or Store(db).result_ids("import") == []


def test_errors_skips_and_nan_counters(tmp_path: Path) -> None:
    f = _file(tmp_path, [
        {**ROW, "error_occurred": True, "error_message": "no disk"},
        {**ROW, "skipped": True, "skip_message": "not here"},
        {**ROW, "rate_per_second": float("nan")},
        {**ROW, "name": "BM_b", "run_name": "BM_b", "real_time": 2, "time_unit": "s"},
    ])
    rs = import_file(f, "gbench")
    a, b = rs.configurations
    assert [r.status for r in a.runs] == ["failed", "ok"] and a.runs[0].error == "no disk"
    assert a.samples("ns_per_op") == [5000.0] and "rate_per_second" not in a.runs[1].values
    assert b.samples("ns_per_op") == [2e9] and b.samples("cpu_ns_per_op") == [4e9]
    assert any("skipped" in n for n in rs.notes) and any("errors" in n for n in rs.notes)
