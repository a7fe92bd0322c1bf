"""The CLI starts without loading the heavy libraries; its verb table matches the stages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.cli import VERBS, stage_group
from perflab.model import Configuration, Fingerprint, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.system

HEAVY = ("matplotlib", "scipy", "sqlalchemy", "numpy", "ruptures", "otava")

PROBE = """
import json, sys
{code}
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(code: str) -> set[str]:
    """The modules loaded by code, by full name and by top-level package (scipy.stats, scipy)."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(code=code)], capture_output=True,
                         text=True, check=True).stdout
    names = set(json.loads(out.strip().splitlines()[-1]))
    return names | {m.split(".")[0] for m in names}


@pytest.mark.parametrize("code", [
    "import perflab.cli",
    "from perflab.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass",
    "from perflab.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
])
def test_cli_start_loads_no_heavy_module(code: str) -> None:
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_version_loads_no_command_line_library() -> None:
    """`perflab --version` is answered before typer, click, rich and pydantic load (they cost
    6-10 times Python's own start-up); the version printed is the package's."""
    from perflab import __version__

    probe = "from perflab.cli import main\nmain(['--version'])"
    out = subprocess.run([sys.executable, "-c", PROBE.format(code=probe)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == f"perflab {__version__}"
    loaded = set(json.loads(out[-1]))
    assert "perflab.cli" in loaded  # the probe did run the entry point
    assert not {m.split(".")[0] for m in loaded} & {"typer", "click", "rich", "pydantic"}
    # anything beside --version is the typer application's (it loads typer)
    assert "typer" in _modules_after(
        "from perflab.cli import main\ntry:\n    main(['--version', '--help'])\n"
        "except SystemExit:\n    pass")


def test_the_collector_runs_rarely_while_perflab_loads() -> None:
    """main raises the cyclic collector's first threshold before typer and the stages load
    (collecting their long-lived objects over and over cost 12-15% of a short verb's CPU)."""
    from perflab.cli import GC_YOUNG

    probe = ("import gc\nfrom perflab.cli import main\ntry:\n    main(['--help'])\n"
             "except SystemExit:\n    pass\nprint(gc.get_threshold()[0], gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[-1] == f"{GC_YOUNG} True"


VERB_HELP = """
import contextlib, io
from perflab.cli import main, stage_group, VERBS
module = VERBS[{verb!r}][0]
cmd = stage_group(module).get_command(None, {verb!r})
subs = [[s] for s in getattr(cmd, "commands", {{}})]
for sub in [[]] + subs:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([{verb!r}, *sub, "--help"])
        except SystemExit as e:
            assert e.code in (0, None), (sub, e.code)
    assert "Usage" in out.getvalue(), sub
"""


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_verb_help_loads_no_heavy_module(verb: str) -> None:
    """`perflab stat --help` took 2.4 s (numpy, scipy and SQLAlchemy loaded at import of the
    stage); a verb's help, and its sub-verbs', must not load them."""
    loaded = _modules_after(VERB_HELP.format(verb=verb))
    assert not loaded & set(HEAVY), (verb, sorted(loaded & set(HEAVY)))


def test_a_verb_loads_its_stage(tmp_path: Path) -> None:
    # the check above is not vacuous: running a verb does load what it needs (a listing of a
    # store not made yet is perflab.storage's, which makes it)
    db = tmp_path / "new" / "x.sqlite"
    loaded = _modules_after("from perflab.cli import main\ntry:\n    main(['results', 'list', "
                            f"'--db', {str(db)!r}])\nexcept SystemExit:\n    pass")
    assert "sqlalchemy" in loaded and db.is_file()


def test_the_listing_of_a_sqlite_store_loads_no_sqlalchemy(tmp_path: Path) -> None:
    """`results list` of a current SQLite store is read with sqlite3 (perflab.quickread):
    SQLAlchemy's import alone cost 1.3 times numpy's."""
    db = tmp_path / "r.sqlite"
    Store(db).engine.dispose()
    probe = ("from perflab.cli import main\ntry:\n    main(['results', 'list', '--db', "
             f"{str(db)!r}])\nexcept SystemExit:\n    pass")
    assert not _modules_after(probe) & {"sqlalchemy", "numpy", "perflab.model"}


def test_a_stored_result_of_a_sqlite_store_shows_without_sqlalchemy(tmp_path: Path) -> None:
    """`results show` of a current SQLite store reads it with sqlite3 too (perflab.quickread);
    it does load the statistics it judges with."""
    db = tmp_path / "r.sqlite"
    rs = ResultSet(kind="stat", status="complete", fingerprint={"hostname": "h"})
    cfg = Configuration(name="a", command=["a"], benchmark="a")
    cfg.runs = [Run(seq=i, values={"wall_time": 1.0 + i / 100}) for i in range(8)]
    rs.configurations.append(cfg)
    rid = Store(db).save(rs)
    probe = ("from perflab.cli import main\ntry:\n    main(['results', 'show', "
             f"'{rid}', '--db', {str(db)!r}])\nexcept SystemExit:\n    pass")
    loaded = _modules_after(probe)
    assert "sqlalchemy" not in loaded and {"numpy", "perflab.stats"} <= loaded


@pytest.mark.unit
def test_verb_table_matches_what_the_stages_register() -> None:
    by_module: dict[str, set[str]] = {}
    for verb, (module, _) in VERBS.items():
        by_module.setdefault(module, set()).add(verb)
    for module, verbs in by_module.items():
        group = stage_group(module)
        assert set(group.list_commands(None)) == verbs, module  # type: ignore[arg-type]
        for verb in verbs:
            real = group.get_command(None, verb)  # type: ignore[arg-type]
            assert real is not None
            want = real.get_short_help_str(limit=400)
            assert VERBS[verb][1] == want, (verb, want)


VERB_RUN = """
import os
os.environ["PERFLAB_DB"] = {db!r}
from perflab.cli import main
for argv in {argvs!r}:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code in (0, None), (argv, code)
"""


def test_a_single_run_and_the_listing_load_no_scipy_nor_matplotlib(tmp_path: Path) -> None:
    """`perflab stat -r 1 -w 0 -- true` took 4.9-7.0 s at load 3, mostly importing scipy.stats
    (issue 25): one run computes no interval, and listing results computes nothing.  A command
    (not a workload) reads no workload manifest, so tomllib is not loaded either."""
    db = tmp_path / "r.sqlite"
    loaded = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["stat", "-r", "1", "-w", "0", "--", "true"], ["results", "list"]]))
    assert "perflab" in loaded and Store(db).result_ids() == [1]
    unneeded = {"scipy", "matplotlib", "tomllib"}
    assert not loaded & unneeded, sorted(loaded & unneeded)



def test_a_stat_into_a_current_sqlite_store_loads_no_sqlalchemy(tmp_path: Path) -> None:
    """`stat` and `compare` write a current SQLite store with sqlite3 (perflab.quickwrite):
    SQLAlchemy's import was a fifth of `stat -r 1`'s CPU.  A new store is perflab.storage's,
    which makes it; what the second call wrote is read back by it."""
    db = tmp_path / "r.sqlite"
    first = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["stat", "-r", "1", "-w", "0", "--", "true"]]))
    assert "sqlalchemy" in first  # the check below is not vacuous
    loaded = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["stat", "-r", "2", "-w", "0", "--", "true"],
        ["compare", "-r", "2", "-w", "0", "--", "true", "true 1"]]))
    assert "perflab.quickwrite" in loaded and "sqlalchemy" not in loaded
    store = Store(db)
    assert store.result_ids() == [1, 2, 3]
    second, third = store.load(2), store.load(3)
    assert second.status == third.status == "complete"
    assert [len(c.measured_runs()) for c in second.configurations + third.configurations] == [
        2, 2, 2]
    # the primary metric chosen by the first result is reused, as perflab.storage reads it
    assert second.settings.primary_choice is not None
    assert second.settings.primary_choice.from_result == 1

def test_a_stat_with_its_median_ci_loads_no_scipy(tmp_path: Path) -> None:
    """The median's CI is order statistics at binomial ranks, computed in exact integers: a
    `stat` of 8 runs, its `results show` and its `report --no-plots` load no scipy at all."""
    db = tmp_path / "r.sqlite"
    loaded = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["stat", "-r", "8", "-w", "0", "--", "true"], ["results", "show", "1"],
        ["report", "1", "--no-plots", "--out", str(tmp_path / "rep")]]))
    assert (tmp_path / "rep" / "index.html").exists()
    from perflab.stats import summarize

    got = summarize(Store(db).load(1).configurations[0].samples("wall_time"))
    assert got.n == 8 and got.ci_low < got.ci_high  # there was an interval to compute
    assert not loaded & {"scipy", "matplotlib"}, sorted(loaded & {"scipy", "matplotlib"})


def test_fleet_status_and_submit_load_no_numerics_nor_sqlalchemy(pg_url: str) -> None:
    """`fleet status` and `fleet submit` read the queue through psycopg alone (fleet.conn) and
    compute nothing: no numpy, scipy or matplotlib, and no SQLAlchemy (whose import costs more
    CPU than numpy's); submit loads procrastinate, whose queue it writes to."""
    from perflab.fleet.queue import fleet_store, init
    from perflab.fleet.worker import announce

    init(pg_url)
    announce(fleet_store(pg_url), "m", [], Fingerprint(hostname="h", cpu_model="c"))
    heavy = {"numpy", "scipy", "matplotlib", "sqlalchemy"}
    loaded = _modules_after(VERB_RUN.format(db=pg_url, argvs=[["fleet", "status"]]))
    assert "psycopg" in loaded  # it did read the queue, procrastinate's table too
    assert not loaded & (heavy | {"procrastinate"}), sorted(loaded & (heavy | {"procrastinate"}))
    loaded = _modules_after(VERB_RUN.format(db=pg_url, argvs=[
        ["fleet", "submit", "-M", "m", "--", "stat", "-r", "2", "--", "/bin/true"],
        ["fleet", "status"]]))
    assert "procrastinate" in loaded  # it did queue the job
    assert not loaded & heavy, sorted(loaded & heavy)


def test_results_and_report_no_plots_load_no_matplotlib_nor_scipy_stats(tmp_path: Path) -> None:
    """A compare, its `results show` and `report --no-plots` draw nothing: no matplotlib (0.3 s
    of import, more on a busy machine); a report with its plots does load it."""
    db = tmp_path / "r.sqlite"
    out = tmp_path / "rep"
    loaded = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["compare", "-r", "6", "-w", "0", "--", "true", "sleep 0.001"], ["results", "show", "1"],
        ["results", "list"], ["report", "1", "--no-plots", "--out", str(out)]]))
    assert (out / "index.html").exists()
    assert "matplotlib" not in loaded
    # Nor scipy.stats (0.35 s; issue 25): the t quantiles come from scipy.special, the median's
    # CI and Benjamini-Hochberg from perflab.stats itself.
    assert "scipy.special" in loaded  # full names are seen: the check below is not vacuous
    assert not {m for m in loaded if m.startswith("scipy.stats")}
    loaded = _modules_after(VERB_RUN.format(db=str(db), argvs=[
        ["report", "1", "--out", str(tmp_path / "rep2")]]))
    assert "matplotlib" in loaded  # the check above is not vacuous


def test_shell_completion_names_verbs_and_options() -> None:
    """Completion was switched off (issue 25): `perflab --install-completion` installs it for
    the shell; this is what bash asks it."""
    import os
    import shutil

    exe = shutil.which("perflab", path=str(Path(sys.executable).parent)) or "perflab"

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_PERFLAB_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        out = subprocess.run([exe], env=env, capture_output=True, text=True, check=True)
        return out.stdout.split()

    assert complete("perflab st") == ["stat"]
    assert "--threshold" in complete("perflab compare --thr")
    assert complete("perflab results s") == ["show"]


def _help_pages() -> list[list[str]]:
    """Every verb and sub-verb, as its command line: [], ["stat"], ["results", "list"], ..."""
    pages: list[list[str]] = [[]]
    for verb, (module, _) in VERBS.items():
        cmd = stage_group(module).get_command(None, verb)  # type: ignore[arg-type]
        pages += [[verb]] + [[verb, sub] for sub in getattr(cmd, "commands", {})]
    return pages


@pytest.mark.unit
@pytest.mark.parametrize("page", _help_pages(), ids=" ".join)
def test_help_shows_no_placeholder_beside_a_flag(page: list[str]) -> None:
    from cli_helpers import invoke

    res = invoke(*page, "--help")
    assert res.exit_code == 0 and "Usage" in res.output, res.output
    rows = [ln for ln in res.output.splitlines() if ln.lstrip("│ ").startswith("-")]
    assert rows and "<bool>" not in res.output, res.output
    help_row = next(ln for ln in rows if "--help" in ln)
    assert "<" not in help_row and "Show this message" in help_row
    if page == ["stat"]:  # an option that takes a value keeps its placeholder
        assert "<int" in next(ln for ln in rows if "--runs" in ln)
