"""Git helpers: the commit a result measured, revision names, commit order.

Plain ``git`` subprocess calls (no GitPython): perflab only needs a handful of plumbing
commands, and the user's own git is the one whose config and hooks they expect.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from perflab.errors import PerflabError


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if shutil.which("git") is None:
        raise PerflabError("git is not installed", "install git (apt-get install git)")
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise PerflabError(f"git {' '.join(args)} failed in {repo}: {msg[-1] if msg else '?'}",
                           "check the repository path and the revision names")
    return proc


def toplevel(repo: Path | None) -> Path | None:
    """The work tree's top directory, or None when ``repo`` is not inside a git work tree."""
    where = Path(repo) if repo is not None else Path.cwd()
    if not where.exists() or shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.strip())


def git_state(repo: Path | None = None, rev: str | None = None
              ) -> tuple[str | None, bool | None, str | None]:
    """(commit, dirty, repo) of the code measured.

    ``repo`` None: the current directory, and (None, None, None) when it is not a git work tree
    (measuring a system binary from /tmp is fine).  An explicit ``repo`` must be a work tree.
    ``rev``: a revision measured from a build elsewhere (--commit): resolved in ``repo``, and
    ``dirty`` is then unknown (None) because the build's tree is not this one.
    """
    top = toplevel(repo)
    if top is None:
        if repo is not None:
            raise PerflabError(f"{repo} is not a git work tree",
                               "pass --repo with the repository the measured code was built from")
        if rev is not None:
            # A bare commit id with no repository to check it against: keep it as given.
            return rev, None, None
        return None, None, None
    if rev is not None:
        return resolve(top, rev), None, str(top)
    head = subprocess.run(["git", "-C", str(top), "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode != 0:  # a fresh repository without commits
        return None, None, str(top)
    return head.stdout.strip(), has_changes(top), str(top)


def resolve(repo: Path, rev: str) -> str:
    """Full commit id of ``rev``, or one clear error naming the bad revision."""
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q",
                           f"{rev}^{{commit}}"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise PerflabError(f"'{rev}' is not a commit in {repo}",
                           "give a branch, tag or commit id that 'git log' shows")
    return proc.stdout.strip()


def has_changes(repo: Path) -> bool:
    """Whether tracked files of ``repo`` differ from HEAD (untracked files do not count)."""
    return bool(_git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip())


def head(repo: Path) -> str:
    """The full commit id checked out in ``repo``."""
    return _git(repo, "rev-parse", "HEAD").stdout.strip()


def checkout(repo: Path, commit: str) -> None:
    """Check ``commit`` out in ``repo`` on a detached HEAD."""
    _git(repo, "checkout", "-q", "--detach", commit)


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def subject(repo: Path, commit: str) -> str:
    return _git(repo, "log", "-1", "--format=%s", commit, check=False).stdout.strip()


def topo_index(repo: Path) -> dict[str, int]:
    """Position of every commit of ``repo`` in git's topological order (oldest first)."""
    out = _git(repo, "rev-list", "--topo-order", "--reverse", "--all").stdout.split()
    return {c: i for i, c in enumerate(out)}


def short(commit: str | None) -> str:
    return commit[:10] if commit else "-"


def log_oneline(repo: Path, before: str, after: str) -> list[str]:
    """``git log --oneline before..after``: the commits a change point's range holds (a failed
    log is one line saying so, for a report that should still be written)."""
    p = _git(repo, "log", "--oneline", "--no-decorate", f"{before}..{after}", check=False)
    if p.returncode != 0:
        return [f"(git log failed: {p.stderr.strip().splitlines()[0] if p.stderr else '?'})"]
    return p.stdout.splitlines()


def bisect(repo: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``git bisect ARGS`` in ``repo``; unchecked by default: bisect's exit codes carry its
    answers (``check=True`` for ``start``, whose failure is an error)."""
    return _git(repo, "bisect", *args, check=check)
