"""What a new user runs in the first hour, through the real CLI: an A/A check of one command,
a typo in --metric, the workloads hint."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from faults.helpers import Counts, Perflab

pytestmark = pytest.mark.system

EMPTY = Counts(0, 0, {})


def _configurations(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(str(n), str(b)) for n, b in
                con.execute("SELECT name, benchmark FROM configurations ORDER BY id")]
    finally:
        con.close()


def test_the_same_command_twice_is_an_a_a_check(perflab: Perflab) -> None:
    out = perflab("compare", "-r", "6", "--metric", "wall_time", "true", "true")
    out.succeeds()
    notes = [ln for ln in out.stderr.splitlines() if "A/A check" in ln]
    assert len(notes) == 1 and "true #1, true #2" in notes[0], out
    # The header may put "(baseline)" under the name where the table is narrow.
    assert "true #1" in out.stdout and "(baseline)" in out.stdout and "true #2" in out.stdout
    # Two configurations in the store, so two history series, one benchmark.
    assert _configurations(perflab.db) == [("true #1", "true"), ("true #2", "true")]
    hist = perflab("history", "true", "--metric", "wall_time")
    hist.succeeds()
    assert "[true #1]" in hist.stdout and "[true #2]" in hist.stdout


def test_repeats_are_numbered_by_position_among_others(perflab: Perflab) -> None:
    out = perflab("compare", "-r", "6", "--metric", "wall_time", "/bin/true", "true", "true")
    out.succeeds()
    assert [n for n, _ in _configurations(perflab.db)] == ["/bin/true", "true #2", "true #3"]


def test_one_name_given_twice_is_still_refused(perflab: Perflab) -> None:
    perflab("compare", "-n", "x", "-n", "x", "true", "/bin/true").fails(
        2, "two configurations are named 'x'", fix="-n/--name")
    assert perflab.counts() == EMPTY


@pytest.mark.parametrize("verb", [("stat", "-r", "6", "--metric", "wal_time", "--", "true"),
                                  ("compare", "-r", "6", "--metric", "wal_time", "true",
                                   "/bin/true")])
def test_a_metric_typo_is_refused_before_any_run(perflab: Perflab,
                                                 verb: tuple[str, ...]) -> None:
    line = perflab(*verb).fails(2, "unknown metric 'wal_time'", "wall_time",
                                fix="--metric wall_time")
    assert "wall_time" in line.partition(" -- ")[0]  # the close names, in the problem
    assert perflab.counts() == EMPTY


def test_a_workload_metric_typo_names_its_declared_metrics(perflab: Perflab) -> None:
    # stubs/c declares first_call_ns in its workload.toml: no collector or derivation has it.
    perflab("stat", "-r", "6", "--metric", "first_call_n", "-W", "stubs/c").fails(
        2, "unknown metric 'first_call_n'", "first_call_ns", fix="--metric first_call_ns")
    assert perflab.counts() == EMPTY


def _store_results(db: Path, n: int) -> None:
    from perflab.metrics import BUILTIN_METRICS
    from perflab.model import Configuration, ResultSet, Run
    from perflab.storage import Store

    store = Store(db)
    for i in range(n):
        rs = ResultSet(kind="stat", fingerprint={"hostname": "h", "cpu_count": 2},
                       metrics={"wall_time": BUILTIN_METRICS["wall_time"]}, label=f"r{i}")
        cfg = Configuration(name="prog", command=["prog"], benchmark="prog", is_baseline=True)
        cfg.runs = [Run(seq=0, values={"wall_time": 1.0})]
        rs.configurations.append(cfg)
        store.save(rs)


def test_results_list_says_how_many_it_left_out(perflab: Perflab) -> None:
    _store_results(perflab.db, 35)
    listed = perflab("results", "list")
    listed.succeeds()
    assert "showing 30 of 35 (use --limit N or --all)" in listed.stdout
    assert "r34" in listed.stdout and "r4 " not in listed.stdout  # the newest 30
    every = perflab("results", "list", "--all")
    every.succeeds()
    assert "r0 " in every.stdout and "showing" not in every.stdout
    few = perflab("results", "list", "--limit", "5")
    assert "showing 5 of 35" in few.stdout
    assert "showing" not in perflab("results", "list", "--limit", "35").stdout


SUITE_OF_WORKLOADS = """\
[suite]
name = "w"
baseline = "a"
[measure]
runs = 2
warmup = 0
[benchmark]
workload = "eh/cpp"
[configurations.a]
[configurations.b]
"""


@pytest.mark.parametrize("verb", [("compare", "-W", "eh/cpp", "-W", "eh/rust"),
                                  ("stat", "-W", "eh/cpp"), ("run", "SUITE", "--no-report"),
                                  ("workloads", "show", "eh/cpp"), ("workloads", "list"),
                                  ("workloads", "build", "eh/cpp")])
def test_no_workloads_directory_is_named_by_every_verb(perflab: Perflab, tmp_path: Path,
                                                       verb: tuple[str, ...]) -> None:
    # As a perflab installed from a wheel: no source tree, so no workloads/ beside it.
    suite = tmp_path / "w.toml"
    suite.write_text(SUITE_OF_WORKLOADS)
    args = [str(suite) if a == "SUITE" else a for a in verb]
    perflab(*args, env={"PERFLAB_WORKLOADS_DIR": str(tmp_path / "nowhere")}).fails(
        2, "no workloads directory", str(tmp_path / "nowhere"), fix="PERFLAB_WORKLOADS_DIR")
    assert perflab.counts() == EMPTY


def test_an_unknown_workload_says_where_workloads_were_read(perflab: Perflab) -> None:
    line = perflab("stat", "-W", "eh/cp").fails(2, "unknown workload 'eh/cp'",
                                                fix="did you mean eh/cpp?")
    assert "PERFLAB_WORKLOADS_DIR" in line and "eh/rust" in line
