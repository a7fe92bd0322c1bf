"""Profiles from fixture files: parsing, shares, folded stacks, diffs, flame graphs and import,
independent of the machine's perf (no recording here)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from perflab.cli.profile import register
from perflab.errors import PerflabError
from perflab.profiles import diff_profiles, top_symbols
from perflab.profiles.analysis import SymbolStat, aggregate, diff_symbols, folded_text, parse_folded
from perflab.profiles.flamegraph import diff_flame_graph, find_tool, flame_graph
from perflab.profiles.perfscript import parse_perf_script
from perflab.profiles.record import import_perf_script, symbol_warnings
from perflab.profiles.store import load_profile
from perflab.storage import Store

pytestmark = pytest.mark.unit

FIX = Path(__file__).parents[1] / "fixtures" / "profiles"


def _parse(name: str) -> list:
    return list(parse_perf_script((FIX / name).read_text().splitlines()))


def _shares(name: str) -> dict[str, float]:
    return {s.symbol: s.self_share for s in aggregate(_parse(name)).symbols}


def test_handwritten_cycles_profile_weights_samples_by_period() -> None:
    samples = _parse("cycles-handwritten.script")
    assert len(samples) == 5
    assert {s.event for s in samples} == {"cycles:u"}
    assert samples[2].comm == "app worker" and samples[2].tid == 102
    cpp = "compute_checksum(std::vector<int, std::allocator<int> > const&)"
    assert samples[0].frames[0].symbol == cpp
    assert samples[0].frames[0].module == "/opt/app/bin/app"
    agg = aggregate(samples)
    assert agg.weight == 11000
    by = {s.symbol: s for s in agg.symbols}
    assert by[cpp].self_weight == 3000 and by[cpp].total_weight == 4000
    assert by["__memmove_avx_unaligned_erms"].self_share == pytest.approx(1000 / 11000)
    assert by["clear_page_erms"].module == "[kernel.kallsyms]"
    assert by["main"].self_share == 0 and by["main"].total_share == pytest.approx(1.0)
    # recursion counts once per sample in the total share
    assert by["fib"].total_weight == 1000 and by["fib"].self_weight == 1000
    # the JIT frame has no symbol: shown by address, flagged unresolved
    jit = by["unknown+0x7f99aa001234"]
    assert not jit.resolved and jit.self_weight == 4000
    assert agg.symbols[0] is jit  # largest self weight first
    assert agg.unresolved_by_module == {"[unknown]": pytest.approx(4000 / 11000)}
    (warning,) = symbol_warnings(agg)
    assert "36% of the samples" in warning and "JIT" in warning


def test_handwritten_folded_stacks_root_first() -> None:
    folded = aggregate(_parse("cycles-handwritten.script")).folded
    assert folded["__libc_start_call_main;main;fib;fib;fib"] == 1000
    assert folded["__libc_start_call_main;main;run_jit;[unknown]"] == 4000
    text = folded_text(folded)
    assert parse_folded(text) == folded
    assert all(line.rsplit(" ", 1)[1].isdigit() for line in text.splitlines())


def test_recorded_fp_fixture_has_the_designed_shares() -> None:
    # shares.c ran with units 5/3/2: alpha 50%, beta 30%, gamma 20% of the timed region
    text = (FIX / "cpu-clock-fp.script").read_text()
    samples = _parse("cpu-clock-fp.script")
    assert len(samples) == text.count("cpu-clock:")
    assert all(s.frames for s in samples)
    shares = _shares("cpu-clock-fp.script")
    assert shares["work_alpha"] == pytest.approx(0.50, abs=0.05)
    assert shares["work_beta"] == pytest.approx(0.30, abs=0.05)
    assert shares["work_gamma"] == pytest.approx(0.20, abs=0.05)
    assert "startup" not in shares  # outside the timed region


def test_no_call_graph_fixture_reads_the_frame_on_the_header_line() -> None:
    samples = _parse("cpu-clock-nocg.script")
    assert samples and all(len(s.frames) == 1 for s in samples)
    shares = _shares("cpu-clock-nocg.script")
    assert shares["work_alpha"] == pytest.approx(0.50, abs=0.07)
    assert shares["work_gamma"] == pytest.approx(0.20, abs=0.07)


def test_dwarf_fixture_keeps_callers_and_inlined_frames() -> None:
    agg = aggregate(_parse("cpu-clock-dwarf.script"))
    by = {s.symbol: s for s in agg.symbols}
    # DWARF unwinding sees main, which frame pointers lose under a leaf function
    assert by["main"].total_share > 0.9
    inlined = [s for s in agg.symbols if s.symbol.endswith("(inlined)")]
    assert inlined and all(s.module.endswith("libc.so.6") for s in inlined)


def test_default_perf_script_layout_pid_only_and_symbol_offsets() -> None:
    samples = _parse("default-format.script")
    assert samples
    assert samples[0].pid == samples[0].tid
    names = {f.symbol for s in samples for f in s.frames}
    assert "__libc_start_call_main" in names
    assert not any("+0x" in n for n in names)


def test_stripped_binary_is_shown_by_address_with_one_warning() -> None:
    agg = aggregate(_parse("stripped-fp.script"))
    top = agg.symbols[0]
    assert not top.resolved and top.symbol.startswith("shares-s+0x")
    warnings = symbol_warnings(agg)
    assert len(warnings) == 1
    assert "shares-s" in warnings[0] and "no symbols" in warnings[0]


# (not the hand-written C++ one: inferno cuts argument lists, perflab keeps them as perf does)
@pytest.mark.system
@pytest.mark.parametrize("fixture", ["cpu-clock-fp.script", "stripped-fp.script"])
def test_our_folded_stacks_match_inferno_collapse_perf(fixture: str) -> None:
    """The hand-written parser against inferno's own perf collapser, on the same fixture."""
    tool = find_tool("inferno-collapse-perf")
    assert tool, "run make flamegraphs (make test does)"
    out = subprocess.run([tool, str(FIX / fixture)], capture_output=True,
                         text=True, check=True).stdout
    theirs: Counter[str] = Counter()
    for stack, n in parse_folded(out).items():
        theirs[stack.split(";", 1)[1]] += n  # inferno puts the command name at the root
    ours = aggregate(_parse(fixture)).folded
    assert len(ours) >= 3
    assert dict(ours) == dict(theirs)


def test_diff_symbols_sorted_by_absolute_delta() -> None:
    def st(name: str, share: float) -> SymbolStat:
        return SymbolStat(name, "/bin/x", share, share, share, share)

    a = [st("f", 0.5), st("g", 0.3), st("h", 0.2)]
    b = [st("f", 0.385), st("g", 0.462), st("h", 0.153), st("new", 0.0)]
    rows = diff_symbols(a, b)
    assert [r.symbol for r in rows[:3]] == ["g", "f", "h"]
    assert rows[0].delta == pytest.approx(0.162) and rows[1].delta < 0


@pytest.mark.system
def test_flame_graph_svg_is_xml_with_the_symbols(tmp_path: Path) -> None:
    folded = folded_text(aggregate(_parse("cpu-clock-fp.script")).folded)
    svg = flame_graph(folded, tmp_path / "f.svg", title="shares <test>")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = svg.read_text()
    for name in ("work_alpha", "work_beta", "work_gamma"):
        assert name in text
    assert "shares &lt;test&gt;" in text


@pytest.mark.system
def test_differential_flame_graph_is_xml(tmp_path: Path) -> None:
    a, b = tmp_path / "a.folded", tmp_path / "b.folded"
    a.write_text("main;f 50\nmain;g 50\n")
    b.write_text("main;f 80\nmain;g 20\n")
    svg = diff_flame_graph(a, b, tmp_path / "d.svg", title="diff")
    ET.parse(svg)
    assert "main" in svg.read_text() and "f" in svg.read_text()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db" / "results.sqlite")


HERE = {"hostname": "lab1", "cpu_model": "X", "cpu_count": 2, "kernel": "6.1", "arch": "x86_64"}


@pytest.mark.system
def test_import_stores_profile_with_data_files(store: Store) -> None:
    pid = import_perf_script(FIX / "cpu-clock-fp.script", store=store, machine=HERE)
    rec = load_profile(store, pid)
    assert rec.sampler == "cpu-clock" and rec.summary["samples"] > 100
    assert rec.data_path.parent == Path(store.location).parent / "profiles"
    assert rec.folded_path.is_file() and rec.svg_path.is_file()
    top = top_symbols(pid, store, limit=3)
    assert [s.symbol for s in top] == ["work_alpha", "work_beta", "work_gamma"]
    by_total = top_symbols(pid, store, limit=1, sort="total")
    assert by_total[0].symbol == "__libc_start_call_main"


@pytest.mark.system
def test_diff_warns_when_machines_differ(store: Store) -> None:
    a = import_perf_script(FIX / "cpu-clock-fp.script", store=store, machine=HERE)
    b = import_perf_script(FIX / "cpu-clock-nocg.script", store=store, call_graph="none",
                           machine={**HERE, "hostname": "lab2", "cpu_model": "Y"})
    d = diff_profiles(a, b, store)
    assert any("different machines" in w and "lab1 vs lab2" in w for w in d.warnings)
    assert any("call-graph" in w for w in d.warnings)
    assert d.svg is not None and d.svg.is_file()
    same = diff_profiles(a, a, store, flame_graph=False)
    assert same.warnings == [] and all(abs(r.delta) < 1e-12 for r in same.rows)


@pytest.mark.system
def test_bad_inputs_give_one_line_errors(store: Store, tmp_path: Path) -> None:
    with pytest.raises(PerflabError, match="no profile with id 99"):
        load_profile(store, 99)
    empty = tmp_path / "empty.script"
    empty.write_text("# nothing\n")
    with pytest.raises(PerflabError, match="no perf script samples"):
        import_perf_script(empty, store=store)
    with pytest.raises(PerflabError, match="cannot read"):
        import_perf_script(tmp_path / "missing.script", store=store)
    with pytest.raises(PerflabError, match="unknown sort"):
        pid = import_perf_script(FIX / "cycles-handwritten.script", store=store)
        top_symbols(pid, store, sort="size")


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    register(app)
    return app


@pytest.mark.system
def test_cli_import_show_list_diff(store: Store) -> None:
    runner = CliRunner()
    db = ["--db", store.location]
    app = _app()
    r = runner.invoke(app, ["profile", "import", str(FIX / "cycles-handwritten.script"), *db])
    assert r.exit_code == 0, r.output
    assert "compute_checksum" in r.output and "[kernel.kallsyms]" in r.output
    r = runner.invoke(app, ["profile", "import", str(FIX / "cpu-clock-fp.script"), *db])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["profile", "list", *db])
    assert r.exit_code == 0 and "cycles:u" in r.output
    r = runner.invoke(app, ["profile", "show", "2", "--top", "2", *db])
    assert r.exit_code == 0 and "work_beta" in r.output and "work_gamma" not in r.output
    r = runner.invoke(app, ["profile", "diff", "1", "2", "-n", "5", *db])
    assert r.exit_code == 0, r.output
    assert "work_alpha" in r.output and "differential flame graph" in r.output
    r = runner.invoke(app, ["profile", "show", "7", *db])
    assert r.exit_code != 0 and isinstance(r.exception, PerflabError)
    # anything that is not a verb is the command to record
    r = runner.invoke(app, ["profile", "--param", "depth=1", "./prog"])
    assert isinstance(r.exception, PerflabError) and "--param needs --workload" in str(
        r.exception.line())
