"""A W^X study on a fleet, end to end (issue 20, "Done when"): a suite of builds main/pr x
configurations wx-off/wx-on submitted to three workers on a real PostgreSQL, and
`report --submission S --markdown` gives ONE table per metric (the time, maps_writable): a row
per machine with its OS, arch and CPU, per (build, configuration) the absolute value, the ratio
[CI] and the verdict; the HTML page has both metrics side by side in one."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from test_fleet import announce, cli, fleet_url, start_worker  # noqa: F401 - fixture

from cli_helpers import verdicts_of
from perflab.schema import fleet_jobs
from perflab.storage import Store

pytestmark = pytest.mark.system

# build -> spin's work; configuration -> writable mappings the program reports
BUILDS = {"main": 5_000_000, "pr": 10_000_000}
CONFIGS = {"wx-off": 1, "wx-on": 4}


def wx_suite(tmp_path: Path, spin: Path) -> Path:
    """The suite: every (build, configuration) a command of its own, named BUILD/CONFIG."""
    prog = tmp_path / "stubs"
    prog.write_text(f'#!/bin/sh\n{spin} "$1" > /dev/null && '
                    f'echo "{{\\"maps_writable\\": ${{WX_MAPS:-0}}}}"\n')
    prog.chmod(0o755)
    text = """\
[suite]
name = "wx-grid"
baseline = "main/wx-off"
primary = "task_clock"
metrics = ["task_clock", "maps_writable"]

[measure]
runs = 20   # from 20 runs the interval is widened for the correlation measured, not assumed
warmup = 0

[matrix]
kind = ["stub"]
"""
    for build, work in BUILDS.items():
        for config, maps in CONFIGS.items():
            # W^X on or off by an environment variable, as a runtime's switch often is
            text += (f'\n[configurations."{build}/{config}"]\n'
                     f"command = {json.dumps([str(prog), str(work)])}\n"
                     f'env = {{ WX_MAPS = "{maps}" }}\n')
    suite = tmp_path / "wx.toml"
    suite.write_text(text)
    return suite


def test_a_wx_suite_on_three_machines_is_one_markdown_table(fleet_url: str, spin: Path,  # noqa: F811
                                                            tmp_path: Path) -> None:
    machines = ["m1", "m2", "m3"]
    announce(fleet_url, *machines)
    sub = cli("fleet", "submit", "--all", "--db", fleet_url, "--", "run",
              str(wx_suite(tmp_path, spin)))
    assert sub.returncode == 0, sub.stderr
    submission = sub.stdout.split()[1].rstrip(":")
    workers = [start_worker(fleet_url, m) for m in machines]
    try:
        # Wait for the jobs, not for the workers to exit (an idle worker's exit was seen to
        # take minutes at load 40); then stop them as a supervisor would.
        assert wait_for_jobs(Store(fleet_url), submission, len(machines)) == ["done"] * 3
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                w.kill()
                w.communicate()

    rep = cli("report", "--submission", submission, "--db", fleet_url, "--markdown",
              "-m", "task_clock", "-m", "maps_writable", "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    md = rep.stdout
    # one table for the whole grid, one per metric
    grid = "### builds main, pr x configurations wx-off, wx-on [kind=stub] ({}); ratios " \
        "against main/wx-off"
    assert md.count("### ") == 2, md
    assert grid.format("task_clock") in md and grid.format("maps_writable") in md
    by: dict[str, dict[str, dict[str, str]]] = {}
    for part in md.split("\n### ")[1:]:
        lines = part.splitlines()
        metric = lines[0].split("(")[1].split(")")[0]
        cols = [c.strip() for c in next(ln for ln in lines if ln.startswith("| machine "))
                .strip("|").split(" | ")]
        by[metric] = {r["machine"]: r for r in (
            dict(zip(cols, (c.strip() for c in ln.strip("|").split(" | ")), strict=True))
            for ln in lines if ln.startswith("| m") and not ln.startswith("| machine "))}
    assert list(by["task_clock"]) == list(by["maps_writable"]) == machines
    for m in machines:
        r, maps = by["task_clock"][m], by["maps_writable"][m]
        assert r["arch"] == platform.machine() and r["OS"] not in ("", "?")
        assert r["CPU"] not in ("", "?")
        assert r["main/wx-off"].endswith("ms") and r["pr/wx-on"].endswith("ms")
        # twice the work: slower on every machine, about 2x
        assert r["pr/wx-off verdict"].startswith("slower"), md
        assert r["pr/wx-on verdict"].startswith("slower"), md
        assert 1.5 < float(r["pr/wx-off ratio [95% CI]"].split("x")[0]) < 2.5
        # the second metric: W^X on has 4 writable mappings, off has 1
        assert (maps["main/wx-off"], maps["main/wx-on"]) == ("1", "4")
        assert maps["main/wx-on verdict"].startswith("larger")
        assert maps["pr/wx-off verdict"].startswith("equivalent")
    assert "- pr/wx-off: slower on 3 of 3 machines" in md
    assert "report: " in rep.stderr
    page = (tmp_path / "rep" / "machines.html").read_text()
    assert page.count("<h2>") == 1 and page.count("<tr>") == 1 + len(machines)
    assert "<th>maps_writable pr/wx-on verdict</th>" not in page  # a verdict column is text
    assert "<th class='l'>maps_writable pr/wx-on verdict</th>" in page

    # Reproduce, for every machine: pasted into sh, its stored result judged again says what
    # the table says, and the fresh compare of pr/wx-off against main/wx-off is slower too.
    fenced = md.split("```sh\n")[1].split("```")[0].splitlines()
    for m in machines:
        (again,) = [ln for ln in fenced if ln.endswith(f"  # {m}")]
        assert again.startswith("perflab report ") and f"--db {fleet_url}" in again
        out = sh(again, tmp_path)
        assert "slower" in out and "pr/wx-off" in out
    head = next(i for i, ln in enumerate(fenced) if ln.startswith("# pr/wx-off vs main/wx-off"))
    assert fenced[head].endswith("; on m1, m2, m3")
    verdicts = verdicts_of(sh(fenced[head + 1], tmp_path))
    assert verdicts["task_clock"].startswith("slower"), verdicts
    # each configuration's own environment goes with its command
    head = next(i for i, ln in enumerate(fenced) if ln.startswith("# main/wx-on vs main/wx-off"))
    assert fenced[head + 1].endswith(f"'env WX_MAPS=1 {tmp_path}/stubs 5000000' "
                                     f"'env WX_MAPS=4 {tmp_path}/stubs 5000000'")
    out = sh(fenced[head + 1], tmp_path)
    store = Store(os.environ["PERFLAB_DB"])  # where the pasted compare stored its result
    fresh = store.load(max(store.result_ids()))
    assert [set(c.samples("maps_writable")) for c in fresh.configurations] == [{1}, {4}], out


def wait_for_jobs(store: Store, submission: str, n: int, timeout: float = 600) -> list[str]:
    """The states of the submission's ``n`` jobs once none is queued or running."""
    deadline = time.monotonic() + timeout
    while True:
        states = sorted(store.read(lambda c: c.execute(
            sa.select(fleet_jobs.c.state).where(fleet_jobs.c.submission == submission))
            .scalars().all()))
        if (len(states) == n and not {"queued", "running"} & set(states)) \
                or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def sh(line: str, cwd: Path) -> str:
    """A pasted line, run by sh with perflab on the PATH."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    p = subprocess.run(["sh", "-ec", line], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=300)
    assert p.returncode == 0, f"{line}\n{p.stdout}\n{p.stderr}"
    return p.stdout
