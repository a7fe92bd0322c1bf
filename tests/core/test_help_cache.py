"""A help text kept once typer printed it (perflab.cli.helpcache): printed again byte for byte
without typer, under a key that changes with perflab's sources, the terminal and the
environment rich and typer read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import perflab
from perflab.cli import helpcache

pytestmark = pytest.mark.system

# perflab's entry point in a fresh process; prints the exit code and whether typer was loaded
# on stderr's last line, after the help on stdout.
ENTRY = """
import json, sys
from perflab.cli import main
try:
    main(sys.argv[1:])
    code = 0
except SystemExit as e:
    code = e.code or 0
sys.stdout.flush()
print(json.dumps([code, "typer" in sys.modules]), file=sys.stderr)
"""


def _perflab(args: list[str], cache: Path, *, pythonpath: Path | None = None,
             **env: str) -> tuple[int, bool, str]:
    """(exit code, typer loaded, stdout) of ``perflab ARGS`` with its cache in ``cache``."""
    environ = {k: v for k, v in os.environ.items() if k != "PERFLAB_HELP_CACHE"}
    environ.update({"PERFLAB_CACHE": str(cache), "COLUMNS": "100", **env})
    if pythonpath is not None:
        environ["PYTHONPATH"] = str(pythonpath)
    r = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                       env=environ, stdin=subprocess.DEVNULL)
    code, typer_loaded = json.loads(r.stderr.strip().splitlines()[-1])
    return code, typer_loaded, r.stdout


def _kept(cache: Path) -> list[str]:
    folder = cache / "help"
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.mark.parametrize("args,code", [
    (["--help"], 0), (["-h"], 0), ([], 2), (["stat", "--help"], 0),
    (["results", "list", "--help"], 0), (["fleet", "-h"], 0),
])
def test_a_kept_help_is_typers_own_text(tmp_path: Path, args: list[str], code: int) -> None:
    typers = _perflab(args, tmp_path, PERFLAB_HELP_CACHE="0")
    assert typers[0] == code and typers[1] and "Usage" in typers[2]
    assert _kept(tmp_path) == []  # turned off: nothing kept
    first = _perflab(args, tmp_path)
    assert first == typers  # printed by typer, and kept
    assert len(_kept(tmp_path)) == 1
    again = _perflab(args, tmp_path)
    assert again == (code, False, typers[2])  # the same bytes and code, without typer


def test_another_width_is_another_text(tmp_path: Path) -> None:
    narrow = _perflab(["--help"], tmp_path, COLUMNS="60")
    wide = _perflab(["--help"], tmp_path, COLUMNS="120")
    assert narrow[1] and wide[1]  # both drawn by typer: the width is in the key
    assert narrow[2] != wide[2]
    assert _perflab(["--help"], tmp_path, COLUMNS="60") == (0, False, narrow[2])
    assert len(_kept(tmp_path)) == 2


def test_an_error_is_not_kept(tmp_path: Path) -> None:
    code, typer_loaded, _ = _perflab(["no-such-verb", "--help"], tmp_path)
    assert code == 2 and typer_loaded
    assert _kept(tmp_path) == []
    assert _perflab(["no-such-verb", "--help"], tmp_path)[:2] == (2, True)


def test_an_edit_of_perflab_makes_typer_draw_it_again(tmp_path: Path) -> None:
    """A copy of the package: its help kept, then one verb's summary edited in its sources;
    the next --help is typer's, with the new text."""
    src = tmp_path / "src"
    shutil.copytree(Path(perflab.__file__).parent, src / "perflab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    before = _perflab(["--help"], cache, pythonpath=src)
    assert _perflab(["--help"], cache, pythonpath=src) == (0, False, before[2])
    verbs = src / "perflab" / "cli" / "verbs.py"
    text = verbs.read_text()
    assert "Stored results: list and show." in text
    verbs.write_text(text.replace("Stored results: list and show.", "Stored results: EDITED."))
    after = _perflab(["--help"], cache, pythonpath=src)
    assert after[1] and "EDITED" in after[2] and "EDITED" not in before[2]
    assert _perflab(["--help"], cache, pythonpath=src) == (0, False, after[2])


@pytest.mark.unit
def test_the_key_follows_sources_words_and_environment(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    root = str(tmp_path)
    base = helpcache.key(["--help"], root)
    assert helpcache.key(["--help"], root) == base
    assert helpcache.key(["stat", "--help"], root) != base
    monkeypatch.setenv("NO_COLOR", "1")
    assert helpcache.key(["--help"], root) != base
    monkeypatch.delenv("NO_COLOR")
    assert helpcache.key(["--help"], root) == base
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    os.utime(tmp_path / "sub" / "b.py", ns=(1, 1))
    assert helpcache.key(["--help"], root) != base


@pytest.mark.unit
@pytest.mark.parametrize("args,expected", [
    ([], True), (["--help"], True), (["-h"], True), (["results", "show", "--help"], True),
    (["stat", "-r", "1", "--help"], False), (["--version", "--help"], False),
    (["a", "b", "c", "--help"], False), (["stat"], False), (["--fleet-job", "f", "--help"], False),
])
def test_what_is_a_help_request(args: list[str], expected: bool,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFLAB_HELP_CACHE", raising=False)
    monkeypatch.delenv("_PERFLAB_COMPLETE", raising=False)
    assert helpcache.cacheable(args) is expected


@pytest.mark.unit
def test_the_cache_directory_is_platformdirs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("PERFLAB_CACHE", raising=False)
    for xdg in (None, "/tmp/somewhere"):
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert Path(helpcache.cache_dir()) == Path(platformdirs.user_cache_dir("perflab"))


@pytest.mark.unit
def test_a_cache_others_may_write_is_not_read(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path))
    helpcache.write(b"k", 0, b"kept\n")
    assert helpcache.read(b"k") == (0, b"kept\n")
    assert helpcache.read(b"another key") is None
    # a file whose name is another key's (CRC-32 may collide): the key inside decides
    os.link(tmp_path / "help" / helpcache.file_name(b"k"),
            tmp_path / "help" / helpcache.file_name(b"x"))
    assert helpcache.read(b"x") is None
    os.chmod(tmp_path / "help", 0o777)
    assert helpcache.read(b"k") is None
