"""perflab.private: the directories and files perflab keeps for itself are private, and a file
in them is never written through a link or into a FIFO or another file's hard link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.private import append_private, open_private_dir

pytestmark = pytest.mark.unit


def test_a_new_directory_is_made_0700_and_an_open_one_of_ours_is_tightened(
        tmp_path: Path) -> None:
    fd = open_private_dir(tmp_path / "a" / "logs", "the logs", "fix it")
    os.close(fd)
    assert (tmp_path / "a" / "logs").stat().st_mode & 0o777 == 0o700
    shared_read = tmp_path / "b"
    shared_read.mkdir(mode=0o755)
    shared_read.chmod(0o755)
    os.close(open_private_dir(shared_read, "the logs", "fix it"))
    assert shared_read.stat().st_mode & 0o777 == 0o700


def test_a_writable_directory_is_refused_with_its_fix(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    d.chmod(0o1777)
    with pytest.raises(PerflabError) as e:
        open_private_dir(d, "the logs", "remove it")
    assert e.value.line() == f"the logs {d} is writable by other users (mode 1777) -- remove it"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "hardlink"])
def test_what_stands_under_a_files_name_is_moved_aside(tmp_path: Path, kind: str) -> None:
    d = tmp_path / "logs"
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    dir_fd = open_private_dir(d, "the logs", "")
    if kind == "symlink":
        (d / "job-1.log").symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(d / "job-1.log")
    else:
        os.link(victim, d / "job-1.log")
    try:
        fd, note = append_private(dir_fd, "job-1.log")  # a FIFO would block without O_NONBLOCK
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "ab") as f:
        f.write(b"job output\n")
    assert victim.read_text() == "precious\n"
    assert (d / "job-1.log").read_text() == "job output\n" and "moved to job-1.log.aside-" in note
    assert len(list(d.iterdir())) == 2


def test_a_file_of_its_own_is_appended_to(tmp_path: Path) -> None:
    dir_fd = open_private_dir(tmp_path / "logs", "the logs", "")
    for text in (b"one\n", b"two\n"):
        fd, note = append_private(dir_fd, "job-1.log")
        with os.fdopen(fd, "ab") as f:
            f.write(text)
        assert note == ""
    os.close(dir_fd)
    log = tmp_path / "logs" / "job-1.log"
    assert log.read_text() == "one\ntwo\n" and log.stat().st_mode & 0o777 == 0o600
