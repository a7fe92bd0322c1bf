"""`go test -bench` text imports: real output of a real Go package (tests/programs/gobench,
standard library only: nothing is downloaded), the recorded fixture, and bad files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_helpers import history_app
from import_helpers import refused, stores_nothing
from perflab.imports import detect_format, import_file
from perflab.storage import Store

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "imports"
PACKAGE = Path(__file__).parents[1] / "programs" / "gobench"
LINE = re.compile(r"Benchmark(\S+)\s+\d+\s+(.*)")


def _expected(text: str) -> dict[str, list[dict[str, float]]]:
    """Each benchmark's result lines, unit -> value, read with a regular expression."""
    want: dict[str, list[dict[str, float]]] = {}
    for line in text.splitlines():
        if m := LINE.fullmatch(line.strip()):
            f = m.group(2).split()
            want.setdefault(m.group(1), []).append(
                {u: float(v) for v, u in zip(f[::2], f[1::2], strict=True)})
    return want


def _check(path: Path) -> None:
    rs = import_file(path, None)
    want = _expected(path.read_text())
    assert [c.name for c in rs.configurations] == list(want)
    for cfg in rs.configurations:
        rows = want[cfg.name]
        assert cfg.samples("ns_per_op") == [r["ns/op"] for r in rows]
        assert cfg.samples("bytes_per_op") == [r["B/op"] for r in rows]
        assert cfg.samples("allocs_per_op") == [r["allocs/op"] for r in rows]
    header = dict(re.findall(r"^(goos|goarch|cpu|pkg): (.*)$", path.read_text(), re.M))
    fp = rs.fingerprint
    assert (fp.os, fp.arch, fp.cpu_model) == (header["goos"], header["goarch"], header["cpu"])
    assert {c.params["pkg"] for c in rs.configurations} == {header["pkg"]}


@pytest.mark.system
def test_real_go_test_bench_output(tmp_path: Path) -> None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists()
                                else None)
    if go is None:
        pytest.skip("Go is not installed")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    out = subprocess.run([go, "test", "-run", "^$", "-bench", ".", "-count", "6", "-benchmem",
                          "-benchtime", "2000x"], cwd=PACKAGE, env=env, check=True,
                         capture_output=True, text=True).stdout
    f = tmp_path / "new.txt"
    f.write_text(out)
    assert detect_format(f) == "gobench"
    _check(f)
    rs = import_file(f, "gobench")
    assert [len(c.runs) for c in rs.configurations] == [6, 6, 6]
    assert rs.metrics["mb_per_s"].direction == "higher" and rs.metrics["mb_per_s"].unit == "MB/s"
    assert rs.metrics["bytes_per_hash"].direction == "lower"
    assert rs.metrics["ns_per_op"].direction == "lower"
    hash_cfg = next(c for c in rs.configurations if c.name.startswith("Hash-"))
    assert hash_cfg.samples("bytes_per_hash") == [1024.0] * 6
    # Stored through `perflab import`: the header lines are the stored fingerprint.
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", str(f), "--db", str(db)])
    assert res.exit_code == 0, res.output
    (rid,) = Store(db).result_ids("import")
    got = Store(db).load(rid)
    assert got.fingerprint.arch == rs.fingerprint.arch and got.settings.import_format == "gobench"
    assert [c.samples("ns_per_op") for c in got.configurations] == \
        [c.samples("ns_per_op") for c in rs.configurations]


def test_the_recorded_file() -> None:
    f = FIX / "gobench-count6.txt"
    assert detect_format(f) == "gobench"
    _check(f)


HEAD = "goos: linux\ngoarch: amd64\npkg: example.com/p\ncpu: Some CPU\n"


@pytest.mark.parametrize(("line", "said"), [
    ("BenchmarkA-2  100  12.5 ns/op  x B/op", "line 5 (BenchmarkA-2) has the value 'x' for B/op"),
    ("BenchmarkA-2  100  12.5 ns/op  3", "line 5 (BenchmarkA-2) has a value without its unit"),
    ("BenchmarkA-2  100  -1 ns/op", "has the value -1 for ns/op"),
    ("BenchmarkA-2  100  NaN ns/op", "has the value NaN for ns/op"),
    ("BenchmarkA-2 hello from the benchmark", "no benchmark result lines"),
    ("PASS", "no benchmark result lines"),
])
def test_a_bad_file_gets_one_line_naming_the_field(tmp_path: Path, line: str, said: str) -> None:
    f = tmp_path / "b.txt"
    f.write_text(HEAD + line + "\n")
    refused(f, "gobench", said)
    stores_nothing(tmp_path / "r.sqlite", "-f", "gobench", str(f))


def test_configuration_lines_and_lines_benchstat_ignores(tmp_path: Path) -> None:
    f = tmp_path / "b.txt"
    f.write_text(HEAD + "BenchmarkA-2  \thello from A\n"
                 "BenchmarkA-2  100  10 ns/op\n"
                 "--- BENCH: BenchmarkA-2\n    a_test.go:9: log line\n"
                 "note: second\nBenchmarkA-2  100  11 ns/op\n"
                 "note:\nBenchmarkA-2  100  12 ns/op\n"
                 "pkg: example.com/q\nBenchmarkA-2  100  20 ns/op  3 widgets/op\nok  \tx\t1s\n")
    rs = import_file(f, None)
    assert [(c.name, c.samples("ns_per_op")) for c in rs.configurations] == [
        ("A-2 (note=, pkg=example.com/p)", [10.0, 12.0]),
        ("A-2 (note=second, pkg=example.com/p)", [11.0]),
        ("A-2 (note=, pkg=example.com/q)", [20.0]),
    ]
    assert rs.metrics["widgets_per_op"].unit == "widgets/op"
    assert rs.fingerprint.cpu_model == "Some CPU"
    assert any("1 'Benchmark...' lines without results" in n for n in rs.notes)
