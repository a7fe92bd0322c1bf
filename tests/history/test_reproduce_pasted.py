"""The regression page's reproduce lines, pasted into sh, give back what the store says.

A fleet host measures each commit in its checkout at a fixed path, with an absolute command
(``stat --repo /srv/tree -- /srv/tree/prog``: a worker refuses relative programs).  The page's
lines must run each commit's own build on each side (they used to run the after commit's
binary twice: "-1.20% inconclusive" where the store said +14% slower, and bisect found bad
not slower than good), name the store they read, and make their worktrees in new private
directories (mktemp -d), never at a fixed name another user could make first."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import verdicts_of
from git_helpers import commit, git, new_repo

# Its verdicts come from real runs (the stored pair, the pasted compare, bisect): measured one
# test at a time (tests/tiers.py), as the other verdict tests are.
pytestmark = pytest.mark.measure

PROG = """int main(void) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < %dUL; i++) x += i;
    return 0;
}
"""
BUILD = "cc -O1 -o prog prog.c"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "COLUMNS": "200", "NO_COLOR": "1",
            "PERFLAB_DB": str(tmp_path / "reader.sqlite"),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


def _sh(script: str, env: dict[str, str], cwd: Path) -> str:
    p = subprocess.run(["sh", "-ec", script], capture_output=True, text=True, env=env,
                       timeout=600, cwd=cwd)
    assert p.returncode == 0, f"{script}\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


def _measure_at(tree: Path, rev: str, db: Path, env: dict[str, str]) -> None:
    """What a fleet worker stores for one commit: its checkout at a fixed path moved to the
    commit and built, the program measured by its absolute path, the checkout named as the
    repository (so every commit is one history series)."""
    git(tree, "checkout", "-q", "--detach", rev)
    subprocess.run(["sh", "-c", BUILD], cwd=tree, check=True)
    subprocess.run([sys.executable, "-m", "perflab", "stat", "--db", str(db), "--repo",
                    str(tree), "-m", "task_clock", "--runs", "40", "--", str(tree / "prog")],
                   check=True, capture_output=True, env=env, cwd=tree.parent, timeout=300)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_pasted_regression_page_reproduces_the_stored_verdict_and_bisects(
        tmp_path: Path) -> None:
    from perflab.history.detect import ChangePoint
    from perflab.history.filing import write_reports
    from perflab.history.series import SeriesFilter, load_series
    from perflab.storage import Store

    repo = new_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("prog\n")
    # The stored pair is two stat runs apart in time, not interleaved: a block of one side's runs
    # can go at half speed (the other vCPU busy: two modes, lag-1 near 0.8, the CI widened about
    # 3x), which can leave a 3x step inconclusive; a 9x step stays clear of it.
    good = commit(repo, "fast", {"prog.c": PROG % 3_000_000})
    quiet = commit(repo, "a comment", {"README": "nothing that runs\n"})
    bad = commit(repo, "9x the loop", {"prog.c": PROG % 27_000_000})
    (tmp_path / "tmp").mkdir()
    env = _env(tmp_path)
    tree, db = tmp_path / "host" / "checkout", tmp_path / "fleet.sqlite"
    git(repo, "worktree", "add", "-q", "--detach", str(tree), good)
    for rev in (good, bad):  # the fleet measured the two ends of the range
        _measure_at(tree, rev, db, env)
    store = Store(db)
    [s] = load_series(store, SeriesFilter(metric="task_clock"))
    a, b = s.points
    assert (a.commit, b.commit) == (good, bad)
    cp = ChangePoint(s.key, 1, a.commit, b.commit, a.result_id, b.result_id, 200.0, a.median,
                     0.0, b.median, 0.0, 1e-6, True)
    [(page, doc)] = write_reports(store, [(s, cp)], tmp_path / "reports", repo)
    md = page.read_text()
    block = md.split("```sh\n", 2)[2].split("\n```", 1)[0].splitlines()  # the last fence
    assert block == doc["commands"]
    assert "perflab-" not in "\n".join(block) and "mktemp -d" in "\n".join(block)

    # Pasted whole into one sh (the stored pair read from the store its line names, the
    # reader's own being empty; a fresh compare of the two commits, each built in a new
    # worktree, each side running its own binary; a bisect in a worktree of its own; the
    # worktrees removed), a marker echoed before each part to read its output apart.
    [stored] = [ln for ln in block if ln.startswith("perflab compare --from-db")]
    assert f"--db {db}" in stored
    at = block.index(next(ln for ln in block if ln.startswith("# a bisect")))
    start = block.index(stored)
    script = ["echo @@stored", *block[:at], "echo @@bisect", *block[at:-1], "echo @@done",
              block[-1].removeprefix("# when done: ")]
    script.insert(script.index(stored) + 1, "echo @@fresh")
    # The stored command pointed into the measuring checkout, the same path for both commits:
    # gone now, so only each commit's own new build can be measured.
    shutil.rmtree(tree.parent)
    git(repo, "worktree", "prune")
    run = {**env, "BUILD": BUILD}  # stat stored no build command: the page asks for BUILD
    out = _sh("\n".join(script), run, tmp_path)
    parts = dict(p.split("\n", 1) for p in out.split("@@")[1:])
    assert start > 0 and verdicts_of(parts["stored"])["task_clock"].startswith("slower"), out
    assert verdicts_of(parts["fresh"])["task_clock"].startswith("slower"), parts["fresh"]
    # bisect: bad is slower than good, and the third commit (not the quiet one between) named
    named = re.findall(r"first bad commit:\s+(\w+)", parts["bisect"])
    assert named and set(named) == {bad} and quiet not in named, parts["bisect"]
    # the reader's repository keeps no worktree of these lines once removed as they say
    assert git(repo, "worktree", "list").count("\n") == 0
