"""Git repositories for the tests that need commits (history, bisect, detect, dashboards):
one way to run git, to start a repository and to commit (imported as a plain module: `tests`
is on sys.path)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``: its stdout, stripped; a failing git fails the test."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def new_repo(repo: Path, user: str = "t") -> Path:
    """An empty repository at ``repo`` (created if missing) on branch main, committing as
    ``user``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", user)
    return repo


def commit(repo: Path, message: str, files: dict[str, str] | None = None) -> str:
    """Write ``files`` (path in the repository -> text), commit everything; the new sha."""
    for name, text in (files or {}).items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")
