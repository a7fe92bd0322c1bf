"""detect --report DIR / --webhook URL: a regression on two machines becomes one Markdown file
(title, cell, machines, commit range with git log, before/after medians with CIs, the plot,
commands to reproduce), and the same JSON POSTed to a real HTTP server on loopback."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_helpers import invoke
from git_helpers import commit, new_repo
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.system


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository of 16 commits; commit 10's subject carries Markdown that must not render."""
    r = new_repo(tmp_path / "repo")
    commits = [commit(r, "make it <b>slow</b> | oops" if i == 10 else f"commit {i}",
                      {"f": str(i)}) for i in range(16)]
    return r, commits


def fill(db: Path, commits: list[str], machine: str, step_at: int, seed: int,
         bench: str = "syn/b", up: float = 1.25) -> None:
    store = Store(db)
    rng = np.random.default_rng(seed)
    for i, c in enumerate(commits):
        mu = 0.010 * (up if i >= step_at else 1.0)
        rs = ResultSet(kind="stat", commit=c, dirty=False, status="complete",
                       created_at=1000.0 + i,
                       fingerprint={"hostname": "h-" + machine, "machine_name": machine},
                       metrics={"wall_time": BUILTIN_METRICS["wall_time"]},
                       settings={"primary_metric": "wall_time"})
        cfg = Configuration(name="A | <i>x</i>", command=["./prog", "--depth", "1"],
                            benchmark=bench, params={"depth": 1})
        cfg.runs = [Run(seq=j, values={"wall_time": float(rng.normal(mu, mu * 0.01))})
                    for j in range(7)]
        rs.configurations.append(cfg)
        store.save(rs)


class Hook(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hook.received.append({"type": self.headers["Content-Type"],
                              "auth": self.headers["Authorization"], "path": self.path,
                              "doc": json.loads(body)})
        self.send_response(Hook.status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Any:
    Hook.received, Hook.status = [], 200
    srv = HTTPServer(("127.0.0.1", 0), Hook)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}/hook", Hook
    srv.shutdown()


def test_one_report_per_regression_with_everything_to_file_it(
        tmp_path: Path, repo: tuple[Path, list[str]], hook: Any) -> None:
    r, commits = repo
    db = tmp_path / "r.sqlite"
    fill(db, commits, "alpha", 10, 1)
    fill(db, commits, "beta", 10, 2)
    fill(db, commits, "gamma", 99, 3)  # no change on gamma
    fill(db, commits, "alpha", 6, 4, bench="syn/faster", up=0.8)  # an improvement: no report
    url, handler = hook
    out = tmp_path / "reports"
    res = invoke("detect", "--db", str(db), "--repo", str(r), "--report", str(out),
                 "--webhook", url, "--fail-on-regression")
    assert res.exit_code == 1, res.output  # --fail-on-regression keeps its exit code
    # the terminal table names the machines as the reports do (not by their row ids): one row
    # a change point at the runner's 220 columns
    rows = [[c.strip() for c in ln.split("│")[1:-1]] for ln in res.output.splitlines()
            if ln.startswith("│ syn/b ")]
    machines = [row[3] for row in rows if row[-1] == "regression"]
    assert sorted(machines) == ["alpha", "beta"], res.output
    mds = sorted(out.glob("*.md"))
    assert len(mds) == 1  # one regression, seen on two machines
    md = mds[0].read_text()
    before, after = commits[9], commits[10]
    assert md.startswith("# Regression: syn/b (depth=1) [A \\| \\<i>x\\</i>] "
                         "wall_time +")
    assert "on 2 of 3 machines" in md.splitlines()[0]
    # gamma measured the same two commits and shows no change: the page names it too
    machines_line = next(ln for ln in md.splitlines() if ln.startswith("- **Machines:**"))
    assert machines_line.startswith("- **Machines:** alpha, beta; measured the range, no "
                                    "change found: gamma ("), machines_line
    assert f"`{before[:10]}..{after[:10]}`" in md
    # git log of the range, the subject kept verbatim inside a code fence
    assert f"{after[:7]} make it <b>slow</b> | oops" in md
    assert "<i>x</i>" not in md  # user text outside fences is escaped
    rows = [ln for ln in md.splitlines() if ln.startswith("| alpha") or ln.startswith("| beta")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert float(cells[1].split()[0]) == pytest.approx(10.0, rel=0.03)
        assert float(cells[2].split()[0]) == pytest.approx(12.5, rel=0.03)
        assert "ms [" in cells[1] and "ms [" in cells[2] and "(7 runs)" in cells[1]
        assert cells[3].startswith("+2")  # about +25%
    png = out / md.split("](")[1].split(")")[0]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every machine's stored pair, named
    assert md.count("perflab compare --from-db") == 2
    assert "  # alpha\n" in md and "  # beta\n" in md
    # the store named in every line that reads it
    assert md.count(f"-m wall_time --db {db}  # ") == 2
    # bisect in a worktree of its own (a new private directory), never the reader's checkout
    t = f"tree_bisect_{after[:10]}"
    assert f'{t}=$(mktemp -d) && git -C {r} worktree add --detach "${t}" {after}; }}' in md
    assert (f'perflab bisect --repo "${t}" --good {before} --bad {after} '
            '--build "$BUILD" -m wall_time -- ./prog --depth 1') in md
    # the A/B of the two commits: one worktree each, built, compared side by side in one run;
    # these stat results stored no build command, so BUILD must be given
    assert 'BUILD="${BUILD:?perflab stored no build command' in md
    b, a = f"tree_{before[:10]}", f"tree_{after[:10]}"
    assert f'{{ {b}=$(mktemp -d) && git -C {r} worktree add --detach "${b}" {before}; }}' in md
    assert f'(cd "${a}" && sh -c "$BUILD")' in md
    assert "/perflab-" not in md  # no fixed, guessable directory name
    # with the settings they were judged with (the stored plan: stats' defaults here)
    assert (f"perflab compare -m wall_time --threshold 0.01 --correction holm --estimator "
            f"trim -n {before[:10]} -n {after[:10]} --shell "
            f'"cd \\"${b}\\" && ./prog --depth 1" "cd \\"${a}\\" && ./prog --depth 1"') in md
    # the webhook got the same, as JSON
    assert len(handler.received) == 1
    got = handler.received[0]
    assert got["type"] == "application/json"
    doc = got["doc"]
    assert doc["machines"] == ["alpha", "beta"] and doc["benchmark"] == "syn/b"
    assert [m["machine"] for m in doc["machines_unchanged"]] == ["gamma"]
    assert doc["commit_before"] == before and doc["commit_after"] == after
    assert doc["git_log"] == [f"{after[:7]} make it <b>slow</b> | oops"]
    assert doc["markdown"] == md
    assert all(20 < m["change_pct"] < 30 for m in doc["per_machine"])
    assert doc["commands"][-2].startswith("perflab bisect")


def test_ignored_regressions_are_not_filed_and_webhook_faults_are_one_line(
        tmp_path: Path, repo: tuple[Path, list[str]], hook: Any) -> None:
    r, commits = repo
    db = tmp_path / "r.sqlite"
    fill(db, commits, "alpha", 10, 1)
    cfg = tmp_path / "detect.toml"
    cfg.write_text('[[ignore]]\nbenchmark = "syn/*"\nreason = "known"\n')
    out = tmp_path / "reports"
    res = invoke("detect", "--db", str(db), "--config", str(cfg), "--report", str(out),
                 "--fail-on-regression")
    assert res.exit_code == 0 and list(out.glob("*.md")) == []
    # Nothing to file: said, not "posted 0 regression(s)" to a URL nobody listens on.
    res = invoke("detect", "--db", str(db), "--config", str(cfg), "--report", str(out),
                 "--webhook", "http://127.0.0.1:9/nothing-listens")
    assert res.exit_code == 0 and "posted 0" not in res.output
    assert f"no regression to file: nothing written in {out}, nothing posted to the webhook" \
        in " ".join(res.output.split())
    res = invoke("detect", "--db", str(db), "--webhook", "chat.example.org/hook")
    assert "is not an http(s) URL" in str(res.exception)  # refused before any work
    url, handler = hook
    handler.status = 403
    res = invoke("detect", "--db", str(db), "--report", str(out), "--webhook", url)
    assert res.exception is not None and "answered 403" in str(res.exception)
    assert len(list(out.glob("*.md"))) == 1  # written before the webhook refused
    res = invoke("detect", "--db", str(db), "--report", str(out), "--webhook",
                 "http://127.0.0.1:9/nothing-listens")
    assert "cannot reach the webhook" in str(res.exception)


def test_webhook_credentials_are_sent_not_printed_and_its_faults_say_what_failed(
        tmp_path: Path, repo: tuple[Path, list[str]], hook: Any) -> None:
    """A user and password in the webhook URL are sent as basic authentication (they used to be
    taken for part of the host name: "Name or service not known"); every line that names the
    URL shows its user, password and token-like query values as ***, and an unreachable host
    says what failed: the name not resolved, the connection refused."""
    r, commits = repo
    db = tmp_path / "r.sqlite"
    fill(db, commits, "alpha", 10, 1)
    url, handler = hook
    secret = url.replace("http://", "http://u:TOKEN1@") + "?token=SECRET2&room=7"
    res = invoke("detect", "--db", str(db), "--webhook", secret)
    assert res.exit_code == 0, res.output
    [got] = handler.received
    assert got["auth"] == "Basic " + base64.b64encode(b"u:TOKEN1").decode()
    assert got["path"] == "/hook?token=SECRET2&room=7"
    handler.status = 403
    res = invoke("detect", "--db", str(db), "--webhook", secret)
    port = url.split(":")[2].split("/")[0]
    assert str(res.exception) == (f"the webhook http://***@127.0.0.1:{port}/hook?token=***&room=7"
                                  " answered 403 Forbidden")
    for where, why in [("http://u:TOKEN1@no-such-host.invalid/h?api_key=SECRET2",
                        "could not resolve host no-such-host.invalid"),
                       ("https://u:TOKEN1@127.0.0.1:9/h?sig=SECRET2",
                        "connection refused by 127.0.0.1:9")]:
        res = invoke("detect", "--db", str(db), "--webhook", where)
        line = str(res.exception)
        assert line.startswith("cannot reach the webhook ") and why in line, line
        assert "TOKEN1" not in res.output + line and "SECRET2" not in res.output + line
    res = invoke("detect", "--db", str(db), "--webhook", "http://u:TOKEN1@host:port/h")
    assert "is not a valid URL" in str(res.exception) and "TOKEN1" not in str(res.exception)


def test_pasted_reproduce_commands_build_the_commits_and_give_the_same_verdict(
        tmp_path: Path, spin: Path) -> None:
    """A suite measured a program its build step makes (./prog is not in git): the report's
    commands, pasted into sh, compare every machine's stored pair again and make a worktree
    of each commit, BUILD it with the suite's build step, and compare them afresh; all say
    slower, as the stored results did.  Without the build lines ./prog would not exist."""
    import os
    import subprocess
    import sys

    from cli_helpers import verdicts_of
    from perflab.history.detect import ChangePoint
    from perflab.history.filing import commands, group
    from perflab.history.reproduce import db_arg
    from perflab.history.series import SeriesFilter, load_series

    r = new_repo(tmp_path / "repo")
    build = {"bench/build.sh": "cp prog.in ../prog && chmod +x ../prog\n"}
    (r / "bench").mkdir()
    suite = ('[suite]\nname = "s"\nbaseline = "prog"\nthreshold = 0.05\n'
             '[measure]\nruns = 12\nwarmup = 2\n[configurations.prog]\n'
             'command = ["./prog"]\nbuild = ["sh", "build.sh"]\n')
    fast = commit(r, "fast", {**build, "bench/s.toml": suite,
                              "bench/prog.in": f"#!/bin/sh\nexec {spin} 3000000\n"})
    slow = commit(r, "slow", {"bench/prog.in": f"#!/bin/sh\nexec {spin} 12000000\n"})
    db = tmp_path / "r.sqlite"
    store = Store(db)
    rng = np.random.default_rng(5)
    for machine in ("alpha", "beta"):
        for i, (c, mu) in enumerate(((fast, 0.003), (slow, 0.012))):
            rs = ResultSet(kind="suite", commit=c, repo=str(r), dirty=False, status="complete",
                           created_at=1000.0 + i,
                           fingerprint={"hostname": "h-" + machine, "machine_name": machine},
                           metrics={"task_clock": BUILTIN_METRICS["task_clock"]},
                           settings={"primary_metric": "task_clock",
                                     "comparison": {"threshold": 0.05},
                                     "suite": {"text": suite, "path": str(r / "bench/s.toml")}})
            cfg = Configuration(name="prog", command=["./prog"], benchmark="./prog")
            cfg.runs = [Run(seq=j, values={"task_clock": float(rng.normal(mu, mu * 0.01))})
                        for j in range(8)]
            rs.configurations.append(cfg)
            store.save(rs)
    found = []
    for s in load_series(store, SeriesFilter(metric="task_clock")):
        a, b = s.points
        found.append((s, ChangePoint(s.key, 1, a.commit, b.commit, a.result_id, b.result_id,
                                     300.0, a.median, 0.0, b.median, 0.0, 1e-6, True)))
    (reg,) = group(store, found)
    assert reg.build == "cd bench && sh build.sh"
    lines = commands(reg, None, db_arg(store))
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "200", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def sh(script: str) -> str:
        p = subprocess.run(["sh", "-ec", script], capture_output=True, text=True, env=env,
                           timeout=300, cwd=tmp_path)
        assert p.returncode == 0, f"{script}\n{p.stdout}\n{p.stderr}"
        return p.stdout

    stored = [ln for ln in lines if ln.startswith("perflab compare --from-db")]
    assert len(stored) == 2
    for ln in stored:
        verdicts = set(verdicts_of(sh(ln)).values())
        assert len(verdicts) == 1 and verdicts.pop().startswith("slower (regression"), ln
    at = lines.index("# a bisect between them, in a worktree of its own")
    fresh = lines[lines.index(stored[-1]) + 1:at]  # the worktrees, the builds, the compare
    assert fresh[1] == "BUILD='cd bench && sh build.sh'"
    # the suite's settings carried: its threshold, its run count and warm-up
    assert fresh[-1].startswith("perflab compare -m task_clock --threshold 0.05 --correction "
                                "holm --estimator trim --warmup 2 --runs 12 -n "), fresh[-1]
    out = sh("\n".join(fresh))
    assert verdicts_of(out)["task_clock"].startswith("slower"), out
    assert "12 runs per configuration" in " ".join(out.split()), out
    # each commit's worktree in a new private directory (mktemp -d under TMPDIR), built
    built = sorted(tmp_path.glob("tmp.*/prog"))
    assert len(built) == 2 and all(p.parent.stat().st_mode & 0o077 == 0 for p in built)
    sh("\n".join(fresh[:4]))  # pasted again into a new shell: new worktrees, built again
    assert len(list(tmp_path.glob("tmp.*/prog"))) == 3


def test_reproduce_lines_name_their_store_or_stop(tmp_path: Path) -> None:
    """Every reproduce line that reads the store names it: the default store's file too; a
    server's URL without its password; a URL whose query holds credentials is not printed,
    and the line stops with one line when PERFLAB_DB is unset (it used to read the reader's
    own store: another result of the same id)."""
    import subprocess

    from perflab.history.reproduce import db_arg, db_flag

    class At:
        def __init__(self, location: str, url: str = "") -> None:
            self.location, self.url = location, url

    assert db_arg(At(str(tmp_path / "results.sqlite"))) == str(tmp_path / "results.sqlite")
    url = "postgresql://perf:SECRET@db.lab:5432/perflab"
    assert db_arg(At("postgresql://***@db.lab:5432/perflab", url)) == \
        "postgresql://perf@db.lab:5432/perflab"
    hidden = At("postgresql://***@db.lab/perflab?sslpassword=***",
                "postgresql://perf@db.lab/perflab?sslpassword=SECRET")
    assert db_arg(hidden) is None
    line = "echo perflab report 5" + db_flag(None, hidden.location)
    assert "SECRET" not in line
    p = subprocess.run(["sh", "-c", line], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"})
    assert p.returncode != 0 and p.stdout == ""
    assert "set PERFLAB_DB to the store these results are in (postgresql://***@db.lab/" \
        in p.stderr
    p = subprocess.run(["sh", "-c", line], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "PERFLAB_DB": "postgresql://h/x"})
    assert p.stdout == "perflab report 5 --db postgresql://h/x\n"


@pytest.mark.unit
def test_a_reproduced_command_carries_its_environment() -> None:
    from perflab.history.reproduce import command_text

    assert command_text(["./p", "a b"], False) == "./p 'a b'"
    assert command_text(["./p", "a b"], False, {"WX": "1"}) == "env WX=1 ./p 'a b'"
    assert command_text(["./p a && ./q"], True, {"WX": "x y"}) == "export WX='x y'; ./p a && ./q"


@pytest.mark.unit
def test_a_side_runs_its_own_checkouts_build() -> None:
    """A command that pointed into the checkout it was measured in runs what each commit's
    own worktree built: its paths made relative to the checkout."""
    from perflab.history.reproduce import Side

    s = Side("c", ["/srv/tree/bin/prog", "--data=/srv/tree/d", "/srv/treeX/y", "/srv/tree"],
             False, {}, "/srv/tree/")
    assert s.text() == "./bin/prog --data=./d /srv/treeX/y ."
    assert Side("c", ["/srv/tree/p"], False, {}, None).text() == "/srv/tree/p"
