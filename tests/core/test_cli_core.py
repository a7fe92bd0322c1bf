"""`perflab stat`, `compare` and `results` end to end, including every bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import run_cli, verdicts_of
from perflab.storage import Store

pytestmark = pytest.mark.measure


def test_stat_reports_every_collector_and_exports_json(spin: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    js = tmp_path / "r.json"
    code, out, err = run_cli(["stat", "-r", "6", "--export-json", str(js), "--", str(spin),
                              "200000"], capsys)
    assert code == 0, err
    for metric in ("wall_time", "task_clock", "page_faults", "max_rss", "minor_faults",
                   "involuntary_switches"):
        assert metric in out
    doc = json.loads(js.read_text())
    assert doc["schema"] == "perflab-result/1" and doc["kind"] == "stat"
    cfg = doc["configurations"][0]
    wall = cfg["metrics"]["wall_time"]
    assert len(wall["samples"]) == 6 and wall["unit"] == "s"
    assert wall["ci_low"] <= wall["median"] <= wall["ci_high"]
    assert wall["source"].startswith("monotonic")
    assert cfg["metrics"]["task_clock"]["source"].endswith("timed region only")
    assert doc["environment"]["cpu_count"] == os.cpu_count()


def test_compare_finds_a_large_slowdown_and_gates_ci(spin: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    js, md, csv = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "c.csv"
    code, out, err = run_cli([
        "compare", "-r", "8", "-n", "fast", "-n", "slow", "--metric", "task_clock",
        "--fail-on-regression", "--export-json", str(js), "--export-markdown", str(md),
        "--export-csv", str(csv), f"{spin} 2000000", f"{spin} 6000000"], capsys)
    assert code == 1 and "regression" in err  # slow is ~3x slower: the gate trips
    doc = json.loads(js.read_text())
    tc = [c for c in doc["comparisons"] if c["metric"] == "task_clock"][0]
    assert tc["baseline"] == "fast" and tc["candidate"] == "slow"
    assert tc["verdict"] == "slower" and 2.0 < tc["ratio"] < 4.5
    assert tc["ci_low"] <= tc["ratio"] <= tc["ci_high"] and tc["p_value"] < 0.05
    assert doc["correction"] == "holm"
    assert "| task_clock |" in md.read_text()
    assert csv.read_text().startswith("configuration,cell,metric")
    assert "slower" in out


def test_compare_baseline_by_name(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["compare", "-r", "8", "-n", "a", "-n", "b", "--baseline", "b",
                            "--metric", "task_clock", f"{spin} 3000000", f"{spin} 1000000"],
                           capsys)
    assert code == 0 and "b (baseline)" in out and "slower" in out  # a does 3x the work


def test_instructions_without_pmu_use_valgrind_exactly(spin: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from perflab.fingerprint import pmu_status

    if "instructions" in pmu_status()["hardware"]:
        pytest.skip("this machine has a PMU: the valgrind path is not taken")
    if not __import__("shutil").which("valgrind"):
        pytest.skip("valgrind not installed")
    js = tmp_path / "i.json"
    code, out, err = run_cli([
        "compare", "--metric", "instructions", "--region-symbol", "*perflab_timed_region*",
        "--export-json", str(js), f"{spin} 100000", f"{spin} 103000"], capsys)
    assert code == 0, err
    doc = json.loads(js.read_text())
    ins = [c for c in doc["comparisons"] if c["metric"] == "instructions"][0]
    # A count reads larger/smaller, judged against the +-1% band even when exact.
    assert ins["p_value"] is None and ins["deterministic"] and ins["verdict"] == "larger"
    assert ins["ratio"] == pytest.approx(1.03, abs=0.0005) and ins["regression"]
    per_op = [c for c in doc["comparisons"] if c["metric"] == "instructions_per_op"][0]
    assert per_op["ratio"] == pytest.approx(1.0, abs=0.001)  # same work per op
    assert "valgrind" in doc["configurations"][0]["metrics"]["instructions"]["source"]
    assert "exact)" in out


@pytest.mark.parametrize("args, message", [
    (["stat", "-r", "2", "--", "no-such-command-xyz"], "command not found: no-such-command-xyz"),
    (["stat", "-r", "2", "--metric", "bogus_metric", "--", "true"],
     "unknown metric 'bogus_metric'"),
    (["stat", "-r", "2", "--", "false"], "exited with status 1"),
    (["stat", "-r", "2", "--timeout", "0.2", "--", "sleep", "3"], "timeout"),
    (["stat", "-r", "2", "--", "sh", "-c", "kill -KILL $$"], "killed by signal SIGKILL"),
    (["stat", "-r", "2", "--", "sh", "-c", "echo '{\"x\": '"], "malformed JSON"),
    (["stat", "--pin", "999", "--", "true"], "--pin 999 names CPUs this process cannot use"),
    (["stat", "--env", "NOEQUALS", "--", "true"], "is not K=V"),
    (["compare", "true"], "compare needs at least two"),
    (["compare", "-n", "x", "-n", "x", "true", "true"], "two configurations are named"),
    (["compare", "--baseline", "zzz", "-r", "2", "true", "true -x"], "--baseline 'zzz'"),
    (["compare", "--correction", "magic", "true", "true"], "--correction 'magic'"),
    (["results", "show", "4242"], "no result with id 4242"),
])
def test_bad_input_gets_one_clear_line(args: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(args, capsys)
    assert code != 0
    lines = [ln for ln in err.splitlines() if ln.startswith("perflab:")]
    assert len(lines) == 1 and message in " ".join(err.split()), err
    assert "Traceback" not in err


def test_a_failed_run_keeps_what_was_measured(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["stat", "-r", "3", "--", "false"], capsys)
    assert code != 0 and "--ignore-failure" in err
    store = Store()
    rs = store.load(store.result_ids()[-1])
    assert rs.status == "failed" and rs.configurations[0].runs[0].status == "failed"


def test_ignore_failure_keeps_measuring(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["stat", "-r", "3", "--ignore-failure", "--", "sh", "-c",
                              "test -e flag || { touch flag; exit 1; }"], capsys)
    assert code == 0 and "failed and were left out" in " ".join(out.split())
    # Every run failing is not a result: the command fails (tests/faults covers the gate).
    code, out, err = run_cli(["stat", "-r", "3", "--ignore-failure", "--", "false"], capsys)
    assert code == 1 and "no successful run" in err


def test_results_list_show_and_compare_from_db(spin: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Two stat runs, not interleaved: a block of one side's runs can go at half speed (the other
    # vCPU busy), so the step is 9x, not the 3x a block of slow runs can hide.
    run_cli(["stat", "-r", "20", "--metric", "task_clock", "--", str(spin), "1000000"], capsys)
    run_cli(["stat", "-r", "20", "--metric", "task_clock", "--", str(spin), "9000000"], capsys)
    code, out, _ = run_cli(["results", "list"], capsys)
    assert code == 0 and "stat" in out
    ids = Store().result_ids()
    code, out, _ = run_cli(["results", "show", str(ids[-1])], capsys)
    assert code == 0 and "task_clock" in out
    code, out, err = run_cli(["compare", "--from-db", str(ids[-2]), "--from-db", str(ids[-1]),
                              "--metric", "task_clock"], capsys)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "slower" in out and "measured at different times" in flat
    assert "not interleaved" in flat  # the verdict says it was not paired by rounds


def test_compare_from_db_refuses_other_machines(spin: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import sqlalchemy as sa

    from perflab.schema import results

    run_cli(["stat", "-r", "2", "--", "true"], capsys)
    run_cli(["stat", "-r", "2", "--", "true"], capsys)
    store = Store()
    a, b = store.result_ids()[-2:]
    with store.engine.begin() as conn:  # pretend b came from another machine
        fp = store.load(b).fingerprint
        fp.cpu_model = "Another CPU"
        conn.execute(results.update().where(results.c.id == b).values(fingerprint=fp.to_json()))
    code, _, err = run_cli(["compare", "--from-db", str(a), "--from-db", str(b)], capsys)
    assert code == 2 and "different machines" in err and "--force" in err
    code, out, err = run_cli(["compare", "--force", "--from-db", str(a), "--from-db", str(b)],
                             capsys)
    assert code == 0 and "WARNING" in err
    assert sa  # imported for the update above


def test_ctrl_c_saves_and_summarises_the_runs_so_far(tmp_path: Path) -> None:
    env = {**os.environ, "PERFLAB_DB": str(tmp_path / "int.sqlite")}
    p = subprocess.Popen([sys.executable, "-m", "perflab", "stat", "-r", "1000", "--", "sleep",
                          "0.05"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    # Wait for stored runs rather than a fixed time: a loaded machine starts perflab slowly,
    # and a Ctrl-C during start-up is another fault (tests/faults).
    db = tmp_path / "int.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    if con.execute("SELECT count(*) FROM runs").fetchone()[0] >= 4:
                        break
            except sqlite3.Error:
                pass
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in out and "wall_time" in out
    rs = Store(tmp_path / "int.sqlite").load(1)
    assert rs.status == "interrupted" and len(rs.configurations[0].measured_runs()) >= 3


def test_stat_records_the_commit_measured(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    code, _, err = run_cli(["stat", "-r", "2", "--repo", str(repo), "--", "true"], capsys)
    assert code == 0, err
    (repo / "f").write_text("changed")
    run_cli(["stat", "-r", "2", "--repo", str(repo), "--", "true"], capsys)
    store = Store()
    clean, dirty = (store.load(i) for i in store.result_ids()[-2:])
    assert clean.commit == head and clean.dirty is False
    assert dirty.commit == head and dirty.dirty is True


@pytest.mark.unit
@pytest.mark.parametrize(("argv", "line"), [
    (["compare", "--estimator", "mode", "-r", "8", "true", "true -x"],
     "unknown estimator 'mode'; valid: median, mean, trim"),
    (["compare", "--estimator", "trim:0.25:0.25", "-r", "8", "true", "true -x"],
     "leaves 4 of 8 runs"),
    (["compare", "--fail-on-regression", "--metric", "checksum", "-r", "8", "true", "true -x"],
     "checksum has no direction"),
    (["stat", "--estimator", "trim:0.7:0", "-r", "8", "--", "true"], "valid: median, mean"),
    (["stat", "--estimator", "trim:0.3:0.3", "-r", "8", "--", "true"], "leaves 4 of 8 runs"),
])
def test_bad_statistics_input_is_one_line(argv: list[str], line: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(argv, capsys)
    text = " ".join((out + err).split())
    assert code != 0 and line in text and "Traceback" not in text
    assert Store().result_ids() == []  # refused before anything was measured or stored


def test_results_show_refuses_a_trim_its_stored_runs_cannot_carry(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["stat", "-r", "8", "--no-counters", "--", "true"], capsys)[0] == 0
    (rid,) = Store().result_ids()
    code, out, err = run_cli(["results", "show", str(rid), "--estimator", "trim:0.3:0.3"],
                             capsys)
    text = " ".join((out + err).split())
    assert code != 0 and "leaves 4 of 8 runs" in text and "Traceback" not in text
    assert run_cli(["results", "show", str(rid), "--estimator", "trim:0.1:0.1"], capsys)[0] == 0
    assert len(Store().load(rid).configurations[0].measured_runs()) == 8  # nothing rewritten


def test_too_few_runs_warn_and_read_inconclusive(spin: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["compare", "-r", "3", "--metric", "task_clock",
                              f"{spin} 1000000", f"{spin} 3000000"], capsys)
    flat = " ".join((out + err).split())
    assert code == 0 and "--runs 3 is below the 6 runs a verdict needs" in flat
    # Only the table's verdict cells count: notes (the warm-up one says "slower") may vary.
    verdicts = verdicts_of(out)
    assert verdicts and set(verdicts.values()) == {"inconclusive (too few runs)"}


def test_results_show_uses_the_stored_threshold(spin: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # 10 and 15 million iterations (11 and 17 ms): +50% however busy the machine, far inside
    # the ±90% band and far outside ±1%; at 1 and 1.5 million the start of the process made it
    # +20%, and beside three CPU-bound neighbours its interval reached [-27%, +114%].
    code, out, _ = run_cli(["compare", "-r", "20", "--threshold", "0.9", "--metric",
                            "task_clock", f"{spin} 10000000", f"{spin} 15000000"], capsys)
    assert code == 0 and "band (time ±90%" in out and "equivalent" in out
    rid = Store().result_ids()[-1]
    code, out, _ = run_cli(["results", "show", str(rid)], capsys)
    assert "band (time ±90%" in out and "equivalent" in out
    code, out, _ = run_cli(["results", "show", str(rid), "--threshold", "0.01"], capsys)
    assert "band (time ±1%" in out and "slower" in out


def test_adaptive_compare_stops_when_the_verdict_is_decided(
        spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["compare", "--metric", "task_clock", "--budget", "60",
                            f"{spin} 1000000", f"{spin} 3000000"], capsys)
    assert code == 0 and "slower" in out
    rs = Store().load(Store().result_ids()[-1])
    n = len(rs.configurations[0].measured_runs())
    # Early looks are strict (alpha is spent over the looks, little at first) and below 20 runs
    # the interval is widened for drift: a 3x change is decided at one of the first looks (6,
    # 9, 14 runs) on a quiet machine, at 21 at the latest under load.
    assert n in (6, 9, 14, 21), n
    plan = rs.settings.comparison
    assert plan is not None
    assert plan.looks > 1 and plan.threshold == 0.01 and plan.estimator == "trim"
    flat = " ".join(out.split())
    assert plan.level is not None and plan.level < 0.05 / 15  # the level of the deciding look
    assert f"alpha spent over {plan.looks} looks" in flat
    assert f"{n} runs per configuration in" in flat
    assert "every primary comparison was decided" in flat


def test_adaptive_aa_ends_without_a_false_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["compare", "--metric", "wall_time", "--budget", "2", "true",
                            "true "], capsys)
    flat = " ".join(out.split())
    # A busy machine spends the budget; a very quiet one may prove equivalence first, or reach
    # the default --max-runs 1000 first (a run of `true` costs about 1 ms since the launcher
    # counts with inherited counters: 2 x 1000 runs fit in 2 s).
    assert code == 0 and any(f"stopped because {why}" in flat for why in (
        "the 2 s budget was spent", "every primary comparison was decided",
        "the primary comparison cannot be decided within the budget at this noise",
        "--max-runs 1000 reached")), flat[-400:]
    assert verdicts_of(out)["wall_time"].split(" (")[0] in ("equivalent", "inconclusive")


def test_stat_with_an_estimator(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["stat", "-r", "8", "--estimator", "trim:0:0.125", "--metric",
                              "task_clock", "--", str(spin), "200000"], capsys)
    assert code == 0, err
    assert "trimmed mean (lowest 0%, highest 12%" in " ".join(out.split())


def test_stat_counts_the_same_runs_above_and_below_its_table(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 25: "384 runs" above the table, "385 runs in 10.86 s" below (the warm-up counted).
    code, out, _ = run_cli(["stat", "-r", "6", "-w", "2", "--", "true"], capsys)
    assert code == 0 and "true: 6 runs" in out
    assert re.search(r"^6 runs \(and 2 warm-up\) in ", out, re.M), out


@pytest.mark.system
def test_stat_name_keys_one_series_across_build_paths(
        spin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """History was keyed by the command's path: 10 builds at 10 paths were 10 one-point series
    (issue 20); `stat -n NAME` names the benchmark."""
    import shutil

    other = tmp_path / "build-2" / "spin"
    other.parent.mkdir()
    shutil.copy(spin, other)
    for prog in (spin, other):
        code, _, err = run_cli(["stat", "-n", "spin-loop", "-r", "6", "--", str(prog), "1000"],
                               capsys)
        assert code == 0, err
    store = Store()
    rs = [store.load(i) for i in store.result_ids()]
    assert {c.benchmark for r in rs for c in r.configurations} == {"spin-loop"}
    code, out, _ = run_cli(["history", "spin-loop"], capsys)
    assert code == 0 and out.count(" stat ") == 2, out
    code, _, err = run_cli(["stat", "-n", " ", "--", str(spin), "1000"], capsys)
    assert code != 0 and "--name ' ' is not a name" in err


@pytest.mark.system
def test_quiet_prints_the_tables_only(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No --quiet existed (issue 25): with it, the tables and nothing beside them; the notes
    are still stored with the result."""
    code, out, err = run_cli(["compare", "-q", "-r", "6", f"{spin} 1000", f"{spin} 1001"],
                             capsys)
    assert code == 0, err
    assert "change [CI]" in " ".join(out.split())
    for aside in ("verdicts:", "story:", "note:", "result 1 in", "runs per configuration"):
        assert aside not in out and aside not in err, aside
    assert any(n.startswith("primary metric:") for n in Store().load(1).notes)
    code, out, _ = run_cli(["compare", "-r", "6", f"{spin} 1000", f"{spin} 1001"], capsys)
    assert code == 0 and "verdicts:" in out  # and not quiet again after
