"""Security: the launcher binary perflab runs every measured command through is found in a
cache directory (PERFLAB_CACHE / XDG_CACHE_HOME).  perflab trusts it only when the directory and
the file are its user's (or root's), writable by nobody else, and the binary's hash is the one
recorded when perflab built it; otherwise it rebuilds it, or refuses a shared directory in one
line.  A planted binary is never executed."""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

import pytest

from faults.helpers import Perflab, script

pytestmark = pytest.mark.system

QUICK = ("-r", "2", "-w", "0", "--no-counters", "--", "/bin/true")


def launcher_name() -> str:
    src = resources.files("perflab").joinpath("data/perflab-launch.c").read_bytes()
    return f"perflab-launch-{hashlib.sha256(src).hexdigest()[:12]}"


def plant(cache: Path, marker: Path) -> Path:
    """A 'launcher' that would prove it ran by creating ``marker``."""
    cache.mkdir(mode=0o700, exist_ok=True)
    exe = cache / launcher_name()
    script(exe, f'touch "{marker}"\nexit 0\n')
    return exe


def test_planted_launcher_without_a_hash_is_rebuilt(perflab: Perflab, tmp_path: Path) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    exe = plant(cache, marker)
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    assert not marker.exists(), "the planted binary ran"
    assert exe.read_bytes()[:4] == b"\x7fELF"  # replaced by a real build
    assert perflab.counts().runs == 2


def test_planted_launcher_with_a_forged_hash_file_for_another_binary(
        perflab: Perflab, tmp_path: Path) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()  # a genuine build
    exe = cache / launcher_name()
    script(exe, f'touch "{marker}"\nexit 0\n')  # swapped after the build; hash file kept
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    assert not marker.exists(), "a binary whose hash does not match ran"
    assert perflab.counts().runs == 4


def test_group_writable_launcher_is_rebuilt(perflab: Perflab, tmp_path: Path) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    exe = cache / launcher_name()
    exe.chmod(0o775)
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    assert exe.stat().st_mode & 0o022 == 0
    assert not marker.exists()


def test_launcher_owned_by_another_user_is_rebuilt(perflab: Perflab, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a file to another user")
    cache, marker = tmp_path / "cache", tmp_path / "PWNED"
    exe = plant(cache, marker)
    os.chown(exe, 65534, 65534)
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    assert not marker.exists()
    assert exe.stat().st_uid == os.geteuid()


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770], ids=["world", "sticky-world", "group"])
def test_shared_writable_cache_directory_is_refused(perflab: Perflab, tmp_path: Path,
                                                    mode: int) -> None:
    cache, marker = tmp_path / "shared", tmp_path / "PWNED"
    plant(cache, marker)
    cache.chmod(mode)
    out = perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)})
    out.fails(2, "cache directory", "writable by other users", fix="PERFLAB_CACHE")
    assert not marker.exists()
    assert perflab.counts().runs == 0


def test_xdg_cache_home_is_checked_too(perflab: Perflab, tmp_path: Path) -> None:
    xdg, marker = tmp_path / "xdg", tmp_path / "PWNED"
    xdg.mkdir()
    cache = xdg / "perflab"
    plant(cache, marker)
    cache.chmod(0o777)
    out = perflab("stat", *QUICK, env={"PERFLAB_CACHE": None, "XDG_CACHE_HOME": str(xdg)})
    out.fails(2, "writable by other users", fix="chmod go-w")
    assert not marker.exists()
    assert perflab.counts().runs == 0


def test_cache_directory_owned_by_another_user_is_refused(perflab: Perflab,
                                                          tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a directory to another user")
    cache, marker = tmp_path / "theirs", tmp_path / "PWNED"
    plant(cache, marker)
    os.chown(cache, 65534, 65534)
    out = perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)})
    out.fails(2, "owned by uid 65534", fix="PERFLAB_CACHE")
    assert not marker.exists()
    assert perflab.counts().runs == 0


def test_fresh_cache_directory_is_private(perflab: Perflab, tmp_path: Path) -> None:
    cache = tmp_path / "new" / "cache"
    perflab("stat", *QUICK, env={"PERFLAB_CACHE": str(cache)}).succeeds()
    assert cache.stat().st_mode & 0o077 == 0
    exe = cache / launcher_name()
    sums = Path(f"{exe}.sha256")
    assert sums.read_text().strip() == hashlib.sha256(exe.read_bytes()).hexdigest()
