"""Directories and files perflab keeps for itself outside the user's output folder: the
launcher's cache, a fleet worker's job logs.

A directory is trusted when it is owned by the user (or root) and writable by no one else; one
perflab makes is made 0700.  A file in it is opened through the directory's descriptor and
without following a symbolic link (``O_NOFOLLOW``), so a link or a directory swapped in after
the check cannot send perflab's writes to another file.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import TYPE_CHECKING

from perflab.errors import PerflabError

if TYPE_CHECKING:  # annotations only: perflab.cli.helpcache reads here without pathlib
    from pathlib import Path


def why_unsafe(st: os.stat_result, path: Path | str, what: str) -> str:
    """'' when ``st`` (of ``path``) is owned by us (or root) and not writable by group or
    others; else why not."""
    if stat.S_ISLNK(st.st_mode):
        return f"{what} {path} is a symbolic link"
    if st.st_uid not in (os.geteuid(), 0):
        return f"{what} {path} is owned by uid {st.st_uid}, not by you"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} {path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def open_private_dir(path: Path, what: str, fix: str) -> int:
    """A descriptor of the directory ``path`` (made 0700 with its parents when missing), checked
    to be private: a symbolic link, another user's directory or one others may write is
    refused with a PerflabError naming it and ``fix``.  The caller closes it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with_dir = True
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            with_dir = False
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise PerflabError(f"{what} {path} is a symbolic link, not a directory of yours",
                               fix) from None
        raise PerflabError(f"cannot create {what} {path} ({e.strerror})", fix) from None
    unsafe = why_unsafe(os.fstat(fd), path, what)
    if unsafe:
        os.close(fd)
        raise PerflabError(unsafe, fix)
    if with_dir or os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, 0o700)  # ours: what is written here is for this user alone
    return fd


def append_private(dir_fd: int, name: str) -> tuple[int, str]:
    """An append-only descriptor of the regular file ``name`` in the private directory
    ``dir_fd`` (made 0600 when missing), and '' or a note when something else stood under that
    name (a symbolic link, a FIFO, a hard link to another file): it is renamed aside, never
    followed or written."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
             | os.O_CLOEXEC)
    try:
        fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise
        fd = -1
    if fd >= 0:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and not why_unsafe(st, name, ""):
            os.set_blocking(fd, True)
            return fd, ""
        os.close(fd)
    aside = f"{name}.aside-{time.time_ns()}"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    fd = os.open(name, flags | os.O_EXCL, 0o600, dir_fd=dir_fd)
    os.set_blocking(fd, True)
    return fd, (f"{name} was not a file of perflab's own (a link or a special file): "
                f"moved to {aside}")
