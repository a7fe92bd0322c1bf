"""history / detect / dashboard verbs over a store, git_state, and their bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli_helpers import invoke
from git_helpers import commit, new_repo
from perflab.errors import PerflabError
from perflab.history.git import git_state
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.unit


def fill(db: Path, commits: list[str], step_at: int | None, seed: int = 1,
         created: list[float] | None = None, machine: str = "h") -> None:
    """One stat result per commit for benchmark syn/b (depth=1), wall_time ~ 10 ms."""
    store = Store(db)
    r = np.random.default_rng(seed)
    for i, c in enumerate(commits):
        mu = 0.010 * (1.25 if step_at is not None and i >= step_at else 1.0)
        rs = ResultSet(kind="stat", commit=c, dirty=False, status="complete",
                       created_at=created[i] if created else 1000.0 + i,
                       fingerprint={"hostname": machine}, metrics={"wall_time":
                                                               BUILTIN_METRICS["wall_time"]},
                       settings={"primary_metric": "wall_time"})
        cfg = Configuration(name="A", command=["x"], benchmark="syn/b", params={"depth": 1})
        cfg.runs = [Run(seq=j, values={"wall_time": float(r.normal(mu, mu * 0.01)),
                                       "max_rss": 1000.0}) for j in range(7)]
        rs.configurations.append(cfg)
        store.save(rs)


def test_history_table_and_plot(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    commits = [f"{i:02d}" + "ab" * 19 for i in range(24)]
    fill(db, commits, step_at=12)
    png = tmp_path / "h.png"
    res = invoke("history", "syn/b", "--param", "depth=1", "--db", str(db), "--plot", str(png))
    assert res.exit_code == 0, res.output
    assert res.output.count("stat") == 24
    # the change is marked on the first point after it, with its size
    line = next(ln for ln in res.output.splitlines() if commits[12][:10] in ln)
    assert "+25" in line or "+24" in line
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # another metric on request
    res = invoke("history", "syn/b", "--metric", "max_rss", "--db", str(db))
    assert res.exit_code == 0 and "max_rss" in res.output


def test_machines_are_named_not_numbered_and_ordered_by_name(tmp_path: Path) -> None:
    """m3 was stored first (machine row 1), m1 second: every output says m1 and m3, never
    "machine 1", and lists m1 first."""
    from perflab.history.series import SeriesFilter, load_series

    db = tmp_path / "r.sqlite"
    commits = [f"{i:02d}" + "cd" * 19 for i in range(16)]
    fill(db, commits, step_at=8, seed=1, machine="m3")
    fill(db, commits, step_at=8, seed=2, machine="m1")
    series = load_series(Store(db), SeriesFilter("syn/b", metric="wall_time"))
    assert [(s.key.machine, s.key.machine_id) for s in series] == [("m1", 2), ("m3", 1)]
    assert series[0].key.label() == "syn/b depth=1 [A] m1 wall_time"  # the plot's panel title
    res = invoke("history", "syn/b", "--db", str(db), "--plot", str(tmp_path / "h.png"))
    assert res.exit_code == 0, res.output
    assert "machine 1" not in res.output and "machine 2" not in res.output
    assert res.output.index("[A] m1 ") < res.output.index("[A] m3 ")
    res = invoke("detect", "--db", str(db), "--report", str(tmp_path / "rep"))
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.output.splitlines() if "regression" in ln and "syn/b" in ln]
    assert [[c.strip() for c in ln.split("│")][4] for ln in rows] == ["m1", "m3"]
    (md,) = (tmp_path / "rep").glob("*.md")
    assert "- **Machines:** m1, m3" in md.read_text() and "machine 1" not in md.read_text()
    res = invoke("dashboard", "--db", str(db), "--out", str(tmp_path / "dash"))
    assert res.exit_code == 0, res.output
    pages = "".join(p.read_text() for p in (tmp_path / "dash").glob("*.html"))
    assert "<td class='l'>m1</td>" in pages and "machine 1" not in pages
    # --machine takes the name (or the id)
    res = invoke("history", "syn/b", "--machine", "m3", "--db", str(db))
    assert res.exit_code == 0 and "[A] m3 " in res.output and "[A] m1 " not in res.output
    res = invoke("history", "syn/b", "--machine", "2", "--db", str(db))
    assert res.exit_code == 0 and "[A] m1 " in res.output and "[A] m3 " not in res.output
    res = invoke("history", "syn/b", "--machine", "m9", "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert res.exception.problem == "no machine named 'm9' in the store"
    assert res.exception.fix == "known machines: m1, m3"


def test_history_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    fill(db, ["a" * 40, "b" * 40], step_at=None)
    res = invoke("history", "nope/x", "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert "no stored results for benchmark 'nope/x'" in res.exception.problem
    assert "syn/b" in res.exception.fix
    res = invoke("history", "syn/b", "--metric", "cycles", "--db", str(db))
    assert isinstance(res.exception, PerflabError) and "wall_time" in res.exception.fix
    res = invoke("history", "syn/b", "--param", "depth", "--db", str(db))
    assert isinstance(res.exception, PerflabError) and "k=v" in res.exception.problem


def test_detect_fail_on_regression_and_json(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    fill(db, [f"{i:040x}" for i in range(20)], step_at=10)
    res = invoke("detect", "--db", str(db), "--fail-on-regression")
    assert res.exit_code == 1, res.output
    assert "regression" in res.output
    res = invoke("detect", "--db", str(db), "--json")
    assert res.exit_code == 0
    import json

    doc = json.loads(res.output)
    (cp,) = doc["change_points"]
    assert cp["commit_after"] == f"{10:040x}" and cp["regression"] and cp["metric"] == "wall_time"
    assert cp["kind"] == "step" and cp["found_by"] == "search"
    assert 20 < cp["change_pct"] < 30
    # a flat store passes the CI gate
    flat = tmp_path / "flat.sqlite"
    fill(flat, [f"{i:040x}" for i in range(20)], step_at=None)
    assert invoke("detect", "--db", str(flat), "--fail-on-regression").exit_code == 0


def test_detect_ignore_list_from_file(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    fill(db, [f"{i:040x}" for i in range(20)], step_at=10)
    cfg = tmp_path / "detect.toml"
    cfg.write_text(f'[[ignore]]\nbenchmark = "syn/*"\ncommit = "{10:040x}"\nreason = "known"\n')
    res = invoke("detect", "--db", str(db), "--config", str(cfg), "--fail-on-regression")
    assert res.exit_code == 0, res.output
    assert "1 ignored" in res.output


def test_dashboard(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    fill(db, [f"{i:040x}" for i in range(16)], step_at=8)
    out = tmp_path / "site"
    res = invoke("dashboard", "--db", str(db), "--out", str(out))
    assert res.exit_code == 0, res.output
    index = (out / "index.html").read_text()
    pages = sorted(out.glob("*.html"))
    assert len(pages) == 3  # index + wall_time + max_rss series
    assert "regression" in index and "http" not in index.replace("http-equiv", "")
    for p in pages:
        if p.name != "index.html":
            assert p.name in index  # linked from the index
            png = p.with_suffix(".png")
            assert png.exists() and png.name in p.read_text()
    res = invoke("dashboard", "--db", str(tmp_path / "empty.sqlite"), "--out", str(out))
    assert isinstance(res.exception, PerflabError)


@pytest.mark.system
def test_history_in_git_order(tmp_path: Path) -> None:
    """--repo orders by the commit graph even when results were stored out of order."""
    repo = new_repo(tmp_path / "repo")
    shas = [commit(repo, f"c{i}", {"f": str(i)}) for i in range(6)]
    db = tmp_path / "r.sqlite"
    # stored newest-first (a backfill): store order is the reverse of git order
    fill(db, shas, step_at=None, created=[2000.0 - i for i in range(6)])
    from perflab.history.series import SeriesFilter, load_series

    (s,) = load_series(Store(db), SeriesFilter("syn/b", metric="wall_time"))
    assert [p.commit for p in s.points] == shas[::-1]
    (s,) = load_series(Store(db), SeriesFilter("syn/b", metric="wall_time"), repo=repo)
    assert [p.commit for p in s.points] == shas


@pytest.mark.system
def test_git_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert git_state(None) == (None, None, None)  # not a repository: nothing recorded
    with pytest.raises(PerflabError, match="not a git work tree"):
        git_state(tmp_path)
    repo = new_repo(tmp_path / "repo")
    head = commit(repo, "one", {"a.c": "int x;\n"})
    assert git_state(repo) == (head, False, str(repo.resolve()))
    (repo / "a.c").write_text("int y;\n")
    assert git_state(repo)[1] is True
    monkeypatch.chdir(repo)
    assert git_state(None)[0] == head
    assert git_state(repo, "HEAD") == (head, None, str(repo.resolve()))
    with pytest.raises(PerflabError, match="'nope' is not a commit"):
        git_state(repo, "nope")


def test_a_checksum_change_is_never_a_regression(tmp_path: Path) -> None:
    """A workload's checksum changes with the work it did: detect shows the change, and never as a
    regression (issue 9: detect flagged a checksum)."""
    db = tmp_path / "r.sqlite"
    store = Store(db)
    for i in range(20):
        rs = ResultSet(kind="stat", commit=f"{i:040x}", dirty=False, status="complete",
                       created_at=1000.0 + i, fingerprint={"hostname": "h"},
                       metrics={"wall_time": BUILTIN_METRICS["wall_time"]},
                       settings={"primary_metric": "wall_time"})
        cfg = Configuration(name="A", command=["x"], benchmark="syn/b", params={"depth": 1})
        cfg.runs = [Run(seq=j, values={"wall_time": 0.01 + 1e-5 * ((i * 7 + j) % 5),
                                       "checksum": 123.0 if i < 10 else 456.0})
                    for j in range(7)]
        rs.configurations.append(cfg)
        store.save(rs)
    res = invoke("detect", "--db", str(db), "--all-metrics", "--fail-on-regression")
    assert res.exit_code == 0, res.output
    assert "changed (no direction)" in " ".join(res.output.split())
    res = invoke("detect", "--db", str(db), "--metric", "checksum", "--fail-on-regression")
    assert isinstance(res.exception, PerflabError)
    assert "checksum has no direction" in res.exception.problem


def test_detect_looks_at_the_metric_that_decided_and_its_wall_clock(tmp_path: Path) -> None:
    """detect uses the default compare chose (issue 9 item 4): a result decided on task_clock is
    searched on task_clock and wall_time by default; another metric only with --all-metrics."""
    db = tmp_path / "r.sqlite"
    store = Store(db)
    r = np.random.default_rng(3)
    for i in range(20):
        step = 1.25 if i >= 10 else 1.0
        rs = ResultSet(kind="stat", commit=f"{i:040x}", dirty=False, status="complete",
                       created_at=1000.0 + i, fingerprint={"hostname": "h"},
                       metrics={m: BUILTIN_METRICS[m]
                                for m in ("wall_time", "task_clock", "user_time")},
                       settings={"primary_metric": "task_clock"})
        cfg = Configuration(name="A", command=["x"], benchmark="syn/b", params={"depth": 1})
        cfg.runs = [Run(seq=j, values={m: float(r.normal(v * step, v * step * 0.01))
                                       for m, v in (("task_clock", 10.0), ("wall_time", 0.01),
                                                    ("user_time", 0.01))})
                    for j in range(7)]
        rs.configurations.append(cfg)
        store.save(rs)
    import json

    res = invoke("detect", "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    found = {cp["metric"] for cp in json.loads(res.output)["change_points"]}
    assert found == {"task_clock", "wall_time"}
    res = invoke("detect", "--db", str(db), "--json", "--all-metrics")
    assert "user_time" in {cp["metric"] for cp in json.loads(res.output)["change_points"]}


def _daily(tmp_path: Path, n: int, step_at: int) -> tuple[Path, float, float]:
    """``n`` daily results ending half a day ago, a +25% step at the ``step_at``-th."""
    import time

    db, now, day = tmp_path / "r.sqlite", time.time(), 86400.0
    fill(db, [f"{i:040x}" for i in range(n)], step_at=step_at,
         created=[now - (n - 0.5 - i) * day for i in range(n)])
    return db, now, day


def test_since_keeps_the_recent_results_and_refuses_the_future(tmp_path: Path) -> None:
    import time

    db, now, day = _daily(tmp_path, 20, 10)  # the step 9.5 days ago
    res = invoke("history", "syn/b", "--since", "5d", "--db", str(db))
    assert res.exit_code == 0, res.output
    assert res.output.count("stat") == 5
    # the step is in the whole history, not in the last 8 days
    assert invoke("detect", "--db", str(db), "--fail-on-regression").exit_code == 1
    res = invoke("detect", "--db", str(db), "--since", "8d", "--fail-on-regression")
    assert res.exit_code == 0, res.output
    early = time.strftime("%Y-%m-%d", time.gmtime(now - 14.5 * day))
    res = invoke("detect", "--db", str(db), "--since", early, "--fail-on-regression")
    assert res.exit_code == 1, res.output
    # bad input, one line each
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(now + 2 * day))
    res = invoke("detect", "--db", str(db), "--since", tomorrow)
    assert isinstance(res.exception, PerflabError)
    assert "in the future" in res.exception.problem and "30d" in res.exception.fix
    res = invoke("history", "syn/b", "--since", "last week", "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert "neither an age nor a date" in res.exception.problem
    res = invoke("history", "syn/b", "--since", "2000-01-01T00:00", "--machine", "7",
                 "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert "no stored results" in res.exception.problem
    res = invoke("history", "syn/b", "--since", "1h", "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert "since 1h" in res.exception.problem and "earlier --since" in res.exception.fix


def test_prune_is_a_dry_run_unless_yes_and_keeps_what_detect_needs(tmp_path: Path) -> None:
    db, now, day = _daily(tmp_path, 40, 35)  # the step 5 days ago
    store = Store(db)
    res = invoke("prune", "--older-than", "20", "--keep", "10", "--db", str(db))
    assert res.exit_code == 0, res.output
    assert "would remove 20 result set(s) (140 measured runs)" in res.output
    assert len(store.result_ids()) == 40  # a dry run
    res = invoke("prune", "--older-than", "20", "--keep", "10", "--yes", "--db", str(db))
    assert res.exit_code == 0 and "removed 20 result set(s)" in res.output
    assert len(store.result_ids()) == 20
    # the step is still found in what is left
    assert invoke("detect", "--db", str(db), "--fail-on-regression").exit_code == 1
    res = invoke("prune", "--older-than", "1", "--keep", "10", "--yes", "--db", str(db))
    assert "removed 10 result set(s)" in res.output and len(store.result_ids()) == 10
    res = invoke("prune", "--older-than", "1", "--keep", "10", "--db", str(db))
    assert res.exit_code == 0 and "nothing to remove" in res.output
    # bad input, one line each
    res = invoke("prune", "--older-than", "1", "--keep", "1", "--yes", "--db", str(db))
    assert isinstance(res.exception, PerflabError)
    assert "would remove a series' only baseline" in res.exception.problem
    assert len(store.result_ids()) == 10
    res = invoke("prune", "--older-than", "0", "--db", str(db))
    assert isinstance(res.exception, PerflabError) and "positive" in res.exception.fix


def test_fail_on_regression_refuses_a_metric_without_direction(tmp_path: Path) -> None:
    # One check (session.check_can_regress) for detect and compare, before any work: a
    # checksum is neither better lower nor higher, so it cannot regress.
    db = str(tmp_path / "r.sqlite")
    for verb in (["detect"], ["compare", "true", "true"]):
        res = invoke(*verb, "--fail-on-regression", "--metric", "checksum", "--db", db)
        assert isinstance(res.exception, PerflabError), (verb, res.output)
        assert "checksum has no direction" in res.exception.problem
    assert not (tmp_path / "r.sqlite").exists()  # refused before the store was opened
