"""Imports of real hyperfine / pyperf / perf stat files, and of bad files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_helpers import history_app
from perflab.errors import PerflabError
from perflab.imports import import_file
from perflab.storage import Store

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "history"


def test_hyperfine_fixture() -> None:
    raw = json.loads((FIX / "hyperfine-two.json").read_text())
    rs = import_file(FIX / "hyperfine-two.json", "hyperfine")
    assert rs.kind == "import"
    assert [c.name for c in rs.configurations] == ["quick", "sleepy"]
    assert rs.configurations[0].is_baseline
    for cfg, res in zip(rs.configurations, raw["results"], strict=True):
        assert cfg.samples("wall_time") == res["times"]  # seconds, run by run
    assert rs.metrics["wall_time"].unit == "s"


@pytest.mark.system
@pytest.mark.skipif(shutil.which("hyperfine") is None, reason="needs hyperfine")
def test_hyperfine_live_run_imports_and_stores(tmp_path: Path) -> None:
    out = tmp_path / "h.json"
    subprocess.run(["hyperfine", "-N", "--runs", "3", "--style", "none", "--export-json",
                    str(out), "true"], check=True, capture_output=True)
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", str(out), "--format", "hyperfine",
                                      "--benchmark", "true", "--db", str(db)])
    assert res.exit_code == 0, res.output
    store = Store(db)
    (rid,) = store.result_ids("import")
    rs = store.load(rid)
    assert rs.configurations[0].benchmark == "true"
    times = rs.configurations[0].samples("wall_time")
    assert len(times) == 3 and all(0 < t < 1 for t in times)
    # results show names the import's source, not a machine it does not have ("None xNone").
    from perflab.cli import app

    res = CliRunner().invoke(app, ["results", "show", str(rid), "--db", str(db)])
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "imported from hyperfine" in text and "None" not in text


def test_pyperf_fixture() -> None:
    raw = json.loads((FIX / "pyperf-timeit.json").read_text())
    rs = import_file(FIX / "pyperf-timeit.json", "pyperf")
    (cfg,) = rs.configurations
    assert cfg.name == "timeit"
    values = [v for run in raw["benchmarks"][0]["runs"] for v in run.get("values", [])]
    assert cfg.samples("ns_per_op") == pytest.approx([v * 1e9 for v in values])
    assert len(cfg.measured_runs()) == len(values)
    assert any(r.warmup for r in cfg.runs)
    assert rs.fingerprint.cpu_count == raw["metadata"]["cpu_count"]
    assert rs.fingerprint.hostname == raw["metadata"]["hostname"]
    assert rs.metrics["ns_per_op"].unit == "ns"


@pytest.mark.system
def test_a_pyperf_command_benchmark_is_the_wall_time_of_whole_runs(tmp_path: Path) -> None:
    pytest.importorskip("pyperf")
    out = tmp_path / "cmd.json"
    subprocess.run([sys.executable, "-m", "pyperf", "command", "-p", "1", "-n", "3", "-w", "0",
                    "-l", "1", "-o", str(out), "--", "true"], check=True, capture_output=True)
    raw = json.loads(out.read_text())
    assert raw["metadata"]["command"] == "true"  # what marks a `pyperf command` benchmark
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", str(out), "--db", str(db)])
    assert res.exit_code == 0, res.output
    store = Store(db)
    (rid,) = store.result_ids("import")
    rs = store.load(rid)
    (cfg,) = rs.configurations
    values = [v for run in raw["benchmarks"][0]["runs"] for v in run.get("values", [])]
    # Seconds per whole run of `true`, as hyperfine's imports: not ns_per_op of a "loop".
    assert cfg.samples("wall_time") == pytest.approx(values) and len(values) == 3
    assert "ns_per_op" not in rs.metrics and rs.metrics["wall_time"].unit == "s"
    assert cfg.command == ["true"]
    from perflab.cli import app

    res = CliRunner().invoke(app, ["results", "show", str(rid), "--db", str(db)],
                             env={"COLUMNS": "200"})
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert f"imported from pyperf ({out})" in text and "None" not in text


def test_perf_stat_fixture_without_pmu() -> None:
    rs = import_file(FIX / "perf-stat-true.jsonl", "perf-stat")
    (cfg,) = rs.configurations
    (run,) = cfg.runs
    assert run.values["page_faults"] == 48
    assert run.values["task_clock"] == pytest.approx(0.822193e-3)  # perf's msec, in s
    assert "instructions" not in run.values
    assert any("could not count" in n and "instructions" in n for n in rs.notes)
    assert any("MEAN" in n for n in rs.notes)  # perf stat -r 3


def test_perf_stat_duration_is_wall_time() -> None:
    rs = import_file(FIX / "perf-stat-duration.jsonl", "perf-stat", benchmark="true")
    (cfg,) = rs.configurations
    assert cfg.benchmark == "true"
    assert cfg.samples("wall_time") == [pytest.approx(15795289e-9)]


def test_perf_stat_hardware_events_two_runs() -> None:
    rs = import_file(FIX / "perf-stat-pmu-handcrafted.jsonl", "perf-stat")
    (cfg,) = rs.configurations
    assert cfg.samples("instructions") == [4120001.0, 4120011.0]
    assert cfg.samples("branch_misses") == [12045.0, 12001.0]
    assert cfg.samples("wall_time") == pytest.approx([0.0021, 0.00205])
    assert rs.metrics["cycles"].source.startswith("perf_event_open (hardware")
    assert any("multiplexed" in n and "branches 79%" in n for n in rs.notes)


@pytest.mark.parametrize("fmt", ["hyperfine", "pyperf", "perf-stat"])
def test_corrupt_files_give_one_clear_error(tmp_path: Path, fmt: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"results": [ {"command": "x", "times": [0.1, ')  # truncated
    with pytest.raises(PerflabError, match=f"not a {fmt.replace('-', ' ')}"):
        import_file(bad, fmt)
    bad.write_bytes(bytes(range(256)))
    with pytest.raises(PerflabError):
        import_file(bad, fmt)


def test_wrong_format_for_the_file() -> None:
    with pytest.raises(PerflabError, match="not a pyperf result file"):
        import_file(FIX / "hyperfine-two.json", "pyperf")
    with pytest.raises(PerflabError, match="not a hyperfine result file"):
        import_file(FIX / "pyperf-timeit.json", "hyperfine")
    with pytest.raises(PerflabError, match="no JSON event lines"):
        import_file(FIX / "README.md", "perf-stat")


def test_cli_bad_file_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    bad = tmp_path / "empty.json"
    bad.write_text("")
    res = CliRunner().invoke(history_app(), ["import", str(FIX / "hyperfine-two.json"), str(bad),
                                      "--format", "hyperfine", "--db", str(db)])
    assert res.exit_code != 0
    assert isinstance(res.exception, PerflabError) and "empty file" in res.exception.problem
    assert Store(db).result_ids() == []  # the good file before it is not half-imported
    res = CliRunner().invoke(history_app(), ["import", str(FIX / "hyperfine-two.json"),
                                      "--format", "nosuchtool", "--db", str(db)])
    assert isinstance(res.exception, PerflabError)
    assert "unknown import format" in res.exception.problem


@pytest.mark.system
def test_imports_show_in_history(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    for _ in range(2):
        res = CliRunner().invoke(history_app(), ["import", str(FIX / "hyperfine-true.json"),
                                          "--format", "hyperfine", "--db", str(db)])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(history_app(), ["history", "true", "--db", str(db)],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.output.count(" import ") == 2


@pytest.mark.system
@pytest.mark.parametrize(("fixture", "fmt"), [
    ("hyperfine-two.json", "hyperfine"),
    ("pyperf-timeit.json", "pyperf"),
    ("perf-stat-true.jsonl", "perf-stat"),
    ("perf-stat-duration.jsonl", "perf-stat"),
])
def test_the_format_is_told_from_the_file(fixture: str, fmt: str, tmp_path: Path) -> None:
    from perflab.imports import detect_format
    assert detect_format(FIX / fixture) == fmt
    # And `perflab import` without --format stores the same as with it.
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(history_app(), ["import", str(FIX / fixture), "--db", str(db)])
    assert res.exit_code == 0, res.output
    (rid,) = Store(db).result_ids("import")
    got, want = Store(db).load(rid), import_file(FIX / fixture, fmt)
    assert got.settings.import_format == fmt
    assert [c.samples(m) for c in got.configurations for m in sorted(want.metrics)] == \
        [c.samples(m) for c in want.configurations for m in sorted(want.metrics)]


def test_a_file_of_no_known_tool_asks_for_the_format(tmp_path: Path) -> None:
    from perflab.imports import detect_format
    f = tmp_path / "criterion.json"
    f.write_text('{"reason": "benchmark-complete", "id": "fib 20"}\n')
    with pytest.raises(PerflabError) as e:
        detect_format(f)
    assert "cannot tell which tool wrote" in str(e.value) and "--format" in e.value.line()


def _pyperf_suite(path: Path, values: dict[str, list[float]]) -> Path:
    """A pyperf suite file (pyperf's layout: one benchmark per name, its runs' values in s)."""
    path.write_text(json.dumps({"version": "1.0", "metadata": {"unit": "second"},
                                "benchmarks": [{"metadata": {"name": n},
                                                "runs": [{"values": [v]} for v in vs]}
                                               for n, vs in values.items()]}))
    return path


@pytest.mark.system
def test_stored_results_pair_configurations_by_name_not_position(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cli_helpers import run_cli
    monkeypatch.setenv("COLUMNS", "200")  # one line a row: the rows are read below
    # 20 runs (fewer cannot rule out drift), in no order: not a drift
    rng = [1.0 + 0.0005 * k for k in (3, 17, 6, 12, 0, 19, 9, 14, 2, 7, 16, 1, 11, 5, 18, 8,
                                       13, 4, 15, 10)]
    a = _pyperf_suite(tmp_path / "a.json", {"join": [1e-6 * r for r in rng],
                                            "sort": [1.35e-6 * r for r in rng]})
    # b lists them in the other order: matched by position, join would meet sort (+35%).
    b = _pyperf_suite(tmp_path / "b.json", {"sort": [1.35e-6 * r for r in rng],
                                            "join": [1e-6 * r for r in rng]})
    db = str(tmp_path / "r.sqlite")
    for f in (a, b):
        assert run_cli(["import", str(f), "--db", db], capsys)[0] == 0
    code, out, err = run_cli(["compare", "--from-db", "1", "--from-db", "2", "--metric",
                              "ns_per_op", "--db", db], capsys)
    assert code == 0, err
    # Each name is compared with itself (one row per benchmark), never join with sort (+35%).
    rows = [ln for ln in out.splitlines() if ln.startswith(("│ join ", "│ sort "))]
    assert len(rows) == 2 and all("1.000x" in r for r in rows), out
    assert "+35" not in out and "-25" not in out and "1.35" not in out, out
    assert out.count("equivalent (not interleaved)") == 2
    rs = Store(db).load(1)
    assert sorted(c.name for c in rs.configurations) == ["join", "sort"]


def hyperfine_and_perflab(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A store holding hyperfine's import of ``true`` (result 1) and perflab's own stat of it
    (result 2): its path."""
    from cli_helpers import run_cli
    db = str(tmp_path / "r.sqlite")
    assert run_cli(["import", str(FIX / "hyperfine-true.json"), "--db", db], capsys)[0] == 0
    assert run_cli(["stat", "-r", "6", "--db", db, "--", "true"], capsys)[0] == 0
    return db


@pytest.mark.system
def test_values_from_two_tools_are_compared_only_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_cli
    db = hyperfine_and_perflab(tmp_path, capsys)
    code, out, err = run_cli(["compare", "--from-db", "1", "--from-db", "2", "--force",
                              "--db", db], capsys)
    text = " ".join((out + err).split())
    assert code == 0, err
    assert "come from different tools (result 1: hyperfine, result 2: perflab)" in text
    assert "not interleaved" in text


@pytest.mark.system
def test_a_history_never_alternates_between_tools(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: an imported hyperfine result and perflab's own stat of the same command made one
    # series, whose "step" was the tools' difference (perflab's launcher vs hyperfine's).
    from perflab.history.series import SeriesFilter, load_series
    db = hyperfine_and_perflab(tmp_path, capsys)
    series = load_series(Store(db), SeriesFilter("true", metric="wall_time"))
    assert sorted(s.key.source for s in series) == ["hyperfine", "perflab"]
    assert all(len(s.points) == 1 for s in series)
    assert "(imported from hyperfine)" in next(s.key.label() for s in series
                                               if s.key.source == "hyperfine")


@pytest.mark.system
def test_perflab_reads_its_own_json_export(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_cli
    db, js = str(tmp_path / "r.sqlite"), tmp_path / "r.json"
    assert run_cli(["compare", "-r", "6", "--export-json", str(js), "--db", db,
                    "true", "true -x"], capsys)[0] == 0
    assert run_cli(["import", str(js), "--db", db], capsys)[0] == 0
    store = Store(db)
    original, imported = store.load(1), store.load(2)
    assert imported.settings.import_format == "perflab" and imported.source == "perflab"
    assert [c.name for c in imported.configurations] == [c.name for c in original.configurations]
    for a, b in zip(original.configurations, imported.configurations, strict=True):
        for m in ("wall_time", "max_rss", "user_time"):
            assert b.samples(m) == a.samples(m)
    assert {m: i.unit for m, i in imported.metrics.items()} == \
        {m: i.unit for m, i in original.metrics.items() if m in imported.metrics}
    # judged as it was made: the same plan (band, correction, looks, interleaving, primary),
    # so every verdict reads the same after the round trip
    from perflab.stats import compare_result
    assert imported.settings.comparison == original.settings.comparison
    assert imported.settings.interleaved == original.settings.interleaved
    assert imported.settings.primary_metric == original.settings.primary_metric
    metrics = ["wall_time", "max_rss", "user_time"]
    assert [(c.metric, c.verdict, c.ratio) for c in compare_result(imported, metrics)] == \
        [(c.metric, c.verdict, c.ratio) for c in compare_result(original, metrics)]


@pytest.mark.system
def test_imported_harness_files_at_commits_are_a_series(tmp_path: Path) -> None:
    """go test -bench files imported with --commit for three commits: history shows each
    benchmark's series in commit order, as for perflab's own results."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    commits = []
    for i in range(3):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"c{i}"], check=True)
        commits.append(subprocess.run([*git, "rev-parse", "HEAD"], check=True,
                                      capture_output=True, text=True).stdout.strip())
    db = str(tmp_path / "h.sqlite")
    gob = Path(__file__).parents[1] / "fixtures" / "imports" / "gobench-count6.txt"
    for c in commits:
        res = CliRunner().invoke(history_app(), ["import", str(gob), "--commit", c, "--repo",
                                          str(repo), "--db", db])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(history_app(), ["history", "*", "--config", "Sum-2", "-m", "ns_per_op",
                                      "--repo", str(repo), "--db", db], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.output.splitlines() if " import " in ln]
    assert [ln.split()[1] for ln in rows] == [c[:10] for c in commits]
    # detect reads the three benchmarks' imported series (identical files: no change point)
    res = CliRunner().invoke(history_app(), ["detect", "-m", "ns_per_op", "--repo", str(repo),
                                      "--db", db], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "in 3 series" in res.output and "0 regression(s)" in res.output
